"""The torch reference of ``fused_recurrent_gated_delta_rule`` against the float64 oracle and against a
hand-written single-slot loop; the CLI's explain / verify / bench on the CPU; the lazy export."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import torch
from click.testing import CliRunner

import atrex
from atrex.cli import main
from atrex.inputs import gdn_decode_inputs
from atrex.reference.oracle import gdn_decode_oracle, rel_rmse
from atrex.validation.cases import cases

CASES = [
    dict(seq_lens=[1] * 5, padded=2),
    dict(seq_lens=[3, 1, 2, 4], mtp=True, padded=1, pool="bf16"),
    dict(seq_lens=[2, 0, 3], mtp=True, inplace=False),
    dict(batch=3, seq_len=2, state_v_first=False, dtype=torch.float16, beta=False),
    dict(batch=2, seq_len=3, mtp=True, inplace=False, l2norm=False),
    dict(seq_lens=[1, 1], num_heads=1, num_v_heads=8),
]


@pytest.mark.parametrize("case", CASES, ids=[str(i) for i in range(len(CASES))])
def test_reference_matches_float64_oracle(case):
    p = dict(num_heads=2, num_v_heads=4, head_k_dim=16, head_v_dim=32, seed=5)
    p.update(case)
    kw = gdn_decode_inputs(p.pop("seq_lens", None), **p)
    ref_o, ref_s = gdn_decode_oracle(**kw)
    o, s = atrex.fused_recurrent_gated_delta_rule(**kw)
    assert rel_rmse(ref_o, o) < 5e-3
    assert rel_rmse(ref_s, s) < (5e-3 if kw["initial_state"].dtype == torch.bfloat16 else 1e-5)


def test_single_decode_step_by_hand():
    """One token, one head, explicit formulas: S' = e^g S + k (beta (v - S^T k))^T, o = scale S'^T q."""
    torch.manual_seed(0)
    K, V = 4, 3
    q, k, v = torch.randn(1, 1, 1, K), torch.randn(1, 1, 1, K), torch.randn(1, 1, 1, V)
    g, beta = torch.tensor([[[-0.3]]]), torch.tensor([[[0.7]]])
    pool = torch.randn(3, 1, K, V)
    S = pool[2, 0].double().clone()
    kk, qq, vv = k[0, 0, 0].double(), q[0, 0, 0].double(), v[0, 0, 0].double()
    S = torch.exp(torch.tensor(-0.3, dtype=torch.float64)) * S
    S = S + torch.outer(kk, 0.7 * (vv - S.t() @ kk))
    want_o = 0.5 * (S.t() @ qq)
    kw = dict(q=q, k=k, v=v, g=g, beta=beta, scale=0.5, initial_state=pool.clone(),
              ssm_state_indices=torch.tensor([2], dtype=torch.int32), state_v_first=False)
    o, final = atrex.fused_recurrent_gated_delta_rule(**kw)
    torch.testing.assert_close(o[0, 0, 0].double(), want_o, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(final[2, 0].double(), S, rtol=1e-5, atol=1e-6)
    assert torch.equal(final[:2], pool[:2])


def test_mtp_writes_every_token_state_and_starts_from_accepted_slot():
    kw = gdn_decode_inputs([3], num_heads=1, num_v_heads=1, head_k_dim=8, head_v_dim=8, mtp=True, seed=7)
    kw["num_accepted_tokens"] = torch.tensor([2], dtype=torch.int32)
    row = kw["ssm_state_indices"][0].tolist()
    pool0 = kw["initial_state"].clone()
    _, pool = atrex.fused_recurrent_gated_delta_rule(**kw)
    # token 0 from slot row[1]: the same as a one-token step from that slot
    one = {**kw, "q": kw["q"][:, :1], "k": kw["k"][:, :1], "v": kw["v"][:, :1], "g": kw["g"][:, :1],
           "beta": kw["beta"][:, :1], "cu_seqlens": torch.tensor([0, 1], dtype=torch.int32),
           "ssm_state_indices": torch.tensor([row[1]], dtype=torch.int32), "num_accepted_tokens": None,
           "initial_state": pool0.clone()}
    _, pool1 = atrex.fused_recurrent_gated_delta_rule(**one)
    torch.testing.assert_close(pool[row[0]], pool1[row[1]])
    assert not torch.equal(pool[row[2]], pool0[row[2]])


def test_cli_explain_verify_bench_on_cpu(tmp_path):
    r = CliRunner().invoke(main, ["explain", "gdn_decode", "--device", "cpu", "--batch", "4", "--tokens", "2",
                                  "--heads", "2", "--v-heads", "4", "--head-dim", "32", "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["chosen"] == "core.reference"
    r = CliRunner().invoke(main, ["verify", "gdn_decode", "--device", "cpu", "--size", "small"])
    assert r.exit_code == 0, r.output
    assert " 0 failed" in r.output and "sweep/mtp" in r.output
    r = CliRunner().invoke(main, ["bench", "run", "gdn_decode", "--device", "cpu", "--match", "no-l2norm",
                                  "--out", str(tmp_path), "--history", str(tmp_path / "h.jsonl"), "--no-progress"])
    assert r.exit_code == 0, r.output
    assert "core.reference" in (tmp_path / "bench_gdn_decode.md").read_text()


def test_case_table_has_the_perf_matrix():
    names = {c.name for c in cases("gdn_decode", "perf")}
    assert names == {f"perf/b{b}-t{t}-H16-HV32" for b in (1, 8, 32, 64, 128, 256) for t in (1, 2, 4)}
    assert all(c.flops() > 0 and c.bytes() > 0 for c in cases("gdn_decode"))


def test_lazy_export_imports_no_torch():
    script = ("import sys, atrex; assert 'torch' not in sys.modules; "
              "assert 'fused_recurrent_gated_delta_rule' in dir(atrex); "
              "assert 'can_use_fused_recurrent_gated_delta_rule' in atrex.__all__; "
              "assert 'torch' not in sys.modules; f = atrex.explain_fused_recurrent_gated_delta_rule; "
              "print(f.__name__)")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "explain_fused_recurrent_gated_delta_rule"
