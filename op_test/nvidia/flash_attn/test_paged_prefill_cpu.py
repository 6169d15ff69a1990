"""CPU tier of ``nvidia.paged_prefill_sm90``: registration, the check table (both sides of every rule,
every reason naming its argument, no aten op), dispatch on sm90 beside FA4 and the decode kernel, the
graph-static launch plan and its work-item mapping, the capture guard, and the Triton kernel itself under
``TRITON_INTERPRET=1`` against the float64 oracle and the torch reference (``testlib.attn_mismatches``:
NaN-aware, elementwise and relative to the output's magnitude).

The interpreter runs in a subprocess (the variable must be set before ``triton.jit`` decorates and must
not leak into other tests), with the two bf16 gaps of the interpreter patched there only
(``op_test/triton_interp_bf16.py``).
"""

import math
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
from atrex_nvidia.flash_attn.common_utils import fa4_domain
from atrex_nvidia.flash_attn.sm90.paged_prefill import impl, launch
from atrex_nvidia.triton_warm import WarmRecord
from testlib import OpRecorder, attn_mismatches, attn_oracle, run_result_script

ID = "nvidia.paged_prefill_sm90"
SM90 = DeviceTarget("nvidia", "sm90", "NVIDIA H200", (9, 0), "cuda 13.0", 132, False, 0)
SM100 = DeviceTarget("nvidia", "sm100", "NVIDIA B200", (10, 0), "cuda 13.0", 148, False, 0)


def mk(q_lens=(40, 3), k_lens=(60, 70), target=SM90, **kw):
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

def test_registered_after_fa4_and_decode_on_sm90():
    man = _plugin.plugin()
    assert validate_manifest(man, "nvidia") == []
    spec = next(s for s in man.impls if s.id == ID)
    prio = {s.id: s.priority for s in man.impls}
    assert spec.op == "flash_attn_varlen" and spec.archs == ("nvidia/sm90",)
    assert spec.prewarm and spec.summary
    assert prio["nvidia.fa4"] < prio["nvidia.decode_splitkv"] < spec.priority
    order = [i.id for i in get_registry().all_candidates("flash_attn_varlen", "nvidia/sm90")]
    assert order.index("nvidia.decode_splitkv") < order.index(ID) < order.index("core.reference")
    assert ID not in [i.id for i in get_registry().all_candidates("flash_attn_varlen", "nvidia/sm100")]


def test_kernel_names_prefixed():
    from atrex_nvidia.flash_attn.sm90.paged_prefill import kernels

    names = [n for n, f in vars(kernels).items() if hasattr(f, "run") and hasattr(f, "fn")]
    public = [n for n in names if not n.startswith("_")]
    assert public == ["atrex_sm90_paged_prefill"], names


# ---- the check table ----------------------------------------------------------------------------

@pytest.mark.parametrize("kw", [
    dict(dtype=torch.float16), dict(dtype=torch.bfloat16), dict(dtype=torch.float8_e4m3fn),
    dict(dtype=torch.float8_e4m3fn, fp8_descales=False),
    dict(head_dim=8), dict(head_dim=40), dict(head_dim=72), dict(head_dim=80), dict(head_dim=256),
    dict(page_size=1), dict(page_size=7), dict(page_size=128), dict(page_size=480), dict(page_size=4224),
    dict(num_heads_q=16, num_heads_k=16), dict(num_heads_q=16, num_heads_k=1), dict(num_heads_q=12, num_heads_k=2),
    dict(q_lens=(1, 1)), dict(q_lens=(16, 3)), dict(q_lens=(129, 2000), k_lens=(2011, 2000)),
    dict(sinks=True), dict(softcap=50.0), dict(window_size=(255, 0)), dict(window_size=(5, -1), causal=False),
    dict(window_size=(-1, 3), causal=False), dict(causal=False), dict(return_lse=True), dict(out=True),
])
def test_accepts(kw):
    assert reasons(mk(**kw)) == set()


def test_fp32_sinks_accepted_fp16_declined():
    call = mk(sinks=True)
    assert reasons(call._replace(s_aux=call.s_aux.float())) == set()
    assert reasons(call._replace(s_aux=call.s_aux.half())) == {("sinks", "s_aux")}


def test_num_splits_and_deterministic_accepted():
    call = mk()
    for n in (0, 1, 7):
        assert reasons(call._replace(num_splits=n, deterministic=True)) == set()


@pytest.mark.parametrize("kw,want", [
    (dict(target=SM100), {("target", "q")}),
    (dict(page_size=None), {("paged", "cu_seqlens_k")}),
    (dict(dtype=torch.float32), {("dtype", "q")}),
    (dict(dtype=torch.float8_e5m2), {("dtype", "q")}),
    (dict(head_dim=4), {("head_dim", "q")}),
    (dict(head_dim=12), {("head_dim", "q")}),
    (dict(head_dim=264), {("head_dim", "q")}),
])
def test_declines(kw, want):
    assert reasons(mk(**kw)) == want


def test_every_reason_listed():
    call = mk(target=SM100, page_size=None, dtype=torch.float32, head_dim=12, sinks=True)
    call = call._replace(s_aux=call.s_aux.half())
    assert reasons(call) == {("target", "q"), ("paged", "cu_seqlens_k"), ("dtype", "q"), ("head_dim", "q"),
                             ("sinks", "s_aux")}
    assert all(r.supported for r in impl.check(call).reasons)


# ---- dispatch on sm90 (FA4's import probe pinned: the tables decide, FA4 never runs) --------------------

@pytest.fixture
def fa4_present(monkeypatch):
    from atrex_nvidia.flash_attn import fa4

    monkeypatch.setattr(fa4_domain, "_probe_done", True)
    monkeypatch.setattr(fa4_domain, "_probe_reason", None)
    monkeypatch.setattr(fa4_domain, "_probe_version", fa4_domain.FA4_RECOMMENDED)
    fa4._verdicts.clear()
    yield
    fa4._verdicts.clear()


@pytest.mark.usefixtures("fa4_present")
@pytest.mark.parametrize("kw,want", [
    (dict(head_dim=128, page_size=16), "nvidia.fa4"),  # FA4's cp.async path keeps prefill
    (dict(head_dim=128, page_size=None), "nvidia.fa4"),  # non-paged
    (dict(head_dim=128, page_size=16, q_lens=(1, 16)), "nvidia.decode_splitkv"),  # decode shapes
    (dict(head_dim=128, page_size=128, q_lens=(1, 4)), "nvidia.decode_splitkv"),
    (dict(head_dim=128, page_size=16, dtype=torch.float8_e4m3fn), ID),  # FA4: no fp8 on sm90
    (dict(head_dim=40, page_size=16), ID),  # FA4's cp.async paging needs D % 16 == 0
    (dict(head_dim=72, page_size=32, window_size=(255, 0)), ID),
    (dict(head_dim=128, page_size=128), ID),  # page == tile_n: FA4's TMA path (policy.paged_tma_tail)
    (dict(head_dim=256, page_size=80), ID),
    (dict(head_dim=72, page_size=128), ID),
])
def test_dispatch_on_sm90(kw, want):
    assert get_registry().select("flash_attn_varlen", mk(**kw)).id == want


# ---- the launch plan --------------------------------------------------------------------------------

def test_plan_ignores_device_values():
    a = mk(q_lens=(30, 1, 9), k_lens=(5000, 17, 0))
    b = a._replace(seqused_k=torch.tensor([1, 4000, 3], dtype=torch.int32),
                   cu_seqlens_q=torch.tensor([0, 0, 39, 40], dtype=torch.int32))
    assert launch.plan(a) == launch.plan(b)


@pytest.mark.parametrize("max_q,g,d", [(1, 1, 64), (1, 8, 128), (3, 5, 40), (16, 8, 128), (2000, 1, 72),
                                       (129, 4, 256), (1, 64, 128), (2, 256, 128), (5, 96, 256), (7, 6, 80)])
def test_plan_tile_shapes(max_q, g, d):
    call = mk(q_lens=(max_q, 1), k_lens=(max_q + 5, 9), head_dim=d, num_heads_q=2 * g, num_heads_k=2)
    p = launch.plan(call)
    cap = launch.tile_config(d, 16)[0]
    bm = p["block_m"]
    assert 16 <= bm <= cap and bm & (bm - 1) == 0
    assert p["gs"] <= bm and p["block_q"] * p["gs"] <= bm and p["block_q"] >= 1
    assert p["g_chunks"] * p["gs"] >= g > (p["g_chunks"] - 1) * p["gs"]
    assert p["items"] == call.total_q // p["block_q"] + call.batch
    if max_q * g <= cap:  # the whole query set of a sequence fits one tile
        assert p["block_q"] >= max_q


def _items_of(cu, block_q, total_q, items):
    """The kernel's work-item mapping in Python: pid -> (sequence, tile) or None (early exit)."""
    starts = [min(max(c, 0), total_q) // block_q + b for b, c in enumerate(cu[:-1])]
    got = {}
    for pid in range(items):
        b = max(i for i, s in enumerate(starts) if s <= pid)
        q0 = min(max(cu[b], 0), total_q)
        q_len = min(max(cu[b + 1], q0), total_q) - q0
        tile = pid - starts[b]
        if tile * block_q < q_len:
            assert (b, tile) not in got
            got[(b, tile)] = pid
    return got


@pytest.mark.parametrize("seed", range(6))
def test_work_items_cover_every_tile_once(seed):
    """The grid (total_q // BLOCK_Q + B items) holds every (sequence, query tile) exactly once, for any
    split of the rows (empty sequences and graph padding rows included)."""
    gen = torch.Generator().manual_seed(seed)
    for block_q in (1, 3, 16, 32, 128):
        b = int(torch.randint(1, 9, (1,), generator=gen))
        lens = torch.randint(0, 300, (b,), generator=gen) * torch.randint(0, 2, (b,), generator=gen)
        cu = [0, *torch.cumsum(lens, 0).tolist()]
        total_q = cu[-1] + int(torch.randint(0, 40, (1,), generator=gen))
        got = _items_of(cu, block_q, total_q, total_q // block_q + b)
        want = {(i, t) for i, n in enumerate(lens.tolist()) for t in range(math.ceil(n / block_q))}
        assert set(got) == want


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


# ---- the kernel under the Triton interpreter --------------------------------------------------------

HERE = os.path.dirname(os.path.abspath(__file__))
OPTEST = os.path.abspath(os.path.join(HERE, "..", ".."))  # triton_interp_bf16

_SCRIPT = textwrap.dedent(r'''
    import json, os, sys
    assert os.environ.get("TRITON_INTERPRET") == "1"
    sys.path[:0] = [OPTEST, HERE]
    import torch
    import triton_interp_bf16
    triton_interp_bf16.install()

    from atrex.api.flash_attn import normalize_flash_attn_call
    from atrex_nvidia.flash_attn.sm90.paged_prefill import launch
    from _prefill_cases import INTERP_CASES, build

    torch.set_num_threads(2)
    res, saved = {}, {}
    for cid, case in INTERP_CASES.items():
        args, ref_args = build(case)
        call = normalize_flash_attn_call(**args)
        out = call.out if call.out is not None else torch.full(
            (call.total_q, call.num_heads_q, call.head_dim), float("nan"), dtype=call.out_dtype)
        lse = launch.prefill(call, out, case.get("cfg"))
        det = True
        if case.get("twice"):
            out2 = torch.empty_like(out)
            lse2 = launch.prefill(call, out2, case.get("cfg"))
            det = bool(torch.equal(out.view(torch.uint8), out2.view(torch.uint8)))
            det &= lse is None or bool(torch.equal(lse, lse2))
        res[cid] = dict(dtype=str(out.dtype), deterministic=det, has_lse=lse is not None,
                        plan=launch.plan(call) if case.get("cfg") is None else list(case["cfg"]))
        saved[cid] = dict(ref_args={n: x for n, x in ref_args.items() if n != "out"}, out=out.clone(), lse=lse)
    torch.save(saved, SAVE)
    print("RESULT " + json.dumps(res))
''').replace("OPTEST", repr(OPTEST)).replace("HERE", repr(HERE))


@pytest.fixture(scope="module")
def interpreted(tmp_path_factory):
    """{case: dict(ref_args, out, lse, dtype, deterministic, oracle=(out, lse))}: the kernel's results from the
    interpreter subprocess, with the float64 oracle of the same inputs computed here."""
    pytest.importorskip("triton")
    pytest.importorskip("numpy")
    save = str(tmp_path_factory.mktemp("prefill_interp") / "results.pt")
    meta = run_result_script(_SCRIPT.replace("SAVE", repr(save)), set_env={"TRITON_INTERPRET": "1"}, cwd=HERE,
                             what="interpreter subprocess")
    saved = torch.load(save, weights_only=False)
    assert set(saved) == set(meta)
    return {cid: dict(saved[cid], **meta[cid], oracle=attn_oracle(saved[cid]["ref_args"])) for cid in meta}


def _rows(item):
    return int(item["ref_args"]["cu_seqlens_q"][-1])


def _fp8(item):
    return item["ref_args"]["q"].dtype == torch.float8_e4m3fn


def test_interpreted_kernel_matches_the_float64_oracle(interpreted):
    """Output (NaN-aware, the elementwise tolerances of docs/flash_attn_varlen_func.md and relative to the
    output's magnitude) and LSE of every interpreted case against the float64 oracle."""
    from _prefill_cases import INTERP_CASES

    assert set(interpreted) == set(INTERP_CASES)
    bad = {cid: attn_mismatches(v["out"], v["lse"], *v["oracle"], fp8=_fp8(v), rows=_rows(v))
           for cid, v in interpreted.items()}
    bad = {k: v for k, v in bad.items() if v}
    assert not bad, f"outside the contract: {bad}"


def test_interpreted_kernel_matches_the_torch_reference(interpreted):
    """The same results against ``atrex.reference.flash_attn`` (fp32, rounded to the output dtype)."""
    from atrex.reference.flash_attn import run as reference_run

    bad = {}
    for cid, v in interpreted.items():
        call = normalize_flash_attn_call(**v["ref_args"])
        ref = torch.zeros((call.total_q, call.num_heads_q, call.head_dim), dtype=call.out_dtype)
        ref_lse = reference_run(call, ref)
        got = attn_mismatches(v["out"], v["lse"], ref, ref_lse, fp8=_fp8(v), rows=_rows(v))
        if got:
            bad[cid] = got
    assert not bad, f"kernel vs torch reference: {bad}"


def test_interpreted_cases_cover_the_brief(interpreted):
    from _prefill_cases import INTERP_CASES

    d = {c.get("head_dim", 64) for c in INTERP_CASES.values()}
    pages = {c.get("page_size", 16) for c in INTERP_CASES.values()}
    assert {40, 72, 128, 256} <= d and {1, 16} <= pages and any(p % 2 for p in pages if p > 1)
    assert sum(v["has_lse"] for v in interpreted.values()) >= 10
    assert all(v["deterministic"] for v in interpreted.values())
    assert interpreted["fp8_d72_p7_softcap_sinks"]["dtype"] == "torch.bfloat16"
    # the default plans reached a tile of more than one head and more than one query token
    plans = [v["plan"] for v in interpreted.values() if isinstance(v["plan"], dict)]
    assert any(p["gs"] > 1 and p["block_q"] > 1 for p in plans)
