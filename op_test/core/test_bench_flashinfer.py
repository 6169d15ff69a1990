"""The FlashInfer baselines' argument mapping on CPU: each maker runs against a stand-in package
(op_test/core/fake_flashinfer, written from FlashInfer 0.7.2's documented conventions, computing with ATREX's
float64 oracles), and its output goes through the bench's own check against the reference. Also the
conversions alone (vLLM block table -> CSR pages, decode gates) and the skip reasons."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from atrex.inputs import attn_inputs, gdn_decode_inputs, gdn_inputs
from atrex.validation import baselines as B
from atrex.validation import baselines_flashinfer as FI
from atrex.validation.bench import Reference, baseline_entries, measure

CPU = torch.device("cpu")
SM90 = SimpleNamespace(family="nvidia", arch="sm90", id="nvidia/sm90")
FAKE = Path(__file__).resolve().parent / "fake_flashinfer"


@pytest.fixture(autouse=True)
def quick_timing(monkeypatch):
    """These tests are about the mapping and the check: one call stands in for the timing."""
    from atrex.validation import bench

    monkeypatch.setattr(bench, "time_ms", lambda fn, device, graph=False: (fn(), 1.0)[1])


@pytest.fixture
def fake_flashinfer(monkeypatch):
    monkeypatch.syspath_prepend(str(FAKE))
    importlib.invalidate_caches()
    yield
    for name in [m for m in sys.modules if m == "flashinfer" or m.startswith("flashinfer.")]:
        del sys.modules[name]


def rows_for(op, kw, makers):
    """The bench's own path: make each baseline, check it against the reference, time it (CPU)."""
    entries, rows = baseline_entries(op, kw, SM90, Reference(op, kw, CPU), makers, graph=False)
    return {r["contender"]: r for r in measure(entries, CPU, graph=False) + rows}


def test_paged_kv_csr_matches_vllm_block_table():
    table = torch.tensor([[7, 3, -1], [5, -1, -1], [2, 9, 4]], dtype=torch.int32)
    indptr, indices, last = FI.paged_kv_csr(table, torch.tensor([20, 16, 33], dtype=torch.int32), 16)
    assert indptr.tolist() == [0, 2, 3, 6] and indices.tolist() == [7, 3, 5, 2, 9, 4] and last.tolist() == [4, 16, 1]
    assert indptr.dtype == indices.dtype == last.dtype == torch.int32


def test_decode_gates_invert_flashinfers_formula():
    g = torch.nn.functional.logsigmoid(torch.randn(64))
    beta = torch.sigmoid(torch.randn(64))
    a, b, g_eff, beta_eff = FI.decode_gates(g, beta, torch.bfloat16)
    assert a.dtype == b.dtype == torch.bfloat16
    assert torch.allclose(g_eff, -torch.nn.functional.softplus(a.float()))  # what FlashInfer computes from a
    assert torch.allclose(g_eff, g, rtol=2e-2, atol=1e-3) and torch.allclose(beta_eff, beta, atol=1e-2)
    assert torch.equal(FI.decode_gates(g, None, torch.bfloat16)[3], torch.ones(64))  # beta None: ones


@pytest.mark.parametrize("name,kw", [
    ("decode-q1", dict(q_lens=[1, 1, 1], k_lens=[37, 300, 16])),
    ("mtp-q3", dict(q_lens=[3, 3], k_lens=[40, 19])),
    ("prefill-window-softcap", dict(q_lens=[9, 3], k_lens=[40, 3], window_size=[7, 0], softcap=30.0)),
    ("sinks-lse", dict(q_lens=[2, 5], k_lens=[33, 5], sinks=True, return_lse=True)),
])
def test_paged_attention_rows_match_the_reference(fake_flashinfer, name, kw):
    q_lens, k_lens = kw.pop("q_lens"), kw.pop("k_lens")
    call = attn_inputs(q_lens, k_lens, num_heads_q=8, num_heads_k=2, head_dim=64, page_size=16, **kw)
    rows = rows_for("flash_attn", call, FI.ATTENTION)
    uniform = len(set(q_lens)) == 1
    expect_timed = {"flashinfer_paged_fa3", "flashinfer_paged"} | ({"flashinfer_decode_tc"} if uniform else set())
    if q_lens[0] == 1 and uniform:
        expect_timed.add("flashinfer_decode")
    for label in expect_timed:
        assert "ms" in rows[label], (label, rows[label])
    assert "skipped" in rows["flashinfer_ragged"] and "skipped" in rows["flashinfer_ragged_fa3"]


def test_ragged_attention_rows_match_the_reference(fake_flashinfer):
    call = attn_inputs([37, 1, 64], [37, 1, 64], num_heads_q=4, num_heads_k=4, head_dim=64, page_size=None,
                       return_lse=True)
    rows = rows_for("flash_attn", call, FI.ATTENTION)
    assert "ms" in rows["flashinfer_ragged"] and "ms" in rows["flashinfer_ragged_fa3"]
    assert rows["flashinfer_paged"]["skipped"].startswith("non-paged")


@pytest.mark.parametrize("v_first,state", [(True, None), (False, "fp32")])
def test_chunk_gdn_row_matches_the_reference(fake_flashinfer, v_first, state):
    call = gdn_inputs([5, 70, 0], num_heads=1, num_v_heads=2, head_k_dim=128, head_v_dim=128,
                      initial_state=state, state_v_first=v_first)
    rows = rows_for("chunk_gdn", call, {"flashinfer": FI.chunk_gdn})
    assert "ms" in rows["flashinfer"], rows


def test_chunk_gdn_fixed_length_batch(fake_flashinfer):
    call = gdn_inputs(None, batch=2, seq_len=40, num_heads=2, num_v_heads=2, head_k_dim=128, head_v_dim=128)
    assert "ms" in rows_for("chunk_gdn", call, {"flashinfer": FI.chunk_gdn})["flashinfer"]


@pytest.mark.parametrize("extra", [dict(seq_lens=[1] * 4, padded=1), dict(seq_lens=[3] * 3, mtp=True),
                                   dict(seq_lens=[2] * 2, mtp=True, beta=False)])
def test_gdn_decode_row_matches_the_reference_and_updates_its_pool(fake_flashinfer, extra):
    call = gdn_decode_inputs(num_heads=1, num_v_heads=2, head_k_dim=128, head_v_dim=128, **extra)
    rows = rows_for("gdn_decode", call, {"flashinfer": FI.gdn_decode})
    assert "ms" in rows["flashinfer"], rows
    pool = call["initial_state"].clone()
    made = FI.gdn_decode(call, SM90)
    made.fn()
    assert torch.equal(call["initial_state"], pool)  # the case's pool is never the baseline's


def test_a_wrong_baseline_is_reported_with_its_error_and_not_timed(fake_flashinfer):
    call = gdn_inputs([5, 70], num_heads=1, num_v_heads=2, head_k_dim=128, head_v_dim=128, state_v_first=True)

    def off_by_one(kw, target, graph=False):
        made = FI.chunk_gdn(kw, target)
        return B.Baseline(lambda: tuple(x + 1 for x in made.fn()), made.result)

    rows = rows_for("chunk_gdn", call, {"flashinfer_wrong": off_by_one})
    assert "ms" not in rows["flashinfer_wrong"] and rows["flashinfer_wrong"]["wrong"].startswith("rmse(o)")


def test_skip_reasons(fake_flashinfer):
    cpu = SimpleNamespace(family="cpu", arch="cpu", id="cpu")
    small = gdn_inputs([5], num_heads=1, num_v_heads=2, head_k_dim=64, head_v_dim=64)
    assert FI.chunk_gdn(small, cpu).startswith("needs an NVIDIA GPU")
    assert "K = V = 128" in FI.chunk_gdn(small, SM90)
    gate = gdn_inputs([5], num_heads=1, num_v_heads=2, head_k_dim=128, head_v_dim=128)
    assert "use_gate_in_kernel" in FI.chunk_gdn({**gate, "use_gate_in_kernel": True}, SM90)
    mixed = gdn_decode_inputs([1, 2], num_heads=1, num_v_heads=2, head_k_dim=128, head_v_dim=128, mtp=True)
    assert "sequence lengths [1, 2]" in FI.gdn_decode(mixed, SM90)
    fp8 = attn_inputs([1, 2], [40, 70], num_heads_q=8, num_heads_k=1, head_dim=128, dtype=torch.float8_e4m3fn)
    assert "fp8" in FI.paged(fp8, SM90)


def test_flashinfer_not_installed_is_a_one_line_skip(monkeypatch):
    monkeypatch.setattr(B, "available", lambda module: module != "flashinfer")
    call = attn_inputs([1], [20], num_heads_q=8, num_heads_k=2, head_dim=64)
    for make in [*FI.ATTENTION.values(), FI.chunk_gdn, FI.gdn_decode]:
        reason = make(call, SM90)
        assert isinstance(reason, B.Skip) and reason == "flashinfer (flashinfer-python) is not installed"
