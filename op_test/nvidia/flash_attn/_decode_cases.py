"""Target-tier cases of ``nvidia.decode_splitkv`` (ATREX's split-KV paged decode, SM90), imported by
``test_flash_attn_sm90.py``. Independent of FA4: every test skips unless a CUDA device of capability
(9, 0) is present, and forces the implementation with ``ATREX_IMPL_FLASH_ATTN_VARLEN``.

Oracle: the core float64 oracle (``testlib.attn_oracle``) on CPU copies of the same inputs (fp8: the same
fp8 inputs with their descales), compared by ``testlib.assert_attn_matches``: NaN anywhere fails; the
elementwise tolerances of docs/flash_attn_varlen_func.md (fp16/bf16 atol 1.5e-2 rtol 1e-2, fp8 atol
3e-2 rtol 5e-2); the per-row
relative error ||out - ref|| / ||ref|| (RMS over rows <= 5e-3, max <= 2e-2: a 1% scale error or the
oldest 1% of keys dropped fails, which atol 1.5e-2 alone misses at 20k keys, where |out| ~ 0.01); rows
with no visible key exactly 0; LSE abs 2e-3 with -inf rows exactly -inf. Graph replay vs eager and run vs
run are bitwise, in addition to the oracle.
"""

import contextlib
import os

import pytest
import torch

from testlib import assert_attn_matches, attn_oracle

IMPL = "nvidia.decode_splitkv"
ENV = "ATREX_IMPL_FLASH_ATTN_VARLEN"
F16, BF16 = torch.float16, torch.bfloat16
FP8 = getattr(torch, "float8_e4m3fn", None)


def _on_sm90() -> bool:
    return torch.cuda.is_available() and torch.cuda.get_device_capability() == (9, 0)


sm90_only = pytest.mark.skipif(not _on_sm90(), reason="needs a CUDA device of capability (9, 0) (sm90)")


@contextlib.contextmanager
def forced():
    """Dispatch every attention call to ``nvidia.decode_splitkv`` (loud error if it declines)."""
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


# ---- inputs ----------------------------------------------------------------------------------------

def make(case: dict, device="cuda") -> dict:
    """vLLM-style kwargs on CPU (``device="cpu"``) or CUDA, from a case dict of ``attn_inputs`` options
    plus ``layout`` (``hnd`` / ``interleaved``), ``poison`` (a fill value for page tails and unreferenced
    blocks), ``sink_dtype``, ``expand_descales`` (stride-0 descales as vLLM passes them)."""
    from atrex.inputs import attn_inputs
    from atrex.validation.verify import poison_pages

    c = dict(case)
    q_lens, k_lens = c.pop("q_lens"), c.pop("k_lens")
    layout = c.pop("layout", None)
    poison = c.pop("poison", None)
    sink_dtype = c.pop("sink_dtype", None)
    expand = c.pop("expand_descales", False)
    c.setdefault("head_dim", 128)
    kw = attn_inputs(list(q_lens), list(k_lens), **c)
    if layout == "hnd":  # [nb, Hk, bs, D] physical, viewed as [nb, bs, Hk, D]
        kw["k"], kw["v"] = (x.permute(0, 2, 1, 3).contiguous().permute(0, 2, 1, 3) for x in (kw["k"], kw["v"]))
    elif layout == "interleaved":  # one buffer [nb, 2, bs, Hk, D]
        kv = torch.stack([kw["k"], kw["v"]], dim=1)
        kw["k"], kw["v"] = kv[:, 0], kv[:, 1]
    if poison is not None:
        kw = poison_pages(kw, poison)
    if sink_dtype is not None:
        kw["s_aux"] = kw["s_aux"].to(sink_dtype)
    if expand:
        for n in ("q_descale", "k_descale", "v_descale"):
            kw[n] = kw[n][:1, :1].expand(kw[n].shape)
    return {n: (x.to(device) if isinstance(x, torch.Tensor) else x) for n, x in kw.items()}


def check_close(out, lse, kw):
    """``out`` / ``lse`` (None when the call returns no LSE) against the float64 oracle of ``kw``'s inputs."""
    ref_out, ref_lse = attn_oracle(kw)
    assert_attn_matches(out, lse, ref_out, ref_lse if lse is not None else None, fp8=kw["q"].dtype == FP8,
                        rows=int(kw["cu_seqlens_q"][-1]))


def bits(t):
    t = t.detach().contiguous()
    return t.view(torch.uint8).clone() if t.element_size() == 1 else \
        t.view(torch.int16 if t.element_size() == 2 else torch.int32).clone()


def run_forced(kw):
    import atrex

    with forced():
        res = atrex.flash_attn_varlen_func(**kw)
    return res if kw.get("return_softmax_lse") else (res, None)


# ---- the case table ---------------------------------------------------------------------------------

DEC = dict(q_lens=(1, 1, 1, 1), k_lens=(1328, 18, 463, 70))
CASES = {
    "p16_gqa4_d128": dict(DEC, num_heads_q=8, num_heads_k=2, page_size=16),
    "p1_mha_d64": dict(DEC, num_heads_q=4, num_heads_k=4, head_dim=64, page_size=1),
    "p32_gqa8_d80_bf16": dict(DEC, num_heads_q=16, num_heads_k=2, head_dim=80, page_size=32, dtype=BF16),
    "p64_d40": dict(DEC, head_dim=40, page_size=64, return_lse=True),
    "p128_d72_lse": dict(DEC, head_dim=72, page_size=128, return_lse=True),
    "p16_d256_q16_gqa8": dict(q_lens=(16, 3), k_lens=(700, 40), num_heads_q=16, num_heads_k=2, head_dim=256,
                              page_size=16, return_lse=True),
    "q2to5_mixed": dict(q_lens=(2, 3, 4, 5), k_lens=(300, 5, 129, 2), page_size=16, return_lse=True),
    "seqused_0_1_odd": dict(q_lens=(1, 1, 2, 1), k_lens=(0, 1, 17, 33), page_size=16, return_lse=True),
    "window_decoder": dict(DEC, window_size=(255, 0), page_size=16, return_lse=True),
    "window_lr_noncausal": dict(q_lens=(3, 1), k_lens=(500, 90), causal=False, window_size=(100, 2),
                                page_size=32, return_lse=True),
    "softcap50": dict(DEC, softcap=50.0, page_size=16, dtype=BF16),
    "sinks_bf16": dict(DEC, sinks=True, page_size=16, dtype=BF16, return_lse=True),
    "sinks_fp32_empty": dict(q_lens=(1, 2), k_lens=(0, 300), sinks=True, sink_dtype=torch.float32, page_size=16,
                             return_lse=True),
    "out_given": dict(DEC, page_size=16, out=True),
    "fp8_descales": dict(DEC, dtype=FP8, page_size=16, return_lse=True),
    "fp8_stride0_descales_p128": dict(DEC, dtype=FP8, page_size=128, expand_descales=True),
    "fp8_no_descales_d64": dict(DEC, dtype=FP8, head_dim=64, page_size=32, fp8_descales=False),
    "hnd_layout": dict(DEC, page_size=16, layout="hnd", return_lse=True),
    "interleaved_kv": dict(DEC, page_size=64, layout="interleaved"),
    "nan_poison_p16": dict(DEC, page_size=16, poison=float("nan"), return_lse=True),
    "inf_poison_p128_window": dict(DEC, page_size=128, poison=float("inf"), window_size=(63, 0)),
    "nan_poison_fp8": dict(DEC, dtype=FP8, page_size=16, poison=float("nan")),
    "long_b1_split": dict(q_lens=(1,), k_lens=(20000,), num_heads_q=32, num_heads_k=8, page_size=16,
                          return_lse=True),
    "long_b1_q4_p128": dict(q_lens=(4,), k_lens=(9000,), num_heads_q=32, num_heads_k=8, page_size=128,
                            return_lse=True, dtype=BF16),
    "num_splits_1": dict(q_lens=(1,), k_lens=(5000,), num_heads_q=8, num_heads_k=2, page_size=16),
}


@sm90_only
@pytest.mark.parametrize("name", sorted(CASES))
def test_decode_cases(name):
    case = CASES[name]
    kw_cpu = make(case, "cpu")
    kw = make(case)
    if name == "num_splits_1":
        kw["num_splits"] = kw_cpu["num_splits"] = 1
    out, lse = run_forced(kw)
    if kw.get("out") is not None:
        assert out is kw["out"]
    if lse is not None:
        assert lse.shape == (kw["q"].shape[1], kw["q"].shape[0]) and lse.dtype == torch.float32
    check_close(out, lse, kw_cpu)


@sm90_only
@pytest.mark.parametrize("gqa", [1, 4, 8])
@pytest.mark.parametrize("page", [1, 16, 32, 64, 128])
def test_decode_grid_pages_gqa(page, gqa):
    case = dict(q_lens=(1, 3, 1), k_lens=(777, 64, 5), num_heads_q=2 * gqa, num_heads_k=2, page_size=page,
                return_lse=True, dtype=BF16)
    out, lse = run_forced(make(case))
    check_close(out, lse, make(case, "cpu"))


@sm90_only
@pytest.mark.parametrize("nsplits", [0, 1, 3])
def test_decode_poisoned_workspace(nsplits):
    from atrex.validation.verify import poison_allocator

    case = dict(q_lens=(1, 2), k_lens=(6000, 7), num_heads_q=8, num_heads_k=2, page_size=16, return_lse=True,
                sinks=True)
    kw = make(case)
    kw["num_splits"] = nsplits
    poison_allocator(kw["q"].device)
    out, lse = run_forced(kw)
    check_close(out, lse, dict(make(case, "cpu"), num_splits=nsplits))


@sm90_only
def test_decode_deterministic():
    kw = make(CASES["long_b1_split"])
    a_out, a_lse = run_forced(kw)
    b_out, b_lse = run_forced(kw)
    assert torch.equal(bits(a_out), bits(b_out)) and torch.equal(a_lse, b_lse)
    check_close(a_out, a_lse, kw)


def _graph_inputs(seed=0):
    B, W, bs = 4, 80, 16
    kw = make(dict(q_lens=(1,) * B, k_lens=(W * bs,) * B, num_heads_q=8, num_heads_k=2, page_size=bs,
                   num_blocks=B * W + 64, seed=seed, return_lse=True))
    kw["out"] = torch.empty_like(kw["q"])
    return kw


@sm90_only
def test_decode_graph_replay_changed_seqused_and_table():
    import atrex

    kw = _graph_inputs()
    with forced():
        atrex.prewarm("flash_attn_varlen", [kw])
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            _, lse_g = atrex.flash_attn_varlen_func(**kw)
        gen = torch.Generator().manual_seed(1)
        nb = kw["k"].shape[0]
        for rnd in range(3):
            used = torch.randint(0, kw["max_seqlen_k"] + 1, (4,), generator=gen, dtype=torch.int32)
            ids = torch.randperm(nb, generator=gen)[: kw["block_table"].numel()].view_as(kw["block_table"])
            kw["seqused_k"].copy_(used)
            kw["block_table"].copy_(ids.to(torch.int32))
            g.replay()
            torch.cuda.synchronize()
            e_out, e_lse = atrex.flash_attn_varlen_func(**dict(kw, out=torch.empty_like(kw["out"])))
            assert torch.equal(bits(kw["out"]), bits(e_out)), f"round {rnd}: replay != eager"
            assert torch.equal(lse_g, e_lse)
            check_close(kw["out"], lse_g, kw)


@sm90_only
def test_decode_capture_unwarmed_raises():
    import atrex
    from atrex.errors import AtrexCaptureError
    from atrex_nvidia.flash_attn.sm90.decode_splitkv import launch

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
    assert torch.equal(bits(e), bits(kw["out"]))
    check_close(e, None, kw)


@sm90_only
def test_decode_profiler_kernel_names():
    from torch.profiler import ProfilerActivity, profile

    kw = make(CASES["long_b1_split"])
    run_forced(kw)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        run_forced(kw)
        torch.cuda.synchronize()
    names = sorted({e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA})
    kernels = [n for n in names if not n.lower().startswith(("memset", "memcpy"))]
    assert "atrex_sm90_decode_splitkv" in kernels and "atrex_sm90_decode_combine" in kernels, names
    assert all(n.startswith("atrex_") for n in kernels), names
