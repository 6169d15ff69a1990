"""CPU tier of ``nvidia.decode_splitkv``: registration, the check table (both sides of every rule,
every reason naming its argument, no aten op), the graph-static split rule, the capture
guard, and the Triton kernels themselves under ``TRITON_INTERPRET=1`` against the float64 oracle
(``testlib.attn_mismatches``: NaN-aware, elementwise and relative to the output's magnitude), plus the proof
that this comparison rejects a 1% scale error, the oldest 1% of keys dropped and a single NaN.

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
from testlib import OpRecorder, attn_mismatches, attn_oracle, run_result_script

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

    # launched kernels (public JIT functions; the underscore helpers are inlined into them)
    names = [n for n, f in vars(kernels).items() if hasattr(f, "run") and hasattr(f, "fn") and not n.startswith("_")]
    assert sorted(names) == ["atrex_sm90_decode_combine", "atrex_sm90_decode_splitkv"]


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
        ("bad_block_ids", [1, 2], [200, 40], dict(dtype=F16, bad="blocks", return_lse=True), 3),
        ("bad_seqused_past_table", [2, 1], [150, 30], dict(dtype=BF16, bad="seqused", page_size=32), 2),
        ("bad_cu_q_past_end", [1, 3], [90, 60], dict(dtype=F16, bad="cu_end", return_lse=True), 2),
    ]

    def make_bad(bad, args, call):
        """Metadata the GPU value checks are off for, applied past normalisation (the CPU checks would refuse it),
        and the kwargs with the values the kernel clamps them to (what the oracle must agree with)."""
        nb, page = args["k"].shape[0], args["k"].shape[1]
        bt, sk, cu = args["block_table"].clone(), args["seqused_k"].clone(), args["cu_seqlens_q"].clone()
        if bad == "blocks":
            bt[0, 1], bt[1, 0] = nb + 1000, -7
            call = call._replace(block_table=bt)
        elif bad == "seqused":
            sk[0] = bt.shape[1] * page + 100
            call = call._replace(seqused_k=sk)
        else:
            cu[-1] = cu[-1] + 40
            call = call._replace(cu_seqlens_q=cu)
        clamped = dict(block_table=bt.clamp(0, nb - 1), seqused_k=sk.clamp(0, bt.shape[1] * page),
                       cu_seqlens_q=cu.clamp(max=int(args["q"].shape[0])))
        return dict(args, **clamped), call

    def build(q_lens, k_lens, kw):
        kw = dict(kw)
        bad = kw.pop("bad", None)
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
        call = normalize_flash_attn_call(**args)
        return make_bad(bad, args, call) if bad else (args, call)

    res, saved = {}, {}
    for cid, q_lens, k_lens, kw, splits in CASES:
        args, call = build(q_lens, k_lens, kw)
        out = torch.full((call.total_q, call.num_heads_q, call.head_dim), float("nan"), dtype=call.out_dtype)
        if call.out is not None:
            out = call.out
        lse = launch.decode(call, out, splits=splits)
        out2 = torch.empty_like(out)
        lse2 = launch.decode(call, out2, splits=splits)
        det = bool(torch.equal(out.view(torch.int16), out2.view(torch.int16)))
        if lse is not None:
            det &= bool(torch.equal(lse, lse2))
        res[cid] = dict(dtype=str(out.dtype), deterministic=det, has_lse=lse is not None)
        saved[cid] = dict(args={n: x for n, x in args.items() if n != "out"}, out=out.clone(), lse=lse)
    torch.save(saved, SAVE)
    print("RESULT " + json.dumps(res))
''').replace("OPTEST", repr(OPTEST))


@pytest.fixture(scope="module")
def interpreted(tmp_path_factory):
    """{case: dict(args, out, lse, dtype, deterministic, oracle=(out, lse))}: the kernels' results from the
    interpreter subprocess, with the float64 oracle of the same inputs computed here."""
    pytest.importorskip("triton")
    pytest.importorskip("numpy")
    save = str(tmp_path_factory.mktemp("decode_interp") / "results.pt")
    meta = run_result_script(_SCRIPT.replace("SAVE", repr(save)), set_env={"TRITON_INTERPRET": "1"}, cwd=HERE,
                             what="interpreter subprocess")
    saved = torch.load(save, weights_only=False)
    assert set(saved) == set(meta)
    return {cid: dict(saved[cid], **meta[cid], oracle=attn_oracle(saved[cid]["args"])) for cid in meta}


def _fp8(item):
    return item["args"]["q"].dtype == torch.float8_e4m3fn


def test_interpreted_kernels_match_the_float64_oracle(interpreted):
    """Output (NaN-aware, the elementwise tolerances of docs/flash_attn_varlen_func.md and relative to the
    output's magnitude) and
    LSE of every interpreted case against the float64 oracle."""
    assert len(interpreted) == 19
    assert sum(v["has_lse"] for v in interpreted.values()) >= 8
    bad = {cid: attn_mismatches(v["out"], v["lse"], *v["oracle"], fp8=_fp8(v)) for cid, v in interpreted.items()}
    bad = {k: v for k, v in bad.items() if v}
    assert not bad, f"outside the contract: {bad}"


def test_interpreted_deterministic_and_dtypes(interpreted):
    assert all(v["deterministic"] for v in interpreted.values())
    assert interpreted["fp8_descales"]["dtype"] == "torch.bfloat16"


# ---- the comparison rejects the bugs it is meant to catch (mutations of real results) -----------------

def _mutants(out, lse, ref_out, ref_lse, args):
    """name -> (out, lse, ref_out, ref_lse): a real result ``out`` / ``lse`` with one injected bug, against the
    float64 oracle ``ref_out`` / ``ref_lse`` of the call ``args``."""
    m = {
        "scale_1.01": ((out.double() * 1.01).to(out.dtype), lse, ref_out, ref_lse),
        "scale_0.99": ((out.double() * 0.99).to(out.dtype), lse, ref_out, ref_lse),
        "scale_1.2": ((out.double() * 1.2).to(out.dtype), lse, ref_out, ref_lse),
        "nan_one_element": (out.clone().view(-1).index_fill_(0, torch.tensor([out.numel() // 2]), float("nan"))
                            .view(out.shape), lse, ref_out, ref_lse),
    }
    drop_out, drop_lse = attn_oracle(args, drop_oldest=0.01)
    if not torch.equal(drop_out, ref_out):  # the case has a sequence of >= 100 keys whose oldest keys are visible
        # the real result judged against the oracle of the same call with the oldest 1% of keys dropped,
        # and the dropped oracle (rounded as the kernel rounds) judged against the true one
        m["drop_oldest_1pct_kernel"] = (out, lse, drop_out, None if lse is None else drop_lse)
        m["drop_oldest_1pct_oracle"] = (drop_out.to(out.dtype), None if lse is None else drop_lse.float(),
                                        ref_out, ref_lse)
    if lse is not None:
        m["lse_nan"] = (out, lse.clone().index_fill_(1, torch.tensor([0]), float("nan")), ref_out, ref_lse)
    return m


#: mutation -> the checks of ``testlib.attn_mismatches`` that must reject it (in every case where it applies)
MUST_CATCH = {
    "scale_1.01": {"rel_rms"}, "scale_0.99": {"rel_rms"}, "scale_1.2": {"rel_rms", "rel_max"},
    "nan_one_element": {"nan"}, "lse_nan": {"nan"},
    "drop_oldest_1pct_kernel": {"rel_rms", "rel_max"}, "drop_oldest_1pct_oracle": {"rel_rms", "rel_max"},
}


def _assert_all_caught(results: dict) -> dict:
    """``results``: {case: (out, lse, args, ref_out, ref_lse)} of real results that pass. Every mutation is
    rejected by the checks MUST_CATCH names; returns {mutation: [checks that caught it, per case]}."""
    caught: dict = {}
    for cid, (out, lse, args, ref_out, ref_lse) in results.items():
        fp8 = args["q"].dtype == torch.float8_e4m3fn
        assert attn_mismatches(out, lse, ref_out, ref_lse, fp8=fp8) == [], cid
        for name, (o, lse_m, r, rl) in _mutants(out, lse, ref_out, ref_lse, args).items():
            checks = {b.split(":")[0] for b in attn_mismatches(o, lse_m, r, rl, fp8=fp8)}
            missing = MUST_CATCH[name] - checks
            assert not missing, f"{cid}/{name}: not caught by {missing} (caught by {checks or 'nothing'})"
            caught.setdefault(name, []).append(checks)
    for name, sets in caught.items():
        always = set.intersection(*sets)
        print(f"{name}: {len(sets)} cases, caught in all by {sorted(always)}, in some also by "
              f"{sorted(set.union(*sets) - always)}")
    return caught


def test_comparison_rejects_injected_bugs_in_interpreted_results(interpreted):
    """Every mutation of every interpreted case's real kernel result is rejected by the checks MUST_CATCH names
    (a 1% scale either way, the oldest 1% of keys dropped, a single NaN in the output or the LSE), while the
    unmutated results pass."""
    caught = _assert_all_caught({cid: (v["out"], v["lse"], v["args"], *v["oracle"])
                                 for cid, v in interpreted.items()})
    assert len(caught["drop_oldest_1pct_kernel"]) >= 7


@pytest.mark.parametrize("name", ["long_b1_split", "num_splits_1"])
def test_comparison_rejects_injected_bugs_at_long_lengths(name):
    """The two long-KV GPU cases (20000 keys, where |out| ~ 0.009 lies below atol 1.5e-2, and 5000 keys)
    with the core reference's result (fp32, rounded to the output dtype) standing in for the kernel: it
    passes, and every mutation is rejected, although the elementwise check alone misses a 1.2 scale at 20k
    keys and the oldest 1% of keys dropped at both lengths."""
    from _decode_cases import CASES, make

    import atrex

    kw = make(CASES[name], "cpu")
    res = atrex.flash_attn_varlen_func(**dict(kw, out=None))
    out, lse = res if kw.get("return_softmax_lse") else (res, None)
    ref_out, ref_lse = attn_oracle(kw)
    caught = _assert_all_caught({name: (out, lse, kw, ref_out, None if lse is None else ref_lse)})
    assert "elementwise" not in caught["drop_oldest_1pct_kernel"][0]  # what atol 1.5e-2 alone let through
    if name == "long_b1_split":
        assert "elementwise" not in caught["scale_1.2"][0]
