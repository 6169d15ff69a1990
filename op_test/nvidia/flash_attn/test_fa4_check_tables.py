"""CPU tier: ``nvidia.fa4``'s check tables on all four archs and for every supported FA4 release (b19,
b36), both sides of every boundary.

Calls are normalized on CPU tensors and given a faked ``target``; FA4 is never imported (the import
probe is pinned per test, once per release: the ``fa4v`` parameter, ids ``b19`` / ``b36``), kernels
never run. Rules that differ between releases are tested on both sides in the last section.
"""

import dataclasses

import pytest
import torch

from atrex.api.flash_attn import normalize_flash_attn_call
from atrex.dispatch.target import DeviceTarget
from atrex.errors import AtrexCaptureError
from atrex.inputs import attn_inputs
from atrex.plugin import validate_manifest
from atrex_nvidia import _plugin
from atrex_nvidia.flash_attn import fa4
from atrex_nvidia.flash_attn.common_utils import fa4_domain, fa4_launch
from atrex_nvidia.flash_attn.common_utils.fa4_domain import (
    FA4_B19,
    FA4_B36,
    FA4_RECOMMENDED,
    FA4_SUPPORTED,
    FA4_VERSIONS,
    DecodePolicy,
    check_fa4,
    fa4_window,
)
from atrex_nvidia.flash_attn.sm90.fa4_table import TABLES as SM90_TABLES
from atrex_nvidia.flash_attn.sm90.fa4_table import tile_n_sm90
from testlib import OpRecorder

TARGETS = {
    "sm90": DeviceTarget("nvidia", "sm90", "NVIDIA H200", (9, 0), "cuda 13.0", 132, False, 0),
    "sm100": DeviceTarget("nvidia", "sm100", "NVIDIA B200", (10, 0), "cuda 13.0", 148, False, 0),
    "sm103": DeviceTarget("nvidia", "sm103", "NVIDIA B300", (10, 3), "cuda 13.0", 148, False, 0),
    "sm120": DeviceTarget("nvidia", "sm120", "NVIDIA RTX PRO 6000", (12, 0), "cuda 13.0", 188, False, 0),
}
ARCHS = tuple(TARGETS)
FP8 = (torch.float8_e4m3fn, torch.float8_e5m2)


@pytest.fixture(autouse=True, params=FA4_VERSIONS, ids=lambda v: "b" + v.rsplit("b", 1)[-1])
def fa4v(request, monkeypatch):
    """Pretend the probe found this FA4 release importable (the real import is the GPU tier's business)."""
    monkeypatch.setattr(fa4_domain, "_probe_done", True)
    monkeypatch.setattr(fa4_domain, "_probe_reason", None)
    monkeypatch.setattr(fa4_domain, "_probe_version", request.param)
    # sm90's paged TMA-tail policy (tested on its own below, fixture ``tma_policy``) is off here: the table
    # tests check FA4's own asserts, which accept page_size == tile_n
    for v in FA4_VERSIONS:
        monkeypatch.setitem(fa4.TABLES[v], "sm90", dataclasses.replace(SM90_TABLES[v], paged_tma_policy=None))
    fa4._verdicts.clear()
    return request.param


@pytest.fixture
def tma_policy(monkeypatch):
    """The real sm90 tables, paged TMA-tail policy on (after ``fa4v`` switched it off)."""
    for v in FA4_VERSIONS:
        monkeypatch.setitem(fa4.TABLES[v], "sm90", SM90_TABLES[v])
    fa4._verdicts.clear()


def mk(arch="sm90", q_lens=(17, 20), k_lens=(40, 70), **kw):
    # q lengths above 16: sm90's decode policy (tested on its own below) stays out of the table tests
    kw.setdefault("head_dim", 64)
    kw.setdefault("page_size", None)
    call = normalize_flash_attn_call(**attn_inputs(list(q_lens), list(k_lens), **kw))
    return call._replace(target=TARGETS[arch])


def codes(call):
    elig = fa4.check(call)
    return sorted({r.code for r in elig.reasons})


def ok(call):
    elig = fa4.check(call)
    assert elig.ok, str(elig)


# ---- registration -------------------------------------------------------------------------------

def test_manifest_valid_and_fa4_registered():
    man = _plugin.plugin()
    assert validate_manifest(man, "nvidia") == []
    assert isinstance(_plugin.IMPLS, tuple)
    spec = next(s for s in man.impls if s.id == "nvidia.fa4")
    assert spec.op == "flash_attn_varlen" and spec.priority == 100
    assert spec.archs == ("nvidia/sm90", "nvidia/sm100", "nvidia/sm103", "nvidia/sm120")
    assert spec.prewarm and spec.summary
    for table in fa4.TABLES.values():
        assert set(table) == {a.split("/")[1] for a in spec.archs}
    assert set(fa4.TABLES) == set(FA4_VERSIONS) and FA4_RECOMMENDED in FA4_VERSIONS
    assert all(d.fa4_version == v for v, t in fa4.TABLES.items() for d in t.values())


def test_other_targets_declined():
    call = mk()._replace(target=DeviceTarget("nvidia", "sm89", "NVIDIA L40S", (8, 9), "cuda 13.0"))
    assert codes(call) == ["target"]
    assert codes(mk()._replace(target=DeviceTarget("ppu", "sm90", "ZW-M890P", (8, 9)))) == ["target"]


# ---- FA4 not importable -------------------------------------------------------------------------

def test_requires_when_fa4_not_importable(monkeypatch):
    fa4_domain.reset_fa4_probe()
    monkeypatch.setattr(fa4_domain, "FA4_MODULE", "atrex_no_such_module.cute")
    for arch in ARCHS:
        elig = fa4.check(mk(arch))
        assert not elig.ok
        (r,) = elig.reasons
        assert r.code == "requires" and "importable" in r.supported and "flash-attn-4==" in r.supported
    # probed once, cached: a later "fix" is not seen until reset
    monkeypatch.setattr(fa4_domain, "FA4_MODULE", "json")
    assert codes(mk()) == ["requires"]
    fa4_domain.reset_fa4_probe()
    assert fa4.check(mk()).ok


@pytest.mark.parametrize("other", ["4.0.0b18", "4.0.0b30", "4.0.0b37", "4.0.0"])
def test_unknown_version_declined_with_the_supported_list(monkeypatch, other):
    import importlib.metadata as md

    fa4_domain.reset_fa4_probe()
    real = md.version
    monkeypatch.setattr(md, "version", lambda d: other if d == fa4_domain.FA4_DIST else real(d))
    r = fa4.check(mk()).reasons
    assert [x.code for x in r] == ["requires"] and r[0].got == f"flash-attn-4=={other}"
    assert "flash-attn-4==4.0.0b19 or flash-attn-4==4.0.0b36" in r[0].supported
    assert fa4_domain.fa4_table_version() == FA4_RECOMMENDED  # other reasons listed from its tables
    assert codes(mk("sm120", page_size=16)) == ["paged", "requires"]


def test_requires_not_installed(monkeypatch):
    fa4_domain.reset_fa4_probe()
    monkeypatch.setattr(fa4_domain, "FA4_DIST", "atrex-no-such-dist")
    assert codes(mk()) == ["requires"]


def test_requires_listed_with_other_reasons(monkeypatch):
    monkeypatch.setattr(fa4_domain, "_probe_reason", fa4_domain.Reason("requires", "flash_attn.cute", "x",
                                                                       FA4_SUPPORTED))
    assert codes(mk("sm120", page_size=16)) == ["paged", "requires"]


# ---- dtypes ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_dtypes_everywhere(arch, dtype):
    ok(mk(arch, dtype=dtype))


@pytest.mark.parametrize("arch", ARCHS)
def test_fp32_declined(arch):
    assert codes(mk(arch, dtype=torch.float32)) == ["dtype"]


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("dtype", FP8)
def test_fp8_only_on_10x(arch, dtype):
    call = mk(arch, dtype=dtype, head_dim=128)
    if arch in ("sm100", "sm103"):
        ok(call)
        ok(mk(arch, dtype=dtype, head_dim=128, fp8_descales=False))
    else:
        assert codes(call) == ["dtype"]


@pytest.mark.parametrize("arch", ["sm100", "sm103"])
def test_fp8_head_dim_multiple_of_16(arch):
    ok(mk(arch, dtype=torch.float8_e4m3fn, head_dim=112))
    assert codes(mk(arch, dtype=torch.float8_e4m3fn, head_dim=120)) == ["head_dim"]
    ok(mk(arch, dtype=torch.bfloat16, head_dim=120))


# ---- head dims ------------------------------------------------------------------------------------

@pytest.mark.parametrize("arch,lo,hi", [("sm90", 8, 256), ("sm100", 8, 128), ("sm103", 8, 128),
                                        ("sm120", 8, 128)])
def test_head_dim_range(arch, lo, hi):
    ok(mk(arch, head_dim=lo))
    ok(mk(arch, head_dim=hi))
    assert codes(mk(arch, head_dim=hi + 8)) == ["head_dim"]
    assert "head_dim" in codes(mk(arch, head_dim=4))
    assert codes(mk(arch, head_dim=44)) == ["head_dim"]  # not a multiple of 8
    ok(mk(arch, head_dim=40))
    ok(mk(arch, head_dim=72))


@pytest.mark.parametrize("arch", ["sm100", "sm103"])
def test_hd256_dedicated_kernel_envelope(arch, fa4v):
    if fa4v == FA4_B36:  # b36 has no dedicated D=256 kernel (more in test_b36_10x_d256_declined)
        assert codes(mk(arch, head_dim=256)) == ["head_dim"]
        return
    ok(mk(arch, head_dim=256))
    ok(mk(arch, head_dim=256, causal=False))
    ok(mk(arch, head_dim=256, return_lse=True))
    assert codes(mk(arch, head_dim=256, page_size=16)) == ["paged"]
    assert codes(mk(arch, head_dim=256, page_size=128)) == ["paged"]
    assert codes(mk(arch, head_dim=256, softcap=30.0)) == ["softcap"]
    assert codes(mk(arch, head_dim=256, sinks=True)) == ["sinks"]
    assert codes(mk(arch, head_dim=256, window_size=(63, 0))) == ["window"]
    assert codes(mk(arch, head_dim=256, dtype=torch.float8_e4m3fn)) == ["dtype"]
    assert codes(mk(arch, head_dim=248)) == ["head_dim"]


def test_sm90_d256_generic_kernel():
    ok(mk("sm90", head_dim=256, softcap=30.0, sinks=True, window_size=(63, 0), return_lse=True))
    ok(mk("sm90", head_dim=256, page_size=80))  # page == tile_n: TMA path
    ok(mk("sm90", head_dim=256, page_size=64, window_size=(31, 0)))  # local: tile_n 64


@pytest.mark.parametrize("d,page,causal,window", [
    (256, 16, True, None), (256, 128, True, None), (256, 16, False, None), (256, 80, True, (31, 0)),
    (192, 16, True, None), (144, 128, True, None), (160, 112, True, (31, 0)),
    (80, 16, False, None), (96, 64, False, None),  # tile_n 144: rows 128..143 would lack a page entry
])
def test_sm90_cpasync_paging_needs_tile_n_128(d, page, causal, window, fa4v):
    if fa4v == FA4_B36:  # b36 gives each producer thread ceil(tile_n / 128) page entries
        ok(mk("sm90", head_dim=d, page_size=page, causal=causal, window_size=window))
        return
    assert codes(mk("sm90", head_dim=d, page_size=page, causal=causal, window_size=window)) == ["page_size"]


@pytest.mark.parametrize("d,page,causal,window", [
    (256, 80, True, None), (256, 80, False, None), (256, 64, True, (31, 0)), (192, 112, True, None),
    (160, 96, False, (31, 31)), (80, 16, True, None), (96, 64, False, (31, 31)), (80, 144, False, None),
    (128, 16, False, None), (64, 16, False, None),
])
def test_sm90_paging_accepted(d, page, causal, window):
    ok(mk("sm90", head_dim=d, page_size=page, causal=causal, window_size=window))


def test_sm120_d256_declined():
    assert codes(mk("sm120", head_dim=256)) == ["head_dim"]
    assert codes(mk("sm120", head_dim=136)) == ["head_dim"]


# ---- paged KV -------------------------------------------------------------------------------------

def test_sm90_tile_n_table():
    # FA4 b19 _tile_size_fwd_sm90 with Dv = D
    assert [tile_n_sm90(d, False, False) for d in (64, 96, 128, 192, 256)] == [128, 144, 128, 112, 80]
    assert [tile_n_sm90(d, True, False) for d in (64, 96, 128, 192, 256)] == [128, 128, 128, 112, 80]
    assert [tile_n_sm90(d, False, True) for d in (64, 96, 128, 192, 256)] == [128, 128, 128, 96, 64]


@pytest.mark.parametrize("arch", ["sm90", "sm100", "sm103"])
@pytest.mark.parametrize("page", [16, 32, 48, 64, 128, 256, 480, 4224])
@pytest.mark.parametrize("d", [64, 80, 128])
def test_paged_regular_head_dims_any_page(arch, page, d):
    ok(mk(arch, head_dim=d, page_size=page))


@pytest.mark.parametrize("arch", ["sm90", "sm100", "sm103"])
@pytest.mark.parametrize("d", [40, 72, 88])
def test_paged_irregular_head_dim_needs_tma_page(arch, d):
    assert codes(mk(arch, head_dim=d, page_size=16)) == ["head_dim"]
    assert codes(mk(arch, head_dim=d, page_size=64)) == ["head_dim"]
    ok(mk(arch, head_dim=d, page_size=None))  # non-paged is fine
    ok(mk(arch, head_dim=d, page_size=128, causal=True))  # page == tile_n -> TMA path


def test_sm90_tma_page_depends_on_mask():
    # D = 72: tile_n 144 non-causal, 128 causal or local
    ok(mk("sm90", head_dim=72, page_size=144, causal=False))
    assert codes(mk("sm90", head_dim=72, page_size=128, causal=False)) == ["head_dim"]
    ok(mk("sm90", head_dim=72, page_size=128, causal=False, window_size=(31, 31)))
    assert codes(mk("sm90", head_dim=72, page_size=144, causal=True)) == ["head_dim"]
    # D = 200 (> 192): tile 80, 64 if local
    ok(mk("sm90", head_dim=200, page_size=80))
    assert codes(mk("sm90", head_dim=200, page_size=64)) == ["head_dim"]
    ok(mk("sm90", head_dim=200, page_size=64, window_size=(15, 0)))
    ok(mk("sm90", head_dim=256, page_size=80))


def test_sm10x_tma_page_is_128():
    ok(mk("sm100", head_dim=72, page_size=128, causal=False))
    assert codes(mk("sm100", head_dim=72, page_size=144, causal=False)) == ["head_dim"]


@pytest.mark.parametrize("page", [16, 64, 128])
def test_sm120_no_paged(page):
    assert codes(mk("sm120", page_size=page)) == ["paged"]
    ok(mk("sm120", page_size=None))


# ---- options --------------------------------------------------------------------------------------

@pytest.mark.parametrize("arch", ["sm90", "sm100", "sm103"])
def test_sinks_dtypes(arch, fa4v):
    ok(mk(arch, sinks=True))
    call = mk(arch, sinks=True)
    for other in (call.s_aux.float(), call.s_aux.half()):
        if fa4v == FA4_B19:  # b19 asserts learnable_sink.dtype == torch.bfloat16
            assert codes(call._replace(s_aux=other)) == ["sinks"]
            assert fa4.check(call._replace(s_aux=other)).reasons[0].supported == "bfloat16 [num_heads_q]"
        else:  # b36: _LEARNABLE_SINK_DTYPES = (float16, bfloat16, float32)
            ok(call._replace(s_aux=other))
    assert codes(call._replace(s_aux=call.s_aux.to(torch.float64))) == ["sinks"]


def test_sm120_no_sinks():
    assert codes(mk("sm120", sinks=True)) == ["sinks"]


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("window", [None, (-1, -1), (-1, 0), (31, 0), (31, 31), (31, -1), (-1, 7)])
@pytest.mark.parametrize("causal", [False, True])
def test_masks_softcap_lse(arch, window, causal):
    ok(mk(arch, window_size=window, causal=causal, softcap=20.0, return_lse=True))


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("ratio", [1, 2, 4, 6, 8, 12, 16])
def test_any_gqa(arch, ratio):
    ok(mk(arch, num_heads_q=2 * ratio, num_heads_k=2))


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("num_splits", [0, 1, 2, 64])
def test_num_splits_any(arch, num_splits):
    # FA4 is always called with num_splits=1: the answer to 0 and to every upper bound n > 1
    ok(mk(arch)._replace(num_splits=num_splits))


@pytest.mark.parametrize("arch", ARCHS)
def test_capture_is_not_a_check_reason(arch):
    ok(mk(arch)._replace(capturing=True))  # run() raises AtrexCaptureError if not prewarmed


def test_deterministic_accepted():
    ok(mk("sm90")._replace(deterministic=True))


# ---- layouts and alignment (stricter than FA4) -----------------------------------------------------

def test_hnd_permuted_and_interleaved_kv_accepted():
    kw = attn_inputs([17, 20], [40, 70], head_dim=64, page_size=16)
    hnd = kw["k"].permute(0, 2, 1, 3).contiguous().permute(0, 2, 1, 3)
    kv = torch.stack([kw["k"], kw["v"]], dim=2)  # [nb, bs, 2, hk, d]: interleaved K/V rows
    for k, v in ((hnd, hnd.clone()), (kv[:, :, 0], kv[:, :, 1])):
        call = normalize_flash_attn_call(**{**kw, "k": k, "v": v})._replace(target=TARGETS["sm90"])
        ok(call)


def test_misaligned_views_declined():
    kw = attn_inputs([3, 5], [40, 70], head_dim=64, page_size=None)
    q = kw["q"]
    buf = torch.empty(q.numel() + 1, dtype=q.dtype)
    q_off = buf[1:].view(q.shape)
    q_off.copy_(q)
    call = normalize_flash_attn_call(**{**kw, "q": q_off})._replace(target=TARGETS["sm90"])
    assert codes(call) == ["alignment"]
    # a q sliced out of a wider head dim keeps 16-byte strides: fine
    wide = torch.randn(q.shape[0], q.shape[1], 72).to(q.dtype)
    call = normalize_flash_attn_call(**{**kw, "q": wide[..., :64]})._replace(target=TARGETS["sm90"])
    assert fa4.check(call).ok
    # odd row stride: 2-byte elements with a 65-element stride
    odd = torch.randn(q.shape[0], q.shape[1], 65).to(q.dtype)[..., :64]
    call = normalize_flash_attn_call(**{**kw, "q": odd})._replace(target=TARGETS["sm90"])
    assert codes(call) == ["alignment"]


# ---- SM90 decode-shape policy: paged max_seqlen_q <= 16 goes to nvidia.decode_splitkv -------------

def test_sm90_decode_policy_hands_decode_to_splitkv():
    pol = fa4.domains()["sm90"].decode_policy
    assert pol is not None and pol.enabled and pol.max_seqlen_q == 16
    assert pol.goes_to == "nvidia.decode_splitkv"
    call = mk("sm90", q_lens=(1, 1), page_size=16)
    assert codes(call) == ["policy.decode_shape"]
    from atrex.dispatch.registry import get_registry
    assert get_registry().select("flash_attn_varlen", call).id == "nvidia.decode_splitkv"
    ok(mk("sm90", q_lens=(17, 3), page_size=16))  # prefill shapes stay with FA4


def test_sm90_decode_policy_keeps_fa4_when_splitkv_disabled_or_declines(monkeypatch):
    from atrex import env
    from atrex.dispatch.registry import get_registry

    call = mk("sm90", q_lens=(1, 1), page_size=16)
    monkeypatch.setenv("ATREX_DISABLE", "nvidia.decode_splitkv")
    env.reload()
    get_registry()._cands.clear()
    try:
        ok(call)
        assert get_registry().select("flash_attn_varlen", call).id == "nvidia.fa4"
    finally:
        monkeypatch.delenv("ATREX_DISABLE")
        env.reload()
        get_registry()._cands.clear()
    from atrex.eligibility import Eligibility, Reason
    (dimpl,) = [i for i in get_registry().impls if i.id == "nvidia.decode_splitkv"]
    assert dimpl.check(call).ok
    monkeypatch.setattr(dimpl, "_check", lambda c: Eligibility.no(Reason("x", "q", 1, "2")))
    ok(call)


def test_sm90_decode_policy_when_enabled():
    dom = dataclasses.replace(fa4.domains()["sm90"], decode_policy=DecodePolicy(True, 16, "nvidia.decode_splitkv"))
    def c(call):
        return sorted({r.code for r in check_fa4(call, dom).reasons})
    assert c(mk("sm90", q_lens=(1, 1), page_size=16)) == ["policy.decode_shape"]
    assert c(mk("sm90", q_lens=(16, 3), page_size=16)) == ["policy.decode_shape"]
    assert c(mk("sm90", q_lens=(17, 3), page_size=16)) == []
    assert c(mk("sm90", q_lens=(1, 1), page_size=None)) == []  # non-paged: not a decode shape


# ---- SM90 paged TMA-tail policy: page_size == tile_n goes to nvidia.paged_prefill_sm90 --------------

PREFILL = "nvidia.paged_prefill_sm90"


def _select(call):
    from atrex.dispatch.registry import get_registry

    return get_registry().select("flash_attn_varlen", call).id


@pytest.fixture
def disabled(monkeypatch):
    """``disabled("a,b")``: ATREX_DISABLE for the rest of the test (registry candidates recomputed)."""
    from atrex import env
    from atrex.dispatch.registry import get_registry

    def set_(ids):
        monkeypatch.setenv("ATREX_DISABLE", ids)
        env.reload()
        get_registry()._cands.clear()

    yield set_
    monkeypatch.delenv("ATREX_DISABLE", raising=False)
    env.reload()
    get_registry()._cands.clear()


#: (head_dim, page_size, causal, window): page_size == FA4's sm90 tile_n, FA4's TMA paged path
TMA_PAGES = [(128, 128, True, None), (64, 128, False, None), (40, 128, True, None), (72, 128, True, None),
             (72, 144, False, None), (96, 144, False, None), (256, 80, True, None), (256, 64, True, (31, 0)),
             (192, 112, True, None), (160, 96, False, (31, 31))]


@pytest.mark.usefixtures("tma_policy")
@pytest.mark.parametrize("d,page,causal,window", TMA_PAGES)
def test_sm90_tma_tail_policy_hands_tma_pages_to_paged_prefill(d, page, causal, window):
    assert tile_n_sm90(d, causal, window is not None) == page
    pol = fa4.domains()["sm90"].paged_tma_policy
    assert pol is not None and pol.enabled and pol.goes_to == PREFILL
    call = mk("sm90", head_dim=d, page_size=page, causal=causal, window_size=window)
    (r,) = fa4.check(call).reasons
    assert r.code == "policy.paged_tma_tail" and r.argument == "block_table" and PREFILL in r.supported
    assert _select(call) == PREFILL


@pytest.mark.usefixtures("tma_policy")
@pytest.mark.parametrize("d,page,causal,window", [
    (128, 16, True, None), (128, 64, True, None), (128, 256, True, None), (64, 144, True, None),
    (96, 128, False, None), (256, 80, True, (31, 0)), (128, None, True, None), (256, None, True, None)])
def test_sm90_tma_tail_policy_leaves_other_pages_to_fa4(d, page, causal, window, fa4v):
    call = mk("sm90", head_dim=d, page_size=page, causal=causal, window_size=window)
    if fa4v == FA4_B19 and page and tile_n_sm90(d, causal, window is not None) % 128:  # b19 cp.async: 128 | tile_n
        assert codes(call) == ["page_size"]
        return
    ok(call)
    assert _select(call) == "nvidia.fa4"


@pytest.mark.usefixtures("tma_policy")
@pytest.mark.parametrize("arch", ["sm100", "sm103"])
def test_tma_tail_policy_only_on_sm90(arch):
    assert fa4.domains()[arch].paged_tma_policy is None
    ok(mk(arch, head_dim=128, page_size=128))


@pytest.mark.usefixtures("tma_policy")
def test_sm90_tma_tail_policy_keeps_fa4_when_paged_prefill_disabled_or_declines(monkeypatch, disabled):
    from atrex.dispatch.registry import get_registry
    from atrex.eligibility import Eligibility, Reason

    call = mk("sm90", head_dim=128, page_size=128)
    disabled(PREFILL)
    ok(call)
    assert _select(call) == "nvidia.fa4"
    disabled("")
    (pimpl,) = [i for i in get_registry().impls if i.id == PREFILL]
    assert pimpl.check(call).ok
    monkeypatch.setattr(pimpl, "_check", lambda c: Eligibility.no(Reason("x", "q", 1, "2")))
    ok(call)


@pytest.mark.usefixtures("tma_policy")
def test_sm90_decode_shape_on_a_tma_page_names_both_policies(disabled):
    call = mk("sm90", head_dim=128, page_size=128, q_lens=(1, 4))
    assert codes(call) == ["policy.decode_shape", "policy.paged_tma_tail"]
    assert _select(call) == "nvidia.decode_splitkv"
    disabled("nvidia.decode_splitkv")
    assert codes(call) == ["policy.decode_shape", "policy.paged_tma_tail"]
    assert _select(call) == PREFILL
    disabled(f"nvidia.decode_splitkv,{PREFILL}")
    ok(call)
    assert _select(call) == "nvidia.fa4"


@pytest.mark.usefixtures("tma_policy")
def test_sm90_tma_tail_policy_with_a_domain_reason_stays_declined():
    """A call FA4 declines for a domain reason too is not kept by FA4 whoever takes it."""
    call = mk("sm90", head_dim=128, page_size=128, dtype=torch.float8_e4m3fn)
    assert codes(call) == ["dtype", "policy.paged_tma_tail"]
    assert _select(call) == PREFILL


# ---- host-only, the window mapping and the capture error -------------------------------------------

@pytest.mark.parametrize("arch", ARCHS)
def test_check_runs_no_tensor_op(arch):
    call = mk(arch, page_size=None, sinks=arch != "sm120", softcap=5.0, return_lse=True, out=True)
    paged = mk(arch, page_size=16)
    rec = OpRecorder()
    with rec:
        fa4.check(call)
        fa4.check(paged)
    assert rec.ops == []


@pytest.mark.parametrize("window,causal,expect", [
    (None, False, ("none", None, None)),
    ((-1, -1), False, ("none", None, None)),
    ((-1, 0), False, ("causal", None, None)),  # (-1, 0) without causal means causal
    (None, True, ("causal", None, None)),
    ((127, 0), False, ("local", 127, 0)),
    ((127, -1), True, ("local", 127, 0)),  # causal forces the right bound 0
    ((127, 127), False, ("local", 127, 127)),
    ((127, -1), False, ("local", 127, None)),  # never pass -1 to FA4
    ((-1, 5), False, ("local", None, 5)),
])
def test_window_mapping(window, causal, expect):
    assert fa4_window(mk(window_size=window, causal=causal)) == expect


def test_spec_key_separates_binaries():
    base = mk("sm90", page_size=16)
    dom = fa4.domains()["sm90"]
    k0 = fa4_launch.spec_key(base, dom)
    assert fa4_launch.spec_key(mk("sm90", page_size=16, q_lens=(1, 9), k_lens=(3, 500)), dom) == k0
    for other in (mk("sm90", page_size=32), mk("sm90", page_size=None), mk("sm90", page_size=16, softcap=5.0),
                  mk("sm90", page_size=16, sinks=True), mk("sm90", page_size=16, return_lse=True),
                  mk("sm90", page_size=16, causal=False), mk("sm90", page_size=16, window_size=(7, 0)),
                  mk("sm90", page_size=16, window_size=(7, -1), causal=False),
                  mk("sm90", page_size=16, num_heads_q=16), mk("sm90", page_size=16, head_dim=128),
                  mk("sm90", page_size=16, dtype=torch.float16)):
        assert fa4_launch.spec_key(other, dom) != k0
    assert fa4_launch.spec_key(mk("sm90", page_size=16, softcap=5.0), dom) != \
        fa4_launch.spec_key(mk("sm90", page_size=16, softcap=6.0), dom)
    # 10.x: FA4's q_stage reads max_seqlen_q * G against tile_m 128
    d100 = fa4.domains()["sm100"]
    assert fa4_launch.spec_key(mk("sm100", q_lens=(1, 16)), d100) != fa4_launch.spec_key(mk("sm100", q_lens=(1, 40)),
                                                                                         d100)
    assert fa4_launch.spec_key(mk("sm103"), fa4.domains()["sm103"])[0] == 103


@pytest.mark.parametrize("arch", ARCHS)
def test_unwarmed_capture_raises_before_any_tensor_op(arch):
    call = mk(arch, page_size=None, softcap=3.25, out=True)._replace(capturing=True)
    before = call.out.view(torch.int16).clone()
    rec = OpRecorder()
    with pytest.raises(AtrexCaptureError, match="prewarm"), rec:
        fa4.run(call, call.out)
    assert rec.ops == []
    assert torch.equal(before, call.out.view(torch.int16))


# ---- the memoized verdict ---------------------------------------------------------------------------

@pytest.mark.parametrize("arch", ARCHS)
def test_memoized_verdict_equals_a_fresh_check(arch):
    """fa4.check caches its verdict per configuration: it must equal check_fa4 on every call, in any order."""
    variants = []
    for d in (40, 64, 128, 256):
        for page in (None, 16, 80, 128):
            for extra in ({}, {"window_size": [7, 0]}, {"softcap": 30.0}, {"sinks": True}, {"causal": False},
                          {"dtype": torch.float8_e4m3fn}):
                variants.append(mk(arch, head_dim=d, page_size=page, **extra))
    base = mk(arch, head_dim=64)
    shifted = torch.empty(base.q.numel() + 1, dtype=base.q.dtype)[1:].view(base.q.shape)  # 2-byte offset
    shifted.copy_(base.q)
    variants.append(base._replace(q=shifted, aligned16=False))
    fa4._verdicts.clear()
    for _ in range(2):  # second pass is served from the memo
        for call in variants:
            assert fa4.check(call) == check_fa4(call, fa4.domains()[arch])


def test_core_alignment_flag_matches_the_tensors():
    call = mk("sm90", head_dim=64, page_size=16)
    assert call.aligned16
    kw = attn_inputs([3, 5], [40, 70], head_dim=64, page_size=None)
    q = kw["q"]
    shifted = torch.empty(q.numel() + 1, dtype=q.dtype)[1:].view(q.shape)  # 2-byte offset
    shifted.copy_(q)
    assert not normalize_flash_attn_call(**{**kw, "q": shifted}).aligned16
    odd = torch.empty(q.shape[0], q.shape[1], q.shape[2] + 4, dtype=q.dtype)[..., : q.shape[2]]  # row stride 68
    assert not normalize_flash_attn_call(**{**kw, "q": odd}).aligned16


# ---- what differs between the releases' tables -------------------------------------------------------

def _verdicts(version, calls):
    return [check_fa4(c, fa4.TABLES[version][c.target.arch]) for c in calls]


def test_release_tables_differ_only_in_the_derived_rules():
    """Every other rule is the same in b19 and b36: a sweep over head dims, pages, masks and options
    gets the same verdict from both tables, except the calls the three b36 rules below admit."""
    calls = [mk(arch, head_dim=d, page_size=p, **extra)
             for arch in ARCHS for d in (40, 64, 72, 96, 128, 192, 256) for p in (None, 16, 64, 80, 128, 144)
             for extra in ({}, {"causal": False}, {"window_size": (31, 0)}, {"softcap": 5.0},
                           {"sinks": True}, {"dtype": torch.float8_e4m3fn}, {"dtype": torch.float16})]
    differ = set()
    for c, a, b in zip(calls, _verdicts(FA4_B19, calls), _verdicts(FA4_B36, calls)):
        ca, cb = {r.code for r in a.reasons}, {r.code for r in b.reasons}
        if ca == cb:
            continue
        if c.target.arch in ("sm100", "sm103"):  # b36 has no dedicated D=256 kernel
            assert c.head_dim == 256 and cb == {"head_dim"}
            differ.add("10.x D=256")
        else:  # sm90: cp.async paging for tile_n % 128 != 0
            assert c.target.arch == "sm90" and ca - cb == {"page_size"} and cb < ca
            differ.add("sm90 cp.async tile_n")
    assert differ == {"10.x D=256", "sm90 cp.async tile_n"}


def test_b36_sm90_cpasync_paging_any_tile_n():
    b36 = fa4.TABLES[FA4_B36]["sm90"]
    assert b36.paged_cpasync_tile_n_multiple == 1 and fa4.TABLES[FA4_B19]["sm90"].paged_cpasync_tile_n_multiple == 128
    for d, page, causal, window in ((256, 16, True, None), (192, 16, True, None), (80, 16, False, None),
                                    (160, 112, True, (31, 0)), (256, 4224, True, None)):
        call = mk("sm90", head_dim=d, page_size=page, causal=causal, window_size=window)
        assert check_fa4(call, b36).ok
        assert [r.code for r in check_fa4(call, fa4.TABLES[FA4_B19]["sm90"]).reasons] == ["page_size"]
    # still FA4's assert: cp.async paging needs D % 16 == 0 (TMA, page == tile_n, is fine)
    assert [r.code for r in check_fa4(mk("sm90", head_dim=72, page_size=16), b36).reasons] == ["head_dim"]
    assert check_fa4(mk("sm90", head_dim=72, page_size=128), b36).ok


@pytest.mark.parametrize("arch", ["sm100", "sm103"])
def test_b36_10x_d256_declined(arch):
    dom = fa4.TABLES[FA4_B36][arch]
    for kw in ({}, {"causal": False}, {"page_size": 128}, {"dtype": torch.float8_e4m3fn}):
        r = check_fa4(mk(arch, head_dim=256, **kw), dom).reasons
        assert [x.code for x in r] == ["head_dim"] and "or 256" not in r[0].supported
    assert check_fa4(mk(arch, head_dim=128, sinks=True, softcap=3.0, window_size=(31, 0)), dom).ok


def test_b36_keeps_the_12x_and_fp8_asserts():
    b36 = fa4.TABLES[FA4_B36]
    sm120 = [x.code for x in check_fa4(mk("sm120", page_size=16, sinks=True), b36["sm120"]).reasons]
    assert sm120 == ["paged", "sinks"]
    r = check_fa4(mk("sm120", page_size=16), b36["sm120"]).reasons[0]
    assert "FA4 b36 asserts page_table is None" in r.supported
    r = check_fa4(mk("sm90", dtype=torch.float8_e4m3fn, head_dim=128), b36["sm90"]).reasons
    assert [x.code for x in r] == ["dtype"] and "FA4 b36 asserts fp8 only on arch 10.x" in r[0].supported
    assert "FA4 b19" in check_fa4(mk("sm120", page_size=16), fa4.TABLES[FA4_B19]["sm120"]).reasons[0].supported


def test_spec_key_per_release():
    """b19's key is unchanged; b36's adds the sink dtype, batch > 256 (FA4's block-count prefix sum) and
    whether max_seqlen_q * G fits one q_stage * tile_m block (its is_static_persistent flag)."""
    b19, b36 = fa4.TABLES[FA4_B19]["sm90"], fa4.TABLES[FA4_B36]["sm90"]
    call = mk("sm90", page_size=16)
    assert len(fa4_launch.spec_key(call, b19)) == 16
    assert fa4_launch.spec_key(call, b36)[:16] == fa4_launch.spec_key(call, b19)
    many = mk("sm90", page_size=16, q_lens=(1,) * 257, k_lens=(9,) * 257)
    few = mk("sm90", page_size=16, q_lens=(1,) * 256, k_lens=(9,) * 256)
    assert fa4_launch.spec_key(many, b19) == fa4_launch.spec_key(few, b19)
    assert fa4_launch.spec_key(many, b36) != fa4_launch.spec_key(few, b36)
    # D = 64: tile_m 192 on SM90; G = 1 here
    lo, hi = (mk("sm90", head_dim=64, num_heads_q=2, num_heads_k=2, q_lens=(q, 3)) for q in (192, 193))
    assert fa4_launch.spec_key(lo, b19) == fa4_launch.spec_key(hi, b19)
    assert fa4_launch.spec_key(lo, b36)[-1] is True and fa4_launch.spec_key(hi, b36)[-1] is False
    # D = 128: tile_m 128, G = 4 -> max_seqlen_q 32 fits, 33 does not
    lo, hi = (mk("sm90", head_dim=128, num_heads_q=8, num_heads_k=2, q_lens=(q, 3)) for q in (32, 33))
    assert fa4_launch.spec_key(lo, b36)[-1] is True and fa4_launch.spec_key(hi, b36)[-1] is False
    s = mk("sm90", sinks=True)
    assert fa4_launch.spec_key(s, b36) != fa4_launch.spec_key(s._replace(s_aux=s.s_aux.float()), b36)
    # 10.x: q_stage 2 doubles the block (max_seqlen_q * G <= 256)
    d100 = fa4.TABLES[FA4_B36]["sm100"]
    k = [fa4_launch.spec_key(mk("sm100", num_heads_q=4, num_heads_k=2, q_lens=(q, 3)), d100) for q in (64, 65, 128, 129)]
    assert [x[15] for x in k] == [1, 2, 2, 2] and [x[-1] for x in k] == [True, True, True, False]


def test_requires_reason_lists_the_supported_releases(monkeypatch):
    fa4_domain.reset_fa4_probe()
    monkeypatch.setattr(fa4_domain, "FA4_DIST", "atrex-no-such-dist")
    (r,) = fa4.check(mk()).reasons
    assert r.code == "requires" and r.supported.startswith(FA4_SUPPORTED)
