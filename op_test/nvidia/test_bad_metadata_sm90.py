"""Bad metadata on an SM90 GPU: with the value checks off (the default on an accelerator), no metadata value makes
an ATREX kernel read or write outside its tensors; with ``ATREX_CHECK_VALUES=1`` the same call raises
``AtrexValueError`` naming the argument before any launch, ``out`` untouched.

Every case is a valid call with one metadata tensor corrupted (block ids past the cache or negative, ``seqused_k``
past the block table, ``cu_seqlens`` past the tokens or out of order, state slots past the pool, accepted-token
counts out of range). In process, writes outside the outputs are caught by canary regions around ``out`` and the
state pool; ``test_bad_metadata_under_compute_sanitizer`` reruns the cases under ``compute-sanitizer`` memcheck,
which also sees out-of-bounds reads. The outputs of bad metadata are unspecified; only memory safety is tested.
"""

import os
import shutil
import subprocess
import sys

import pytest
import torch

from atrex.errors import AtrexValueError

ON_SM90 = torch.cuda.is_available() and torch.cuda.get_device_capability() == (9, 0)
pytestmark = pytest.mark.skipif(not ON_SM90, reason="needs a CUDA device of capability (9, 0) (sm90)")

CANARY = 4096  # elements of sentinel before and after each guarded buffer
SENTINEL = 1234.5


def _guarded(shape, dtype, fill=None):
    """(view, check): a tensor of ``shape`` inside a larger buffer whose margins hold SENTINEL; ``check()`` asserts
    the margins are unchanged."""
    n = 1
    for s in shape:
        n *= s
    buf = torch.full((n + 2 * CANARY,), SENTINEL, dtype=dtype, device="cuda")
    view = buf[CANARY:CANARY + n].view(shape)
    if fill is not None:
        view.copy_(fill)
    else:
        view.zero_()
    before = torch.cat([buf[:CANARY], buf[CANARY + n:]]).clone()  # SENTINEL as the dtype rounds it

    def check():
        torch.cuda.synchronize()
        margins = torch.cat([buf[:CANARY], buf[CANARY + n:]])
        assert torch.equal(margins, before), "a kernel wrote outside its output"
    return view, check


# ---- attention ------------------------------------------------------------------------------------------------

ATTN_IMPLS = ("nvidia.decode_splitkv", "nvidia.paged_prefill_sm90")


def _attn_kw(impl):
    from atrex.inputs import attn_inputs

    q_lens = [1, 1, 1] if impl == "nvidia.decode_splitkv" else [5, 40, 1]
    kw = attn_inputs(q_lens, [300, 45, 17], num_heads_q=8, num_heads_k=2, head_dim=128, page_size=16,
                     dtype=torch.bfloat16, causal=True, return_lse=True, seed=5)
    return {n: (x.cuda() if isinstance(x, torch.Tensor) else x) for n, x in kw.items()}


def _bad_attn(kw, what):
    kw = dict(kw)
    nb = kw["k"].shape[0]
    bt, sk, cu = kw["block_table"].clone(), kw["seqused_k"].clone(), kw["cu_seqlens_q"].clone()
    if what == "block_past_cache":
        bt[0, :3] = nb + 10_000_000
    elif what == "block_negative":
        bt[0, 1], bt[1, 0] = -1, -(2 ** 31)
    elif what == "seqused_past_table":
        sk[0] = bt.shape[1] * kw["k"].shape[1] + 5000
    elif what == "seqused_negative":
        sk[1] = -100
    elif what == "cu_past_tokens":
        cu[-1] = cu[-1] + 1000
    elif what == "cu_out_of_order":  # decreasing, every difference within max_seqlen_q
        cu[1], cu[2] = cu[-1] - 16, cu[-1] - 26
    elif what == "cu_negative":
        cu[1] = -50
    kw.update(block_table=bt, seqused_k=sk, cu_seqlens_q=cu)
    return kw


ATTN_BAD = ("block_past_cache", "block_negative", "seqused_past_table", "seqused_negative", "cu_past_tokens",
            "cu_out_of_order", "cu_negative")
ATTN_ARG = {"block": "block_table", "seqused": "seqused_k", "cu": "cu_seqlens_q"}


def _forced(monkeypatch, suffix, impl):
    from atrex import env
    from atrex.dispatch.registry import get_registry

    if impl not in [i.id for i in get_registry().all_candidates(*impl_op(impl))]:
        pytest.skip(f"{impl} is not registered in this build")
    monkeypatch.setenv(f"ATREX_IMPL_{suffix}", impl)
    env.reload()


def impl_op(impl):
    op = {"nvidia.decode_splitkv": "flash_attn_varlen", "nvidia.paged_prefill_sm90": "flash_attn_varlen",
          "nvidia.gdn_sm90": "chunk_gated_delta_rule", "nvidia.gdn_decode_sm90": "fused_recurrent_gated_delta_rule"}
    return op[impl], "nvidia/sm90"


@pytest.fixture(autouse=True)
def _reload_env():
    yield
    from atrex import env
    env.reload()


@pytest.mark.parametrize("what", ATTN_BAD)
@pytest.mark.parametrize("impl", ATTN_IMPLS)
def test_attention_bad_metadata_stays_in_bounds(impl, what, monkeypatch):
    import atrex

    _forced(monkeypatch, "FLASH_ATTN_VARLEN", impl)
    kw = _bad_attn(_attn_kw(impl), what)
    out, check = _guarded((kw["q"].shape[0], *kw["q"].shape[1:]), torch.bfloat16)
    atrex.flash_attn_varlen_func(**dict(kw, out=out))
    check()


@pytest.mark.parametrize("what", ATTN_BAD)
def test_attention_bad_metadata_typed_error_with_value_checks(what, monkeypatch):
    import atrex
    from atrex import env

    monkeypatch.setenv("ATREX_CHECK_VALUES", "1")
    env.reload()
    kw = _bad_attn(_attn_kw("nvidia.paged_prefill_sm90"), what)
    out = torch.full((kw["q"].shape[0], *kw["q"].shape[1:]), 7.0, dtype=torch.bfloat16, device="cuda")
    with pytest.raises(AtrexValueError) as err:
        atrex.flash_attn_varlen_func(**dict(kw, out=out))
    assert err.value.argument == ATTN_ARG[what.split("_")[0]]
    assert bool((out == 7.0).all())


# ---- Gated DeltaNet decode (state pool) ------------------------------------------------------------------------

GDN_DECODE_BAD = ("cu_past_tokens", "cu_out_of_order", "slot_past_pool", "slot_huge_negative", "accepted_zero",
                  "accepted_past_tmax")


def _gdn_decode_kw(what):
    from atrex.inputs import gdn_decode_inputs

    mtp = what.startswith("accepted")
    kw = gdn_decode_inputs([2, 1, 3], mtp=mtp, num_heads=2, num_v_heads=4, head_k_dim=64, head_v_dim=64, seed=2)
    kw = {n: (x.cuda() if isinstance(x, torch.Tensor) else x) for n, x in kw.items()}
    cu, idx = kw["cu_seqlens"].clone(), kw["ssm_state_indices"].clone()
    if what == "cu_past_tokens":
        cu[-1] += 500
    elif what == "cu_out_of_order":
        cu[1], cu[2] = cu[2] + 4, cu[1]
    elif what == "slot_past_pool":
        idx.view(-1)[0] = kw["initial_state"].shape[0] + 100_000
    elif what == "slot_huge_negative":
        idx.view(-1)[0] = -(2 ** 31)
    elif what == "accepted_zero":
        kw["num_accepted_tokens"] = torch.zeros_like(kw["num_accepted_tokens"])
    elif what == "accepted_past_tmax":
        kw["num_accepted_tokens"] = kw["num_accepted_tokens"] + 1000
    kw.update(cu_seqlens=cu, ssm_state_indices=idx)
    return kw


@pytest.mark.parametrize("what", GDN_DECODE_BAD)
def test_gdn_decode_bad_metadata_stays_in_bounds(what, monkeypatch):
    import atrex

    _forced(monkeypatch, "FUSED_RECURRENT_GATED_DELTA_RULE", "nvidia.gdn_decode_sm90")
    kw = _gdn_decode_kw(what)
    pool, check = _guarded(tuple(kw["initial_state"].shape), kw["initial_state"].dtype, kw["initial_state"])
    atrex.fused_recurrent_gated_delta_rule(**dict(kw, initial_state=pool))
    check()


# ---- Gated DeltaNet chunked prefill -----------------------------------------------------------------------------

GDN_BAD = ("cu_past_tokens", "cu_out_of_order", "cu_negative", "cu_first_nonzero")


def _gdn_kw(what, lens):
    from atrex.inputs import gdn_inputs

    kw = gdn_inputs(lens, num_heads=4, num_v_heads=8, head_k_dim=128, head_v_dim=128, seed=3)
    kw = {n: (x.cuda() if isinstance(x, torch.Tensor) else x) for n, x in kw.items()}
    cu = kw["cu_seqlens"].clone()
    if what == "cu_past_tokens":
        cu[-1] += 3000
    elif what == "cu_out_of_order":
        cu[1], cu[2] = cu[2] + 100, cu[1]
    elif what == "cu_negative":
        cu[1] = -700
    elif what == "cu_first_nonzero":
        cu[0] = 37
    kw["cu_seqlens"] = cu
    kw.pop("cu_seqlens_cpu", None)
    return kw


@pytest.mark.parametrize("lens", [[100, 300, 64, 1], [5000, 200]], ids=["short", "long"])
@pytest.mark.parametrize("what", GDN_BAD)
def test_chunk_gdn_bad_metadata_stays_in_bounds(what, lens, monkeypatch):
    import atrex

    _forced(monkeypatch, "CHUNK_GATED_DELTA_RULE", "nvidia.gdn_sm90")
    kw = _gdn_kw(what, lens)
    atrex.chunk_gated_delta_rule(**kw)
    torch.cuda.synchronize()


@pytest.mark.parametrize("what", GDN_BAD)
def test_chunk_gdn_bad_metadata_typed_error_with_value_checks(what, monkeypatch):
    import atrex
    from atrex import env

    monkeypatch.setenv("ATREX_CHECK_VALUES", "1")
    env.reload()
    with pytest.raises(AtrexValueError) as err:
        atrex.chunk_gated_delta_rule(**_gdn_kw(what, [100, 300, 64, 1]))
    assert err.value.argument == "cu_seqlens"


# ---- the same cases under compute-sanitizer -----------------------------------------------------------------

@pytest.mark.skipif(os.environ.get("ATREX_UNDER_SANITIZER") == "1", reason="already under compute-sanitizer")
def test_bad_metadata_under_compute_sanitizer(tmp_path):
    """memcheck over every in-bounds test above, in a child process; any out-of-bounds access fails it."""
    exe = shutil.which("compute-sanitizer") or (
        "/usr/local/cuda/bin/compute-sanitizer" if os.path.exists("/usr/local/cuda/bin/compute-sanitizer") else None)
    if exe is None:
        pytest.skip("compute-sanitizer is not installed")
    env = dict(os.environ, ATREX_UNDER_SANITIZER="1")
    cmd = [exe, "--tool", "memcheck", "--error-exitcode", "97", "--print-limit", "20", sys.executable, "-m",
           "pytest", __file__, "-q", "-p", "no:cacheprovider", "-k", "stays_in_bounds", "-x"]
    res = subprocess.run(cmd, env=env, cwd=str(tmp_path), capture_output=True, text=True, timeout=900)
    tail = (res.stdout + res.stderr)[-6000:]
    print(tail)
    assert res.returncode == 0, f"compute-sanitizer rc {res.returncode}:\n{tail}"
    assert "ERROR SUMMARY: 0 errors" in res.stdout + res.stderr
