"""CPU tier of the PPU ZW-M890P attention plugin: detection, check() boundaries with a faked device
target, dispatch order and errors, scratch sizing, the compile cache key and the capture error path.
No kernel is compiled or launched here."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch

from atrex import env
from atrex.api.flash_attn import normalize_flash_attn_call
from atrex.dispatch import registry
from atrex.dispatch.target import DeviceTarget, classify_properties
from atrex.errors import AtrexCaptureError, AtrexNotSupportedError
from atrex.inputs import attn_inputs
from atrex.plugin import validate_manifest
from atrex_ppu import prefill_packed_kv_bytes, prefill_scratch_bytes
from atrex_ppu._plugin import plugin
from atrex_ppu.flash_attn.zwm890p import build, check, launch
from testlib import OpRecorder

FP8 = torch.float8_e4m3fn
PPU = DeviceTarget("ppu", "zwm890p", "ZW-M890P", (8, 9), "cuda 12.x", 0, False, 0)
EMU = DeviceTarget("ppu", "zwm890p", "NVIDIA H200", (9, 0), "cuda 13.0", 132, True, 0)


@pytest.fixture(autouse=True)
def _hgcc(monkeypatch):
    """A real-PPU target needs ATREX_PPU_HGCC (check declines without it); never executed here."""
    monkeypatch.setenv("ATREX_PPU_HGCC", "/opt/ppu/bin/hgcc")
    monkeypatch.delenv("ATREX_IMPL_FLASH_ATTN_VARLEN", raising=False)
    monkeypatch.delenv("ATREX_DISABLE", raising=False)
    env.reload()
    yield
    monkeypatch.undo()
    env.reload()
    registry.set_registry_for_tests(None)


def make_call(q_lens=(1, 2), k_lens=(100, 300), hq=8, hk=1, page=64, *, dtype=FP8, head_dim=256, target=PPU,
              **kw):
    over = {k: kw.pop(k) for k in list(kw) if k in ("num_splits", "q", "k", "v", "block_table", "max_seqlen_k",
                                                        "q_descale", "k_descale", "v_descale", "s_aux", "out")}
    args = attn_inputs(list(q_lens), list(k_lens), num_heads_q=hq, num_heads_k=hk, head_dim=head_dim, dtype=dtype,
                       page_size=page, **kw)
    args.update(over)
    return normalize_flash_attn_call(**args)._replace(target=target)


def codes(elig) -> set[str]:
    return {r.code for r in elig.reasons}


# ---- detection -------------------------------------------------------------------------------------

def test_classification():
    """The plugin's device rule: the exact product name before any capability rule; ATREX_PPU_EMULATE maps
    an NVIDIA SM90 only."""
    rules = plugin().devices

    def classify(name, cap, cuda, **kw):
        return classify_properties(name=name, capability=cap, cuda_version=cuda, devices=rules, **kw)

    t = classify("ZW-M890P", (8, 9), "12.4")
    assert (t.id, t.emulated) == ("ppu/zwm890p", False)
    assert classify("NVIDIA L40S", (8, 9), "12.4").id == "nvidia/sm89"
    assert classify("ZW-M890P ", (8, 9), "12.4").id == "ppu/zwm890p"
    emu = classify("NVIDIA H200", (9, 0), "13.0", emulate=("ppu",))
    assert (emu.id, emu.emulated) == ("ppu/zwm890p", True)
    assert classify("NVIDIA L40S", (8, 9), "12.4", emulate=("ppu",)).id == "nvidia/sm89"
    assert classify("NVIDIA H200", (9, 0), "13.0").id == "nvidia/sm90"


def test_manifest_valid_and_priorities():
    m = plugin()
    assert validate_manifest(m, "ppu") == []
    assert [(s.id, s.priority) for s in m.impls] == [("ppu.decode", 10), ("ppu.prefill", 20)]
    assert all(s.archs == ("ppu/zwm890p",) and s.prewarm for s in m.impls)


def test_import_is_light():
    code = ("import sys, atrex_ppu, atrex_ppu._plugin; atrex_ppu.prefill_scratch_bytes(1, 1, 64); "
            "assert 'torch' not in sys.modules and 'atrex_ppu.flash_attn.zwm890p.build' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)


# ---- check() boundaries ------------------------------------------------------------------------------

def test_base_calls_eligible_and_host_only():
    dec, pre = make_call(), make_call(q_lens=(100, 7), k_lens=(300, 7))
    rec = OpRecorder()
    with rec:
        assert check.check_decode(dec).ok, check.check_decode(dec)
        assert check.check_prefill(dec).ok
        assert check.check_prefill(pre).ok
        assert codes(check.check_decode(pre)) == {"max_seqlen_q"}
    assert rec.ops == []


def test_emulated_target_needs_no_hgcc(monkeypatch):
    monkeypatch.delenv("ATREX_PPU_HGCC")
    env.reload()
    assert "requires" in codes(check.check_decode(make_call()))
    assert check.check_decode(make_call(target=EMU)).ok


@pytest.mark.parametrize("page,dec_ok,pre_ok", [(16, False, False), (32, False, False), (48, False, False),
                                                (64, True, True), (128, True, True), (192, False, True),
                                                (256, True, True), (320, False, True), (512, False, True)])
def test_page_sizes(page, dec_ok, pre_ok):
    call = make_call(page=page)
    assert check.check_decode(call).ok is dec_ok
    assert check.check_prefill(call).ok is pre_ok
    if not dec_ok:
        assert "page_size" in codes(check.check_decode(call))


@pytest.mark.parametrize("hq,hk,dec_ok,pre_ok", [(8, 1, True, True), (16, 1, True, True), (32, 2, True, True),
                                                 (32, 4, True, True), (4, 1, False, True), (8, 2, False, True),
                                                 (12, 1, False, True), (32, 1, False, True), (24, 1, False, True),
                                                 (6, 1, False, False), (12, 2, False, False), (2, 1, False, False),
                                                 (8, 8, False, False)])
def test_gqa(hq, hk, dec_ok, pre_ok):
    call = make_call(hq=hq, hk=hk)
    assert check.check_decode(call).ok is dec_ok
    assert check.check_prefill(call).ok is pre_ok


@pytest.mark.parametrize("mq,dec_ok", [(1, True), (3, True), (5, True), (6, False), (16, False)])
def test_max_seqlen_q(mq, dec_ok):
    call = make_call(q_lens=(mq, 1), k_lens=(300, 10))
    assert check.check_decode(call).ok is dec_ok
    assert check.check_prefill(call).ok


@pytest.mark.parametrize("splits,ok", [(0, True), (1, True), (2, True), (32, True), (33, False), (64, False)])
def test_num_splits(splits, ok):
    call = make_call(num_splits=splits)
    assert check.check_decode(call).ok is ok
    assert check.check_prefill(call).ok is ok


@pytest.mark.parametrize("make_kwargs,code", [
    (dict(return_lse=True), "lse"),
    (dict(softcap=10.0), "softcap"),
    (dict(sinks=True), "sinks"),
    (dict(window_size=(127, 0)), "window"),
    (dict(causal=False), "causal"),
    (dict(dtype=torch.bfloat16), "dtype"),
    (dict(dtype=torch.float8_e5m2), "dtype"),
    (dict(head_dim=128), "head_dim"),
    (dict(page=None), "paged"),
])
def test_rejected_features_both_sides(make_kwargs, code):
    call = make_call(**make_kwargs)
    for fn in (check.check_decode, check.check_prefill):
        elig = fn(call)
        assert not elig.ok and code in codes(elig), (fn.__name__, elig)
    assert check.check_decode(make_call()).ok  # the other side of the boundary


def test_strided_q_rows_rejected():
    base = attn_inputs([1, 2], [100, 300], num_heads_q=8, num_heads_k=1, head_dim=256, dtype=FP8, page_size=64)
    wide = torch.zeros(3, 2, 8, 256, dtype=FP8)
    wide[:, 0] = base["q"]
    call = make_call(q=wide[:, 0])
    assert "layout" in codes(check.check_decode(call)) and "layout" in codes(check.check_prefill(call))


def test_kv_layouts():
    args = attn_inputs([1, 2], [100, 300], num_heads_q=16, num_heads_k=2, head_dim=256, dtype=FP8, page_size=64)
    kv = torch.stack([args["k"], args["v"]], 1)  # interleaved: accepted
    call = make_call(hq=16, hk=2, k=kv[:, 0], v=kv[:, 1])
    assert check.check_decode(call).ok and check.check_prefill(call).ok
    k_hnd = args["k"].permute(0, 2, 1, 3).contiguous().permute(0, 2, 1, 3)  # k HND, v NHD
    call = make_call(hq=16, hk=2, k=k_hnd, v=args["v"])
    assert check.check_decode(call).ok
    assert "layout" in codes(check.check_prefill(call))  # prefill: K and V same layout
    pad = torch.zeros(*args["k"].shape[:-1], 264, dtype=FP8)  # token stride 264 bytes: not 16-byte multiple
    pad[..., :256] = args["k"]
    bad = pad[..., :256]
    call = make_call(hq=16, hk=2, k=bad, v=pad.clone()[..., :256])
    assert "layout" in codes(check.check_decode(call)) and "layout" in codes(check.check_prefill(call))


def test_block_table_must_cover_max_seqlen_k():
    assert check.check_decode(make_call(max_seqlen_k=320)).ok  # 5 pages x 64
    call = make_call(max_seqlen_k=321)
    assert "block_table" in codes(check.check_decode(call)) and "block_table" in codes(check.check_prefill(call))


def test_out_alignment():
    ok = torch.empty(3, 8, 256, dtype=torch.bfloat16)
    assert check.check_decode(make_call(out=ok)).ok
    odd = torch.empty(3 * 8 * 256 + 1, dtype=torch.bfloat16)[1:].view(3, 8, 256)
    assert "layout" in codes(check.check_decode(make_call(out=odd)))


def test_descales_any_strides_accepted():
    d = torch.ones(1, 1).expand(2, 1)
    call = make_call(q_descale=d, k_descale=d, v_descale=d)
    assert check.check_decode(call).ok and check.check_prefill(call).ok
    assert not check.uses_h8k1(call)
    assert check.uses_h8k1(make_call(fp8_descales=False))
    assert not check.uses_h8k1(make_call(fp8_descales=False, hq=16))


# ---- dispatch order and errors -----------------------------------------------------------------------

def _select(call):
    return registry.get_registry().select("flash_attn_varlen", call).id


def test_dispatch_priority():
    assert _select(make_call()) == "ppu.decode"
    assert _select(make_call(q_lens=(100, 7), k_lens=(300, 7))) == "ppu.prefill"
    assert _select(make_call(hq=8, hk=2)) == "ppu.prefill"  # short-Q GQA 4
    assert _select(make_call(page=192)) == "ppu.prefill"  # short-Q page 192


def test_gqa6_fails_naming_both():
    with pytest.raises(AtrexNotSupportedError) as info:
        _select(make_call(hq=12, hk=2))
    msg = str(info.value)
    assert "ppu.decode" in msg and "ppu.prefill" in msg and "gqa" in msg
    assert [i for i, _ in info.value.rejections if i.startswith("ppu.")] == ["ppu.decode", "ppu.prefill"]


def test_lse_fails_not_supported():
    with pytest.raises(AtrexNotSupportedError, match="return_softmax_lse"):
        _select(make_call(return_lse=True))


# ---- split policies (graph-static) ---------------------------------------------------------------------

def test_decode_splits_static():
    assert check.decode_splits(1, 1, 65, 132, 0) == 2  # no minimum KV length for automatic splitting
    assert check.decode_splits(1, 1, 64, 132, 0) == 1
    assert check.decode_splits(1, 1, 100000, 132, 0) == 32
    assert check.decode_splits(64, 1, 16384, 132, 0) == 5
    assert check.decode_splits(4, 1, 16384, 132, 1) == 1
    assert check.decode_splits(4, 1, 16384, 132, 4) == 4
    assert check.decode_splits(4, 1, 128, 132, 32) == 2


def test_prefill_splits_static():
    assert check.prefill_splits(1, 1, 1, 100000, 132, 0) == 8  # auto capped at 8
    assert check.prefill_splits(1, 1, 1, 100000, 132, 32) == 32
    assert check.prefill_splits(1, 1, 1, 100, 132, 32) == 2  # clamped to ceil(max_seqlen_k / 64)
    assert check.prefill_splits(64, 8, 4, 100000, 132, 0) == 1


# ---- scratch sizing -------------------------------------------------------------------------------------

def test_scratch_bytes():
    assert prefill_packed_kv_bytes(64, 1, 16384) == 512 * 2**20
    assert prefill_packed_kv_bytes(3, 2, 65) == 2 * 3 * 2 * 2 * 16384
    total = prefill_scratch_bytes(64, 1, 16384)
    assert 512 * 2**20 < total <= 512 * 2**20 + 1024
    split = prefill_scratch_bytes(2, 1, 1000, 4, total_q=10, num_heads_q=8)
    assert split - prefill_scratch_bytes(2, 1, 1000) >= 4 * 10 * 8 * 258 * 4


# ---- compilation cache key -----------------------------------------------------------------------------

def test_cache_key_inputs():
    src = {"a.cu": b"kernel", build.HEADER: b"header"}
    base = build.compute_cache_key("decode", src, "nvcc 13.0", build.NVCC_FLAGS, "sm_90", True)
    assert base == build.compute_cache_key("decode", dict(src), "nvcc 13.0", build.NVCC_FLAGS, "sm_90", True)
    variants = [
        build.compute_cache_key("decode", {**src, "a.cu": b"kernel2"}, "nvcc 13.0", build.NVCC_FLAGS, "sm_90", True),
        build.compute_cache_key("decode", {**src, build.HEADER: b"h2"}, "nvcc 13.0", build.NVCC_FLAGS, "sm_90", True),
        build.compute_cache_key("decode", src, "nvcc 13.1", build.NVCC_FLAGS, "sm_90", True),
        build.compute_cache_key("decode", src, "nvcc 13.0", (*build.NVCC_FLAGS, "-G"), "sm_90", True),
        build.compute_cache_key("decode", src, "nvcc 13.0", build.NVCC_FLAGS, "sm_90", False),
        build.compute_cache_key("decode", src, "nvcc 13.0", build.NVCC_FLAGS, "zwm890p", True),
        build.compute_cache_key("prep_kv", src, "nvcc 13.0", build.NVCC_FLAGS, "sm_90", True),
    ]
    assert len({base, *variants}) == len(variants) + 1


def test_cache_key_hashed_once_per_process(monkeypatch):
    reads = []
    real = build.library_sources
    monkeypatch.setattr(build, "_keys", {})
    monkeypatch.setattr(build, "_toolchains", {True: build.Toolchain("nvcc", "nvcc fake", build.NVCC_FLAGS,
                                                                      "sm_90", True)})
    monkeypatch.setattr(build, "library_sources", lambda lib: reads.append(lib) or real(lib))
    k1 = build.cache_key("decode", True)
    k2 = build.cache_key("decode", True)
    assert k1 == k2 and reads == ["decode"]
    for lib in build.LIBRARIES:
        assert {build.LIBRARIES[lib], build.HEADER} == set(real(lib))


def test_sources_present_and_kernel_names():
    import re

    for tu in build.LIBRARIES.values():
        text = (build.NATIVE_DIR / tu).read_text()
        assert '#include "ppu_attn_common.cuh"' in text
        names = re.findall(r"__global__\s+void\s+(?:__launch_bounds__\([^)]*\)\s+)?(\w+)", text)
        assert names and all(n.startswith("atrex_ppu_") for n in names), (tu, names)
        assert "asm" not in re.sub(r"//.*", "", text)
    assert "atrex_ppu_attn_general" in (build.NATIVE_DIR / "prefill_general.cu").read_text()


# ---- capture ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("runner", [launch.run_decode, launch.run_prefill])
def test_capture_without_prewarm_raises_before_launch(monkeypatch, runner):
    monkeypatch.setattr(build, "_loaded", {})
    out = torch.full((3, 8, 256), 7.0, dtype=torch.bfloat16)
    call = make_call(out=out)._replace(capturing=True)
    rec = OpRecorder()
    with pytest.raises(AtrexCaptureError, match="prewarm"), rec:
        runner(call, out)
    assert rec.ops == []
    assert (out == 7.0).all()
