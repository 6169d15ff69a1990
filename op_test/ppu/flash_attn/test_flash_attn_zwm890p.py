"""Target test of ``ppu.decode`` / ``ppu.prefill``.

Runs on a real ZW-M890P or, in emulation, on an NVIDIA SM90 GPU with ``ATREX_PPU_EMULATE=1`` (the same
native sources built by nvcc for sm_90: correctness evidence for the CUDA-compatible source only).
Skips at module level otherwise.
"""

from __future__ import annotations

import math

import pytest
import torch

from atrex import env

FP8 = getattr(torch, "float8_e4m3fn", None)


def _skip_reason() -> str | None:
    if not torch.cuda.is_available():
        return "needs a CUDA-compatible device: a ZW-M890P, or an NVIDIA SM90 GPU with ATREX_PPU_EMULATE=1"
    name = torch.cuda.get_device_properties(0).name.strip()
    if name == "ZW-M890P":
        return None
    if not env.settings().ppu_emulate:
        return f"device {name!r} is not a ZW-M890P and ATREX_PPU_EMULATE is not set (set ATREX_PPU_EMULATE=1 on SM90)"
    if torch.cuda.get_device_capability(0) != (9, 0):
        return f"PPU emulation needs an NVIDIA SM90 GPU; found {name!r} {torch.cuda.get_device_capability(0)}"
    return None


_reason = _skip_reason()
if _reason:
    pytest.skip(_reason, allow_module_level=True)

import atrex  # noqa: E402
from atrex.api.flash_attn import normalize_flash_attn_call  # noqa: E402
from atrex.errors import AtrexCaptureError, AtrexNotSupportedError  # noqa: E402
from atrex.inputs import attn_inputs  # noqa: E402
from atrex.reference import flash_attn as reference  # noqa: E402
from atrex_ppu.flash_attn.zwm890p import build, launch  # noqa: E402
from testlib import assert_unchanged, snapshot  # noqa: E402

DEV = "cuda"
ATOL, RTOL = 3e-2, 5e-2


@pytest.fixture(scope="module", autouse=True)
def _compiled():
    """Compile every native library once, in parallel (lazy compile is covered by prewarm below)."""
    emulated = atrex.explain_flash_attn_varlen_func(**make(1, [1], [64], 8, 1, 64)).target.emulated
    build.ensure(build.LIBRARIES, emulated, torch.cuda.current_device())
    yield


def make(seed, q_lens, k_lens, hq, hk, page, *, descales=True, layout="nhd", num_splits=0, extra_blocks=3,
         max_seqlen_k=None, out=True):
    kw = attn_inputs(q_lens, k_lens, num_heads_q=hq, num_heads_k=hk, head_dim=256, dtype=FP8, page_size=page,
                     device=DEV, fp8_descales=descales is not False, seed=seed, out=out,
                     num_blocks=sum(math.ceil(n / page) for n in k_lens) + extra_blocks)
    if descales == "stride0":
        for name in ("q_descale", "k_descale", "v_descale"):
            kw[name] = kw[name][:1, :1].expand(len(q_lens), hk)
    if layout == "interleaved":  # one [nb, 2, page, Hk, D] buffer, K and V views of it
        kv = torch.stack([kw["k"], kw["v"]], dim=1)
        kw["k"], kw["v"] = kv[:, 0], kv[:, 1]
    elif layout == "hnd":  # physical [nb, Hk, page, D]
        kw["k"] = kw["k"].permute(0, 2, 1, 3).contiguous().permute(0, 2, 1, 3)
        kw["v"] = kw["v"].permute(0, 2, 1, 3).contiguous().permute(0, 2, 1, 3)
    kw["num_splits"] = num_splits
    if max_seqlen_k is not None:  # a capacity (CUDA graphs): the block table covers it, -1 past the used pages
        kw["max_seqlen_k"] = max_seqlen_k
        bt = kw["block_table"]
        width = math.ceil(max_seqlen_k / page)
        if bt.shape[1] < width:
            pad = torch.full((bt.shape[0], width - bt.shape[1]), -1, dtype=torch.int32, device=DEV)
            kw["block_table"] = torch.cat([bt, pad], dim=1)
    return kw


def ref_out(kw) -> torch.Tensor:
    call = normalize_flash_attn_call(**{k: v for k, v in kw.items() if k != "out"})
    o = torch.zeros(call.total_q, call.num_heads_q, call.head_dim, dtype=torch.float32, device=DEV)
    reference.run(call, o)
    return o


def valid_rows(kw) -> torch.Tensor:
    return torch.arange(kw["q"].shape[0], device=DEV) < kw["cu_seqlens_q"][-1]


def chosen(kw) -> str:
    return atrex.explain_flash_attn_varlen_func(**kw).chosen


def poison_allocator():
    """Fill freed caching-allocator blocks with NaN so scratch reuse would show uninitialised reads."""
    x = torch.full((48 << 20,), float("nan"), device=DEV)
    del x


def check_close(kw, got):
    ref = ref_out(kw)
    rows = valid_rows(kw)
    torch.testing.assert_close(got.float()[rows], ref[rows], atol=ATOL, rtol=RTOL)


# (seed, q_lens, k_lens, hq, hk, page, descales, layout, num_splits, expected impl)
PREFILL = [
    (1, [7, 130], [300, 130], 8, 1, 64, False, "nhd", 0, "ppu.prefill"),  # retained 8/1 kernel
    (2, [64, 1, 200], [64, 577, 200], 8, 1, 128, False, "interleaved", 2, "ppu.prefill"),
    (3, [33, 0, 90], [20, 5, 400], 8, 1, 256, True, "nhd", 4, "ppu.prefill"),  # 8/1 with descales -> general
    (4, [70, 9], [70, 1000], 32, 2, 64, True, "interleaved", 0, "ppu.prefill"),
    (5, [128, 17], [200, 17], 32, 2, 128, "stride0", "hnd", 32, "ppu.prefill"),
    (6, [40, 65], [40, 300], 16, 2, 256, True, "nhd", 1, "ppu.prefill"),
    (7, [100, 6], [0, 500], 16, 1, 64, True, "interleaved", 4, "ppu.prefill"),
    (8, [24, 50], [90, 60], 12, 1, 192, True, "nhd", 0, "ppu.prefill"),  # GQA 12, page 192
    (9, [9, 11], [400, 11], 4, 1, 64, False, "nhd", 2, "ppu.prefill"),  # GQA 4
]

DECODE = [
    (11, [1, 1, 1], [1, 700, 64], 8, 1, 64, True, "nhd", 0),
    (12, [2, 0, 1], [129, 50, 1000], 16, 1, 128, False, "interleaved", 1),
    (13, [3, 2], [3, 255], 32, 4, 256, "stride0", "nhd", 2),
    (14, [4, 4, 1], [300, 4, 2000], 32, 2, 64, True, "hnd", 32),
    (15, [5, 1], [5, 77], 16, 1, 256, True, "interleaved", 4),
    (16, [5, 3, 5], [700, 2, 64], 8, 1, 128, True, "nhd", 0),
    (17, [1] * 9, [33 * i + 1 for i in range(9)], 16, 2, 64, False, "nhd", 0),
]


# The systematic matrix: heads x pages x splits, cycling layouts, descale forms and three
# length patterns (sq <= sk, sq > sk with an empty sequence, one long + short sequences).
_LAYOUTS = ("nhd", "interleaved", "hnd")
_DESC = (True, False, "stride0")
_PREFILL_LENS = (([7, 130], [300, 130]), ([33, 0, 90], [20, 5, 400]), ([64, 1, 200], [64, 577, 200]))
_DECODE_LENS = ((1, [1, 700, 64]), (2, [129, 2, 1000]), (3, [3, 255]), (4, [300, 4, 2000]), (5, [5, 77, 640]))
_MATRIX_HEADS = ((8, 1), (32, 2), (16, 2), (16, 1))
_MATRIX_SPLITS = (0, 1, 2, 4, 32)


def _matrix(decode: bool):
    cases = []
    i = 0
    for hq, hk in _MATRIX_HEADS:
        for page in (64, 128, 256):
            for splits in _MATRIX_SPLITS:
                if decode:
                    mq, kl = _DECODE_LENS[i % len(_DECODE_LENS)]
                    ql = [mq, max(1, mq - 1), 0][:len(kl)]
                else:
                    ql, kl = _PREFILL_LENS[i % len(_PREFILL_LENS)]
                cases.append((100 + i, ql, kl, hq, hk, page, _DESC[i % 3], _LAYOUTS[(i // 3) % 3], splits))
                i += 1
    return cases


@pytest.mark.parametrize("case", _matrix(False), ids=lambda c: f"h{c[3]}k{c[4]}-p{c[5]}-s{c[8]}-{c[7]}-d{c[6]}")
def test_prefill_matrix(case):
    kw = make(*case[:6], descales=case[6], layout=case[7], num_splits=case[8])
    assert chosen(kw) == "ppu.prefill"
    check_close(kw, atrex.flash_attn_varlen_func(**kw))


@pytest.mark.parametrize("case", _matrix(True), ids=lambda c: f"h{c[3]}k{c[4]}-p{c[5]}-s{c[8]}-{c[7]}-d{c[6]}")
def test_decode_matrix(case):
    kw = make(*case[:6], descales=case[6], layout=case[7], num_splits=case[8])
    assert chosen(kw) == ("ppu.decode" if case[3] // case[4] in (8, 16) else "ppu.prefill")
    check_close(kw, atrex.flash_attn_varlen_func(**kw))


@pytest.mark.parametrize("case", PREFILL, ids=[f"prefill{c[0]}" for c in PREFILL])
def test_prefill_matches_reference(case):
    seed, ql, kl, hq, hk, page, desc, layout, splits, impl = case
    kw = make(seed, ql, kl, hq, hk, page, descales=desc, layout=layout, num_splits=splits)
    assert chosen(kw) == impl
    before = snapshot({k: v for k, v in kw.items() if k != "out"})
    poison_allocator()
    out = atrex.flash_attn_varlen_func(**kw)
    assert out is kw["out"] and out.dtype == torch.bfloat16
    assert_unchanged(before, kw)
    check_close(kw, out)


@pytest.mark.parametrize("case", DECODE, ids=[f"decode{c[0]}" for c in DECODE])
def test_decode_matches_reference(case):
    seed, ql, kl, hq, hk, page, desc, layout, splits = case
    kw = make(seed, ql, kl, hq, hk, page, descales=desc, layout=layout, num_splits=splits)
    assert chosen(kw) == "ppu.decode"
    before = snapshot({k: v for k, v in kw.items() if k != "out"})
    poison_allocator()
    out = atrex.flash_attn_varlen_func(**kw)
    assert_unchanged(before, kw)
    check_close(kw, out)


@pytest.mark.parametrize("splits", [1, 4])
@pytest.mark.parametrize("kind", ["decode", "prefill"])
def test_kv_tail_sanitization(kind, splits):
    """fp8 NaN bytes (0x7F / 0xFF) and garbage past seqused_k and in unreferenced pages change nothing."""
    if kind == "decode":
        kw = make(21, [2, 1, 3], [70, 129, 5], 16, 1, 128, num_splits=splits, extra_blocks=4)
    else:
        kw = make(22, [50, 7, 90], [70, 129, 100], 8, 1, 128, num_splits=splits, extra_blocks=4, descales=False)
    clean = atrex.flash_attn_varlen_func(**kw).clone()
    page = kw["k"].shape[1]
    table, used = kw["block_table"].cpu(), kw["seqused_k"].cpu().tolist()
    referenced = set()
    gen = torch.Generator(device="cpu").manual_seed(5)
    for name in ("k", "v"):
        raw = kw[name].view(torch.uint8)
        for b, n in enumerate(used):
            pages = math.ceil(n / page)
            referenced.update(table[b, :pages].tolist())
            if n % page:
                raw[int(table[b, pages - 1]), n % page:] = 0x7F if b % 2 else 0xFF
        for blk in range(raw.shape[0]):
            if blk not in referenced:
                raw[blk] = torch.randint(0, 256, raw[blk].shape, generator=gen, dtype=torch.uint8).to(DEV)
                raw[blk, ::3] = 0x7F
    out = atrex.flash_attn_varlen_func(**kw)
    rows = valid_rows(kw)
    assert torch.equal(out[rows], clean[rows])
    assert torch.isfinite(out[rows].float()).all()


def _graph_case(kind):
    if kind == "decode":
        return make(31, [1, 2, 1, 4], [900, 300, 1, 1500], 16, 1, 64, max_seqlen_k=2048, num_splits=0)
    return make(32, [40, 100], [900, 1500], 32, 2, 128, max_seqlen_k=2048, num_splits=0)


@pytest.mark.parametrize("kind", ["decode", "prefill"])
def test_graph_replay_changed_lengths_and_descales(kind):
    kw = _graph_case(kind)
    atrex.prewarm("flash_attn_varlen", [kw])
    out_eager = atrex.flash_attn_varlen_func(**kw).clone()  # warm-up eager
    g = torch.cuda.CUDAGraph()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        atrex.flash_attn_varlen_func(**kw)
    torch.cuda.current_stream().wait_stream(s)
    with torch.cuda.graph(g):
        out_g = atrex.flash_attn_varlen_func(**kw)
    g.replay()
    torch.cuda.synchronize()
    rows = valid_rows(kw)
    assert torch.equal(out_g[rows], out_eager[rows])
    # captured long, replayed short; new descale values read on device
    kw["seqused_k"].copy_(torch.tensor([17, 65, 1, 129] if kind == "decode" else [40, 230], dtype=torch.int32))
    for name in ("q_descale", "k_descale", "v_descale"):
        kw[name].mul_(1.5 if name != "k_descale" else 0.75)
    poison_allocator()
    g.replay()
    torch.cuda.synchronize()
    eager = atrex.flash_attn_varlen_func(**kw)
    assert torch.equal(out_g[rows], eager[rows])
    check_close(kw, out_g)


def test_capture_without_prewarm_raises_before_launch(monkeypatch):
    kw = make(41, [1, 1], [100, 64], 8, 1, 64)
    call = normalize_flash_attn_call(**kw)._replace(capturing=True)
    monkeypatch.setattr(build, "_loaded", {})
    out = kw["out"]
    out.fill_(3.0)
    with pytest.raises(AtrexCaptureError, match="prewarm"):
        launch.run_decode(call, out)
    with pytest.raises(AtrexCaptureError, match="prewarm"):
        launch.run_prefill(call, out)
    assert (out.float() == 3.0).all()


def test_dispatch_and_fail_fast():
    base = dict(seed=51, q_lens=[1, 2], k_lens=[100, 300], hq=8, hk=1, page=64)

    def mk(**over):
        args = {**base, **over}
        return make(args.pop("seed"), args.pop("q_lens"), args.pop("k_lens"), args.pop("hq"), args.pop("hk"),
                    args.pop("page"), **args)

    def rejected(kw, code):
        assert not atrex.can_use_flash_attn_varlen_func(**kw)
        with pytest.raises(AtrexNotSupportedError) as info:
            atrex.flash_attn_varlen_func(**kw)
        ppu = [(i, e) for i, e in info.value.rejections if i.startswith("ppu.")]
        assert [i for i, _ in ppu] == ["ppu.decode", "ppu.prefill"], info.value.rejections
        assert "ppu.decode" in str(info.value) and "ppu.prefill" in str(info.value)
        for _, elig in ppu:
            assert code in {r.code for r in elig.reasons}, (code, elig)

    kw = mk()
    assert chosen(kw) == "ppu.decode"
    rejected({**mk(), "return_softmax_lse": True}, "lse")
    rejected({**mk(), "softcap": 10.0}, "softcap")
    rejected({**mk(), "window_size": (127, 0)}, "window")
    rejected({**mk(), "causal": False}, "causal")
    kws = mk()
    kws["s_aux"] = torch.zeros(8, dtype=torch.bfloat16, device=DEV)
    rejected(kws, "sinks")
    for page in (16, 32, 48):
        rejected(mk(page=page), "page_size")
    kq = mk()
    wide = torch.zeros(kq["q"].shape[0], 2, 8, 256, dtype=FP8, device=DEV)
    wide[:, 0] = kq["q"]
    kq["q"] = wide[:, 0]
    rejected(kq, "layout")
    # short-Q outside decode's domain lands on prefill when prefill's contract matches
    for over in (dict(hq=8, hk=2), dict(page=192)):
        kw = mk(**over)
        assert chosen(kw) == "ppu.prefill", over
        check_close(kw, atrex.flash_attn_varlen_func(**kw))
    rejected(mk(hq=12, hk=2), "gqa")


def test_scratch_reuse_memory_flat():
    cases = [make(61, [1, 3, 2], [500, 64, 1200], 16, 1, 128, num_splits=0, max_seqlen_k=1536),
             make(62, [80, 20], [300, 700], 32, 2, 64, num_splits=4),
             make(63, [30], [333], 8, 1, 64, descales=False, num_splits=2)]
    for kw in cases:
        atrex.flash_attn_varlen_func(**kw)
    torch.cuda.synchronize()
    start = torch.cuda.memory_allocated()
    for _ in range(100):
        for kw in cases:
            atrex.flash_attn_varlen_func(**kw)
    torch.cuda.synchronize()
    assert abs(torch.cuda.memory_allocated() - start) <= 256 * 1024


def test_kernel_names_in_profiler():
    cases = [make(71, [1, 2], [500, 64], 16, 1, 128, num_splits=4),
             make(72, [30, 4], [333, 90], 8, 1, 64, descales=False, num_splits=2),
             make(73, [30, 4], [333, 90], 32, 2, 64, num_splits=1)]
    for kw in cases:
        atrex.flash_attn_varlen_func(**kw)
    torch.cuda.synchronize()
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for kw in cases:
            atrex.flash_attn_varlen_func(**kw)
        torch.cuda.synchronize()
    names = {e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA}
    kernels = {n for n in names if not n.lower().startswith(("memcpy", "memset"))}
    assert kernels, names
    assert all(n.startswith("atrex_ppu_") for n in kernels), kernels
    for expected in ("atrex_ppu_decode_m32", "atrex_ppu_decode_combine", "atrex_ppu_prep_raw", "atrex_ppu_attn",
                     "atrex_ppu_combine", "atrex_ppu_attn_general"):
        assert expected in kernels, (expected, kernels)
