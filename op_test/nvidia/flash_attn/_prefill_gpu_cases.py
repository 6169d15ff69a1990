"""Target-tier cases of ``nvidia.paged_prefill_sm90`` (ATREX's paged varlen attention for any query length,
SM90), imported by ``test_flash_attn_sm90.py``. Every test skips unless a CUDA device of capability (9, 0)
is present; all but the routing test force the implementation with ``ATREX_IMPL_FLASH_ATTN_VARLEN``.

The matrix is vLLM's ``test_flash_attn_varlen_func`` with paging: chunked prefill of 1 to 129 query tokens
per sequence against 18 to 2011 cached tokens, page 16 (and 1, 32, 64, 128, 80), heads 4/4 and 8/2, head
dims 40 to 256, window 256, softcap 50, fp8 with [num_seqs, num_kv_heads] descales (unit, non-unit, stride
0), caches of 2048 and 32768 blocks; plus NaN / Inf page tails, graph capture and replay with changed
lengths, and the kernel name in the profiler. Inputs: ``_prefill_cases.build``.

Oracle: the core float64 oracle (``testlib.attn_oracle``) on CPU copies of the same inputs (fp8: the same
fp8 inputs with their descales), compared by ``testlib.assert_attn_matches`` (NaN anywhere fails, the
elementwise tolerances of docs/flash_attn_varlen_func.md, per-row relative error RMS <= 5e-3 and max <=
2e-2, rows with no visible key exactly 0, LSE abs 2e-3). Graph replay vs eager and run vs run are bitwise.
"""

import contextlib
import os

import pytest
import torch
from _prefill_cases import BF16, F16, FP8, build

from testlib import assert_attn_matches, attn_oracle

IMPL = "nvidia.paged_prefill_sm90"
ENV = "ATREX_IMPL_FLASH_ATTN_VARLEN"


def _on_sm90() -> bool:
    return torch.cuda.is_available() and torch.cuda.get_device_capability() == (9, 0)


sm90_only = pytest.mark.skipif(not _on_sm90(), reason="needs a CUDA device of capability (9, 0) (sm90)")


@contextlib.contextmanager
def forced():
    """Dispatch every attention call to ``nvidia.paged_prefill_sm90`` (loud error if it declines)."""
    from atrex import env

    old = os.environ.get(ENV)
    os.environ[ENV] = IMPL
    env.reload()
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(ENV, None)
        else:
            os.environ[ENV] = old
        env.reload()


def check_close(out, lse, ref_kw):
    """``out`` / ``lse`` (None when the call returns no LSE) against the float64 oracle of ``ref_kw``."""
    ref_out, ref_lse = attn_oracle(ref_kw)
    assert_attn_matches(out, lse, ref_out, ref_lse if lse is not None else None, fp8=ref_kw["q"].dtype == FP8,
                        rows=int(ref_kw["cu_seqlens_q"][-1]))


def bits(t):
    t = t.detach().contiguous()
    return t.view(torch.uint8).clone() if t.element_size() == 1 else \
        t.view(torch.int16 if t.element_size() == 2 else torch.int32).clone()


def run_forced(kw):
    import atrex

    with forced():
        res = atrex.flash_attn_varlen_func(**kw)
    return res if kw.get("return_softmax_lse") else (res, None)


def run_and_check(case):
    kw, ref = build(case, "cuda")
    out, lse = run_forced(kw)
    if kw.get("out") is not None:
        assert out is kw["out"]
    if lse is not None:
        assert lse.shape == (kw["q"].shape[1], kw["q"].shape[0]) and lse.dtype == torch.float32
    check_close(out, lse, ref)
    return kw, out, lse


# ---- the vLLM matrix ----------------------------------------------------------------------------------

#: vLLM's chunked-prefill lengths: query tokens per sequence and the sequence's whole KV length
CHUNKED = dict(q_lens=(1, 5, 129, 37), k_lens=(1328, 18, 463, 2011))
HEADS = {"h4_4": (4, 4), "h8_2": (8, 2)}
FEATURES = {"plain": {}, "win256": dict(window_size=(255, 0)), "softcap50": dict(softcap=50.0),
            "win256_softcap50": dict(window_size=(255, 0), softcap=50.0)}


def _matrix() -> dict:
    """name -> case: head dims x heads x dtype x (window, softcap) at page 16, a page sweep, cache sizes."""
    cases = {}
    for d in (40, 72, 80, 96, 128, 256):
        for hname, (hq, hk) in HEADS.items():
            for dtype, dname in ((BF16, "bf16"), (FP8, "fp8")):
                for fname, feat in FEATURES.items():
                    if d not in (72, 128) and dname == "fp8" and fname not in ("plain", "win256_softcap50"):
                        continue  # fp8 x every feature at two head dims; the corners elsewhere
                    cases[f"d{d}_{hname}_{dname}_{fname}"] = dict(
                        CHUNKED, head_dim=d, num_heads_q=hq, num_heads_k=hk, page_size=16, dtype=dtype, **feat)
    for page in (1, 32, 64, 128, 80):
        for d in (64, 128, 256):
            cases[f"page{page}_d{d}_h8_2_bf16"] = dict(CHUNKED, head_dim=d, num_heads_q=8, num_heads_k=2,
                                                     page_size=page, dtype=BF16, return_lse=True)
        cases[f"page{page}_d72_h4_4_fp16_win256"] = dict(CHUNKED, head_dim=72, num_heads_q=4, num_heads_k=4,
                                                        page_size=page, dtype=F16, window_size=(255, 0))
    for nb in (2048, 32768):
        for d, dtype, dname in ((128, BF16, "bf16"), (256, BF16, "bf16"), (128, FP8, "fp8"), (96, FP8, "fp8")):
            cases[f"blocks{nb}_d{d}_{dname}"] = dict(CHUNKED, head_dim=d, num_heads_q=8, num_heads_k=2,
                                                     page_size=16, dtype=dtype, cache_blocks=nb, return_lse=True)
    return cases


MATRIX = _matrix()

#: fp8 descales, NaN / Inf page tails, sinks, LSE, layouts, mixed prefill + decode, long KV
EXTRA = {
    "fp8_unit_descales": dict(CHUNKED, dtype=FP8, head_dim=128, unit_descales=True, return_lse=True),
    "fp8_stride0_descales": dict(CHUNKED, dtype=FP8, head_dim=128, expand_descales=True),
    "fp8_stride0_unit_descales_p128": dict(CHUNKED, dtype=FP8, head_dim=128, page_size=128, unit_descales=True,
                                           expand_descales=True),
    "fp8_no_descales": dict(CHUNKED, dtype=FP8, head_dim=64, fp8_descales=False),
    "nan_tails_p16": dict(CHUNKED, head_dim=128, page_size=16, poison=float("nan"), return_lse=True),
    "nan_tails_p128_tma_shape": dict(CHUNKED, head_dim=128, page_size=128, poison=float("nan"), return_lse=True),
    "nan_tails_p80_d256": dict(CHUNKED, head_dim=256, page_size=80, num_heads_q=16, num_heads_k=2,
                               poison=float("nan")),
    "inf_tails_p32_d72_win": dict(CHUNKED, head_dim=72, page_size=32, poison=float("inf"), window_size=(255, 0)),
    "nan_tails_fp8_p16": dict(CHUNKED, head_dim=128, dtype=FP8, poison=float("nan"), return_lse=True),
    "nan_tails_p1_d40": dict(CHUNKED, head_dim=40, page_size=1, poison=float("nan")),
    "sinks_bf16_lse": dict(CHUNKED, head_dim=128, sinks=True, return_lse=True),
    "sinks_fp32_win_softcap": dict(CHUNKED, head_dim=64, sinks=True, sink_dtype=torch.float32, softcap=50.0,
                                   window_size=(255, 0), return_lse=True),
    "sinks_fp8_empty_kv": dict(q_lens=(3, 2, 0), k_lens=(0, 300, 5), head_dim=128, dtype=FP8, sinks=True,
                               return_lse=True),
    "noncausal_window_lr": dict(CHUNKED, head_dim=128, causal=False, window_size=(100, 20), return_lse=True),
    "causal_sq_gt_sk": dict(q_lens=(40, 7), k_lens=(10, 70), head_dim=128, return_lse=True),
    "hnd_layout": dict(CHUNKED, head_dim=128, layout="hnd", return_lse=True),
    "interleaved_kv_fp8": dict(CHUNKED, head_dim=128, layout="interleaved", dtype=FP8),
    "out_given_fp16": dict(CHUNKED, head_dim=80, dtype=F16, out=True),
    "graph_padding_rows": dict(CHUNKED, head_dim=128, pad_rows=40, return_lse=True),
    "oob_block_ids_clamped": dict(CHUNKED, head_dim=128, oob_blocks=True),
    "seqused_past_table_clamped": dict(CHUNKED, head_dim=128, seqused_over=True),
    "mixed_30_decodes_1_prefill_gqa8": dict(q_lens=(1,) * 30 + (129,), k_lens=tuple(18 + 67 * i for i in range(31)),
                                            head_dim=128, num_heads_q=16, num_heads_k=2, return_lse=True),
    "gqa16_q64": dict(q_lens=(64, 17), k_lens=(900, 17), head_dim=128, num_heads_q=32, num_heads_k=2),
    "gqa64_chunks_d256": dict(q_lens=(3, 40), k_lens=(500, 41), head_dim=256, num_heads_q=128, num_heads_k=1,
                              sinks=True),
    "long_kv_q64": dict(q_lens=(64,), k_lens=(16000,), head_dim=128, num_heads_q=8, num_heads_k=2,
                        return_lse=True),
}


@sm90_only
@pytest.mark.parametrize("name", sorted(MATRIX))
def test_prefill_vllm_matrix(name):
    run_and_check(MATRIX[name])


@sm90_only
@pytest.mark.parametrize("name", sorted(EXTRA))
def test_prefill_cases(name):
    run_and_check(EXTRA[name])


@sm90_only
def test_prefill_deterministic():
    kw, ref = build(EXTRA["long_kv_q64"], "cuda")
    a_out, a_lse = run_forced(kw)
    b_out, b_lse = run_forced(kw)
    assert torch.equal(bits(a_out), bits(b_out)) and torch.equal(a_lse, b_lse)
    check_close(a_out, a_lse, ref)


# ---- dispatch: what FA4 declines or hands over lands here ---------------------------------------------

@sm90_only
@pytest.mark.parametrize("case", [
    dict(CHUNKED, head_dim=128, page_size=128, poison=float("nan")),  # FA4's TMA path (policy.paged_tma_tail)
    dict(CHUNKED, head_dim=256, page_size=80, poison=float("nan")),
    dict(CHUNKED, head_dim=128, dtype=FP8),  # FA4 has no fp8 on sm90
    dict(CHUNKED, head_dim=40, page_size=16),  # FA4's cp.async paging needs D % 16 == 0
], ids=["p128_d128_nan_tails", "p80_d256_nan_tails", "fp8", "d40_p16"])
def test_prefill_default_dispatch(case):
    import atrex

    kw, ref = build(case, "cuda")
    assert atrex.explain_flash_attn_varlen_func(**kw).chosen == IMPL
    out = atrex.flash_attn_varlen_func(**kw)
    check_close(out, None, ref)


# ---- CUDA graphs ---------------------------------------------------------------------------------------

def _graph_inputs(seed=0):
    """A captured shape: 4 sequences, 160 query rows, max_seqlen_q 129, 48 pages of 16 per sequence."""
    B, W, bs = 4, 48, 16
    kw, _ = build(dict(q_lens=(129, 20, 5, 6), k_lens=(W * bs,) * B, head_dim=128, num_heads_q=8, num_heads_k=2,
                       page_size=bs, num_blocks=B * W + 64, seed=seed, return_lse=True), "cuda")
    kw["out"] = torch.empty_like(kw["q"])
    return kw


@sm90_only
def test_prefill_graph_replay_changed_lengths():
    """Replays with other splits of the 160 rows (some left as padding), other seqused_k and block tables:
    bitwise equal to eager calls with the same host arguments, and right against the oracle."""
    import atrex

    kw = _graph_inputs()
    rounds = ([0, 1, 2, 130, 150], [0, 129, 129, 140, 160], [0, 3, 50, 60, 61], [0, 0, 0, 0, 0])
    with forced():
        atrex.prewarm("flash_attn_varlen", [kw])
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            _, lse_g = atrex.flash_attn_varlen_func(**kw)
        gen = torch.Generator().manual_seed(1)
        nb = kw["k"].shape[0]
        for rnd, cu in enumerate(rounds):
            used = torch.randint(0, kw["max_seqlen_k"] + 1, (4,), generator=gen, dtype=torch.int32)
            ids = torch.randperm(nb, generator=gen)[: kw["block_table"].numel()].view_as(kw["block_table"])
            kw["cu_seqlens_q"].copy_(torch.tensor(cu, dtype=torch.int32))
            kw["seqused_k"].copy_(used)
            kw["block_table"].copy_(ids.to(torch.int32))
            g.replay()
            torch.cuda.synchronize()
            e_out, e_lse = atrex.flash_attn_varlen_func(**dict(kw, out=torch.empty_like(kw["out"])))
            n = cu[-1]
            assert torch.equal(bits(kw["out"][:n]), bits(e_out[:n])), f"round {rnd}: replay != eager"
            assert torch.equal(lse_g[:, :n], e_lse[:, :n])
            check_close(kw["out"], lse_g, kw)


@sm90_only
def test_prefill_capture_unwarmed_raises():
    import atrex
    from atrex.errors import AtrexCaptureError
    from atrex_nvidia.flash_attn.sm90.paged_prefill import launch

    kw = _graph_inputs(seed=3)
    kw["softcap"] = 13.25  # a specialisation nothing above compiled
    kw["return_softmax_lse"] = False
    n_warm = len(launch.warmed_keys())
    before = bits(kw["out"])
    torch.cuda.synchronize()
    with forced():
        g = torch.cuda.CUDAGraph()
        with pytest.raises(AtrexCaptureError, match="prewarm"), torch.cuda.graph(g):
            atrex.flash_attn_varlen_func(**kw)
        torch.cuda.synchronize()
        assert torch.equal(before, bits(kw["out"]))
        assert len(launch.warmed_keys()) == n_warm
        atrex.prewarm("flash_attn_varlen", [kw])
        g2 = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g2):
            atrex.flash_attn_varlen_func(**kw)
        g2.replay()
        torch.cuda.synchronize()
        e = atrex.flash_attn_varlen_func(**dict(kw, out=torch.empty_like(kw["out"])))
    n = int(kw["cu_seqlens_q"][-1])
    assert torch.equal(bits(e[:n]), bits(kw["out"][:n]))
    check_close(e, None, kw)


# ---- profiler ------------------------------------------------------------------------------------------

@sm90_only
def test_prefill_profiler_kernel_names():
    from torch.profiler import ProfilerActivity, profile

    kw, _ = build(MATRIX["d128_h8_2_bf16_plain"], "cuda")
    run_forced(kw)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        run_forced(kw)
        torch.cuda.synchronize()
    names = sorted({e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA})
    kernels = [n for n in names if not n.lower().startswith(("memset", "memcpy"))]
    assert kernels == ["atrex_sm90_paged_prefill"], names
