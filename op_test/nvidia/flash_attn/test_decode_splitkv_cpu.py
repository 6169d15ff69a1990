"""CPU tier of ``nvidia.decode_splitkv``: registration, the check table (both sides of every rule of
TARGETS §2.1, every reason naming its argument, no aten op), the graph-static split rule, the capture
guard, and the Triton kernels themselves under ``TRITON_INTERPRET=1`` against the core reference.

The interpreter runs in a subprocess (the variable must be set before ``triton.jit`` decorates and must
not leak into other tests), with the two bf16 gaps of the interpreter patched there only, as in
``op_test/nvidia/chunk_gdn/test_chunk_gdn_triton_interpret.py``.
"""

import os
import textwrap

import pytest
import torch

from atrex.api.flash_attn import normalize_flash_attn_call
from atrex.dispatch.registry import get_registry
from atrex.dispatch.target import DeviceTarget
from atrex.errors import AtrexCaptureError
from atrex.inputs import attn_inputs
from atrex.plugin import validate_manifest
from atrex_nvidia import _plugin
from atrex_nvidia.flash_attn.sm90.decode_splitkv import impl, launch
from atrex_nvidia.triton_warm import WarmRecord
from testlib import OpRecorder, run_result_script

SM90 = DeviceTarget("nvidia", "sm90", "NVIDIA H200", (9, 0), "cuda 13.0", 132, False, 0)
SM100 = DeviceTarget("nvidia", "sm100", "NVIDIA B200", (10, 0), "cuda 13.0", 148, False, 0)


def mk(q_lens=(1, 1), k_lens=(40, 70), target=SM90, **kw):
    kw.setdefault("head_dim", 64)
    kw.setdefault("page_size", 16)
    call = normalize_flash_attn_call(**attn_inputs(list(q_lens), list(k_lens), **kw))
    return call._replace(target=target)


def reasons(call):
    rec = OpRecorder()
    with rec:
        elig = impl.check(call)
    assert rec.ops == [], f"check ran tensor ops: {rec.ops}"
    return {(r.code, r.argument) for r in elig.reasons}


# ---- registration -------------------------------------------------------------------------------

def test_registered_after_fa4_on_sm90():
    man = _plugin.plugin()
    assert validate_manifest(man, "nvidia") == []
    spec = next(s for s in man.impls if s.id == "nvidia.decode_splitkv")
    fa4 = next(s for s in man.impls if s.id == "nvidia.fa4")
    assert spec.op == "flash_attn_varlen" and spec.archs == ("nvidia/sm90",)
    assert spec.prewarm and spec.summary and spec.priority > fa4.priority
    order = [i.id for i in get_registry().all_candidates("flash_attn_varlen", "nvidia/sm90")]
    assert order.index("nvidia.fa4") < order.index("nvidia.decode_splitkv") < order.index("core.reference")
    assert "nvidia.decode_splitkv" not in [i.id for i in get_registry().all_candidates("flash_attn_varlen",
                                                                                      "nvidia/sm100")]


def test_kernel_names_prefixed():
    from atrex_nvidia.flash_attn.sm90.decode_splitkv import kernels

    names = [n for n, f in vars(kernels).items() if hasattr(f, "run") and hasattr(f, "fn")]
    assert names and all(n.startswith("atrex_sm90_decode_") for n in names)


# ---- the check table ----------------------------------------------------------------------------

@pytest.mark.parametrize("kw", [
    dict(dtype=torch.float16), dict(dtype=torch.bfloat16), dict(dtype=torch.float8_e4m3fn),
    dict(head_dim=8), dict(head_dim=40), dict(head_dim=72), dict(head_dim=256),
    dict(page_size=1), dict(page_size=480), dict(num_heads_q=16, num_heads_k=16),
    dict(num_heads_q=16, num_heads_k=1), dict(q_lens=(16, 3)), dict(sinks=True), dict(softcap=30.0),
    dict(window_size=(7, 0)), dict(window_size=(5, -1), causal=False), dict(return_lse=True), dict(out=True),
])
def test_accepts(kw):
    assert reasons(mk(**kw)) == set()


def test_fp32_sinks_accepted_fp16_declined():
    call = mk(sinks=True)
    assert reasons(call._replace(s_aux=call.s_aux.float())) == set()
    assert reasons(call._replace(s_aux=call.s_aux.half())) == {("sinks", "s_aux")}


@pytest.mark.parametrize("kw,want", [
    (dict(target=SM100), {("target", "q")}),
    (dict(page_size=None), {("paged", "cu_seqlens_k")}),
    (dict(dtype=torch.float32), {("dtype", "q")}),
    (dict(dtype=torch.float8_e5m2), {("dtype", "q")}),
    (dict(head_dim=4), {("head_dim", "q")}),
    (dict(head_dim=12), {("head_dim", "q")}),
    (dict(head_dim=264), {("head_dim", "q")}),
    (dict(q_lens=(17, 1)), {("max_seqlen_q", "max_seqlen_q")}),
])
def test_declines(kw, want):
    assert reasons(mk(**kw)) == want


def test_every_reason_listed():
    call = mk(target=SM100, page_size=None, dtype=torch.float32, head_dim=12, q_lens=(20, 1))
    assert reasons(call) == {("target", "q"), ("paged", "cu_seqlens_k"), ("dtype", "q"), ("head_dim", "q"),
                             ("max_seqlen_q", "max_seqlen_q")}
    assert all(r.supported for r in impl.check(call).reasons)


# ---- the split rule ---------------------------------------------------------------------------------

def test_split_rule_table():
    assert launch.split_count(1, 8, 1, 8192, 132, 0) == 32  # 256 CTAs, 256 keys each (key floor)
    assert launch.split_count(1, 8, 1, 131072, 132, 0) == 64  # MAX_SPLITS
    assert launch.split_count(8, 8, 1, 8192, 132, 0) == 8  # 512 CTAs: 4 per SM
    assert launch.split_count(32, 8, 1, 4096, 132, 0) == 2
    assert launch.split_count(64, 8, 1, 4096, 132, 0) == 1
    assert launch.split_count(1, 8, 1, 300, 132, 0) == 1  # too few keys to split
    assert launch.split_count(1, 8, 1, 8192, 132, 1) == 1  # 1 honoured
    assert launch.split_count(1, 8, 1, 8192, 132, 5) == 5  # n > 1: an upper bound
    assert launch.split_count(1, 8, 1, 8192, 132, 64) == 32
    assert launch.split_count(1, 1, 1, 1 << 20, 132, 0) == launch.MAX_SPLITS


def test_plan_ignores_seqused_k_values():
    a = mk(q_lens=(1, 1, 1), k_lens=(5000, 17, 0))
    b = a._replace(seqused_k=torch.tensor([1, 4000, 3], dtype=torch.int32))
    assert launch.plan(a) == launch.plan(b)
    assert launch.plan(a._replace(num_splits=1))["splits"] == 1


def test_block_m_covers_group_and_queries():
    for q_len, g, d in [(1, 1, 64), (1, 8, 128), (4, 8, 128), (16, 8, 128), (16, 16, 256), (3, 5, 40)]:
        bm = launch.block_m_for(q_len, g, d)
        assert bm >= 16 and bm & (bm - 1) == 0 and bm <= (128 if d <= 128 else 64)


# ---- capture guard ----------------------------------------------------------------------------------

def test_unwarmed_capture_raises_before_any_tensor_op(monkeypatch):
    monkeypatch.setattr(launch, "WARM", WarmRecord())
    call = mk(return_lse=True)._replace(capturing=True)
    out = torch.empty(call.total_q, call.num_heads_q, call.head_dim, dtype=call.out_dtype)
    rec = OpRecorder()
    with pytest.raises(AtrexCaptureError, match="prewarm"), rec:
        impl.run(call, out)
    assert rec.ops == []
    with pytest.raises(AtrexCaptureError):
        impl.prewarm(call)


# ---- the kernels under the Triton interpreter -------------------------------------------------------

HERE = os.path.dirname(os.path.abspath(__file__))

OPTEST = os.path.abspath(os.path.join(HERE, "..", ".."))  # triton_interp_bf16

_SCRIPT = textwrap.dedent(r'''
    import json, os, sys
    assert os.environ.get("TRITON_INTERPRET") == "1"
    sys.path.insert(0, OPTEST)
    import torch
    import triton_interp_bf16
    triton_interp_bf16.install()

    from atrex.api.flash_attn import normalize_flash_attn_call
    from atrex.inputs import attn_inputs
    from atrex.reference import flash_attn as ref
    from atrex.validation.verify import poison_pages
    from atrex_nvidia.flash_attn.sm90.decode_splitkv import launch

    torch.set_num_threads(2)
    F16, BF16, FP8 = torch.float16, torch.bfloat16, torch.float8_e4m3fn
    CASES = [
        ("q1_gqa4_p16", [1, 1, 1], [200, 17, 1], dict(dtype=F16), 3),
        ("q3_gqa4_p16_bf16", [3, 1], [150, 40], dict(dtype=BF16, return_lse=True), 2),
        ("q1_mha_p1", [1, 2], [70, 33], dict(dtype=F16, num_heads_q=4, num_heads_k=4, page_size=1), 2),
        ("q5_gqa8_p128_window", [5, 2], [300, 9], dict(dtype=BF16, num_heads_q=8, num_heads_k=1, page_size=128,
                                                       window_size=(40, 0), return_lse=True), 3),
        ("q3_window_lr_noncausal_d40", [3, 1], [200, 50], dict(dtype=F16, head_dim=40, causal=False,
                                                               window_size=(30, 4), return_lse=True), 2),
        ("q2_softcap_sinks_bf16", [2, 1, 1], [130, 0, 5], dict(dtype=BF16, softcap=20.0, sinks=True,
                                                              return_lse=True), 2),
        ("q4_sinks_fp32_lse_nosplit", [4, 1], [60, 0], dict(dtype=F16, sinks="fp32", return_lse=True), 1),
        ("q4_causal_sq_gt_sk", [4, 1], [2, 90], dict(dtype=F16, page_size=32, return_lse=True), 2),
        ("q16_gqa16_d256_mblocks", [16, 1], [100, 40], dict(dtype=BF16, num_heads_q=16, num_heads_k=1,
                                                            head_dim=256, page_size=64, return_lse=True), 2),
        ("q1_d72_p64_out", [1, 1], [129, 64], dict(dtype=F16, head_dim=72, page_size=64, out=True), 2),
        ("nan_tail_p16", [1, 3], [37, 50], dict(dtype=F16, poison=float("nan"), return_lse=True), 3),
        ("inf_tail_p16_sinks", [1, 3], [37, 50], dict(dtype=BF16, poison=float("inf"), sinks=True), 3),
        ("fp8_descales", [1, 3], [120, 40], dict(dtype=FP8, return_lse=True), 2),
        ("fp8_stride0_descales_nan_tail", [2, 1], [90, 33], dict(dtype=FP8, expand_descales=True,
                                                                poison=float("nan")), 2),
        ("fp8_no_descales", [1], [77], dict(dtype=FP8, fp8_descales=False), 1),
        ("hnd_layout", [1, 2], [100, 31], dict(dtype=F16, layout="hnd", return_lse=True), 2),
    ]

    def build(q_lens, k_lens, kw):
        kw = dict(kw)
        poison = kw.pop("poison", None)
        layout = kw.pop("layout", None)
        expand = kw.pop("expand_descales", False)
        if kw.get("sinks") == "fp32":
            kw["sinks"] = True
            fp32_sink = True
        else:
            fp32_sink = False
        kw.setdefault("head_dim", 64)
        args = attn_inputs(q_lens, k_lens, **kw)
        if fp32_sink:
            args["s_aux"] = args["s_aux"].float()
        if expand:
            for n in ("q_descale", "k_descale", "v_descale"):
                args[n] = args[n][:1, :1].expand(args[n].shape)
        if layout == "hnd":
            for n in ("k", "v"):
                args[n] = args[n].permute(0, 2, 1, 3).contiguous().permute(0, 2, 1, 3)
        if poison is not None:
            args = poison_pages(args, poison)
        return normalize_flash_attn_call(**args)

    res = {}
    for cid, q_lens, k_lens, kw, splits in CASES:
        call = build(q_lens, k_lens, kw)
        launch.SPLITS_OVERRIDE = splits
        out = torch.full((call.total_q, call.num_heads_q, call.head_dim), float("nan"), dtype=call.out_dtype)
        if call.out is not None:
            out = call.out
        lse = launch.decode(call, out)
        out2 = torch.empty_like(out)
        lse2 = launch.decode(call, out2)
        launch.SPLITS_OVERRIDE = None
        rout = torch.empty(out.shape, dtype=torch.float32)
        rlse = ref.run(call, rout)
        o, r = out.float(), rout
        fp8 = call.is_fp8
        atol, rtol = (3e-2, 5e-2) if fp8 else (1.5e-2, 1e-2)
        excess = ((o - r).abs() - (atol + rtol * r.abs())).max().item()
        item = dict(excess=excess, nan=bool(o.isnan().any()), dtype=str(out.dtype),
                    deterministic=bool(torch.equal(out.view(torch.int16), out2.view(torch.int16))))
        if lse is not None:
            item["neginf_same"] = bool(torch.equal(torch.isneginf(lse), torch.isneginf(rlse)))
            fin = torch.isfinite(rlse)
            item["lse_err"] = (lse[fin] - rlse[fin]).abs().max().item() if fin.any() else 0.0
            item["deterministic"] &= bool(torch.equal(lse, lse2))
        res[cid] = item
    print("RESULT " + json.dumps(res))
''').replace("OPTEST", repr(OPTEST))


@pytest.fixture(scope="module")
def interpreted():
    pytest.importorskip("triton")
    pytest.importorskip("numpy")
    return run_result_script(_SCRIPT, set_env={"TRITON_INTERPRET": "1"}, cwd=HERE, what="interpreter subprocess")


def test_interpreted_kernels_match_reference(interpreted):
    assert len(interpreted) == 16
    bad = {k: v for k, v in interpreted.items() if v["excess"] > 0 or v["nan"]}
    assert not bad, f"outside CONTRACTS §4.1 tolerances: {bad}"


def test_interpreted_lse(interpreted):
    with_lse = {k: v for k, v in interpreted.items() if "lse_err" in v}
    assert len(with_lse) >= 8
    bad = {k: v for k, v in with_lse.items() if not v["neginf_same"] or v["lse_err"] > 2e-3}
    assert not bad, f"LSE: {bad}"


def test_interpreted_deterministic_and_dtypes(interpreted):
    assert all(v["deterministic"] for v in interpreted.values())
    assert interpreted["fp8_descales"]["dtype"] == "torch.bfloat16"


def test_interpreter_env_did_not_leak():
    assert os.environ.get("TRITON_INTERPRET") in (None, "", "0")
