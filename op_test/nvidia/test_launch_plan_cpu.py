"""CPU tier of the per-call launch plans of ATREX's own Triton kernels (``atrex_nvidia/launch_plan.py``,
``launch_template.py``): each launcher's class key separates every attribute Triton specialises on or the plan
is built from; a reused plan launches the compiled kernel it kept with the new call's pointers and lengths (a
stand-in compiled kernel records the launch); the capture check still fires for a class without a plan; and under
the Triton interpreter (a subprocess) the plan path gives the same bits as a first call, for new inputs of a
class too (``nvidia.decode_splitkv``, ``nvidia.paged_prefill_sm90``, ``nvidia.gdn_decode_sm90``,
``nvidia.gdn_sm90``)."""

import os
import textwrap

import pytest
import torch

from atrex.api.flash_attn import normalize_flash_attn_call
from atrex.api.gdn_decode import normalize_gdn_decode_call
from atrex.dispatch.target import DeviceTarget
from atrex.errors import AtrexCaptureError
from atrex.inputs import attn_inputs, gdn_decode_inputs
from atrex_nvidia import launch_plan
from atrex_nvidia.flash_attn.sm90.decode_splitkv import launch as DL
from atrex_nvidia.flash_attn.sm90.paged_prefill import launch as PL
from atrex_nvidia.gdn_decode.sm90 import launch as GDL
from atrex_nvidia.triton_warm import WarmRecord
from testlib import OpRecorder, run_result_script

SM90 = DeviceTarget("nvidia", "sm90", "NVIDIA H200", (9, 0), "cuda 13.0", 132, False, 0)


def attn(q_lens=(1, 1), k_lens=(40, 70), **kw):
    kw.setdefault("head_dim", 64)
    kw.setdefault("page_size", 16)
    kw.setdefault("out", True)
    args = attn_inputs(list(q_lens), list(k_lens), **kw)
    return normalize_flash_attn_call(**args)._replace(target=SM90)


def misaligned(t):
    """``t``'s values in a view whose pointer is 2 bytes past a 16-byte boundary."""
    flat = torch.empty(t.numel() + 8, dtype=t.dtype)[1:1 + t.numel()]
    return flat.view(t.shape).copy_(t)


# ---- the class keys --------------------------------------------------------------------------------------

def _attn_variants(base_kw):
    base = attn(**base_kw)
    same = [attn(**dict(base_kw, seed=9)), attn(**base_kw)._replace(seqused_k=base.seqused_k + 1)]
    other = {
        "dtype": attn(**dict(base_kw, dtype=torch.float16)),
        "head_dim (constexpr)": attn(**dict(base_kw, head_dim=128)),
        "page (constexpr)": attn(**dict(base_kw, page_size=32)),
        "heads": attn(**dict(base_kw, num_heads_q=16)),
        "total_q == 1": attn(**dict(base_kw, q_lens=(1,), k_lens=(40,))),
        "total_q % 16": attn(**dict(base_kw, q_lens=(8, 8), k_lens=(40, 70))),
        "alignment": base._replace(q=misaligned(base.q)),
        "softcap flag": attn(**dict(base_kw, softcap=5.0)),
        "lse flag": attn(**dict(base_kw, return_lse=True)),
        "sinks": attn(**dict(base_kw, sinks=True)),
        "window": attn(**dict(base_kw, window_size=(8, 0))),
    }
    return base, same, other


@pytest.mark.parametrize("mod", [DL, PL], ids=["decode_splitkv", "paged_prefill"])
def test_attention_class_key(mod):
    base, same, other = _attn_variants(dict(q_lens=(1, 2), k_lens=(40, 70)))
    longer = base._replace(max_seqlen_k=base.max_seqlen_k + 4096)
    if mod is DL:  # the split rule reads max_seqlen_k
        other["max_seqlen_k (split rule)"] = longer
    else:  # the prefill plan never reads it
        same.append(longer)
    key = mod.plan_key(base, base.out)
    for c in same:  # new pointers, contents: one class
        assert mod.plan_key(c, c.out) == key
    assert mod.plan_key(base, base.out.clone()) == key
    keys = {name: mod.plan_key(c, c.out) for name, c in other.items()}
    assert all(k != key for k in keys.values()), [n for n, k in keys.items() if k == key]
    # the class token of the core's memo stands for the layouts; per-call values still separate
    cls = object()
    a = tuple.__new__(type(base), (*base[:-1], cls))
    assert mod.plan_key(a, a.out)[0] is cls
    b = tuple.__new__(type(base), (*base._replace(max_seqlen_q=base.max_seqlen_q + 1)[:-1], cls))
    assert mod.plan_key(b, b.out) != mod.plan_key(a, a.out)


def test_attention_class_key_ignores_lengths_within_their_class():
    a = attn(q_lens=(3, 2), k_lens=(40, 70), num_heads_q=6)
    b = attn(q_lens=(3, 3), k_lens=(70, 40), num_heads_q=6)  # total_q 5 -> 6 (x 6 heads: 30 -> 36), same classes
    assert a.batch == b.batch and DL.plan_key(a, a.out) == DL.plan_key(b, b.out)
    assert PL.plan_key(a, a.out) == PL.plan_key(b, b.out)


def test_decode_key_follows_the_split_rule_not_max_seqlen_k():
    """A decode step that grows ``max_seqlen_k`` keeps its class while the split rule's cap stays; the class changes
    exactly where the plan would (two sequences on 132 SMs: the SM count never caps the split count here)."""
    base = attn(q_lens=(1, 1), k_lens=(300, 700))
    key, p = DL.plan_key(base, base.out), DL.plan(base)
    for msk in range(0, 40000, 97):
        c = base._replace(max_seqlen_k=msk)
        assert (DL.plan_key(c, c.out) == key) == (DL.plan(c) == p), msk


def test_prefill_grid_rule_matches_plan():
    """The plan path computes the grid's first dim per call as ``total_q // block_q + batch`` (plan()'s items)."""
    for q_lens, kw in [((1, 2), {}), ((37, 5, 1), dict(num_heads_q=8, num_heads_k=1)), ((129,), dict(head_dim=256)),
                       ((3, 3, 3, 3), dict(num_heads_q=12, num_heads_k=2))]:
        c = attn(q_lens=q_lens, k_lens=[100] * len(q_lens), **kw)
        p = PL.plan(c)
        assert p["items"] == c.total_q // p["block_q"] + c.batch


def decode_step(**kw):
    kw.setdefault("head_k_dim", 64)
    kw.setdefault("head_v_dim", 64)
    return normalize_gdn_decode_call(**gdn_decode_inputs([1, 1, 1], **kw))._replace(target=SM90)


def test_gdn_decode_class_key():
    base = decode_step()
    assert GDL.plan_key(decode_step(seed=3)) == GDL.plan_key(base)
    other = [decode_step(dtype=torch.float16), decode_step(head_k_dim=128), decode_step(state_v_first=False),
             decode_step(l2norm=False), decode_step(inplace=False), decode_step(pool="bf16"),
             base._replace(q=misaligned(base.q))]
    assert all(GDL.plan_key(c) != GDL.plan_key(base) for c in other)


def test_chunk_gdn_class_key():
    from atrex_nvidia.chunk_gdn.sm90.launch import class_key

    def roots(dtype=torch.bfloat16, T=64, q=None):
        g = torch.Generator().manual_seed(0)
        q = q if q is not None else torch.randn(1, T, 2, 32, generator=g).to(dtype)
        return (q, q.clone(), torch.randn(1, T, 4, 32, generator=g).to(dtype), torch.zeros(1, T, 4),
                torch.ones(1, T, 4), None, None, None, None)

    flags = (True, True, False, False, False, 132, None)
    key = class_key(roots(), None, 0.1, *flags)
    assert class_key(roots(), None, 0.1, *flags) == key
    base = roots()
    others = [class_key(roots(torch.float16), None, 0.1, *flags), class_key(roots(T=65), None, 0.1, *flags),
              class_key(roots(q=misaligned(base[0])), None, 0.1, *flags), class_key(roots(), None, 0.2, *flags),
              class_key(roots(), None, 0.1, False, *flags[1:])]
    assert all(k != key for k in others)


# ---- a reused plan launches its compiled kernel with the new pointers and lengths ------------------------

class _Recorder:
    """A compiled kernel stand-in: what ``CompiledKernel.run`` would receive."""

    def __init__(self):
        self.calls = []
        self.function, self.packed_metadata = "function", "packed"

    def run(self, *args):
        self.calls.append(args)


def test_decode_plan_replays_with_new_pointers_and_lengths(monkeypatch):
    if not launch_plan.replay_supported():
        pytest.skip("this Triton is not one whose compiled kernels launch directly")
    monkeypatch.setattr(DL, "WARM", WarmRecord())
    rec, jit = _Recorder(), []

    def first_through_jit(kernel, grid, tensors, rest, meta):
        jit.append(kernel.__name__)
        return rec

    monkeypatch.setattr(DL, "launch", first_through_jit)
    a = attn(q_lens=(3, 2), k_lens=(40, 70), num_heads_q=6)
    DL.decode(a, a.out, splits=1)
    assert jit == ["atrex_sm90_decode_splitkv"] and rec.calls == [] and DL.WARM.plans() == 1
    b = attn(q_lens=(3, 3), k_lens=(70, 40), num_heads_q=6, seed=5)  # same class: new tensors, total_q, lengths
    DL.decode(b, b.out, splits=1)
    assert jit == ["atrex_sm90_decode_splitkv"] and len(rec.calls) == 1
    got = rec.calls[0]
    lp = DL.WARM.plan(DL.plan_key(b, b.out, None, 1))
    assert got[:3] == (*lp.grid, 1) and got[3] == 0 and got[4:9] == ("function", "packed", None, None, None)
    tensors = DL._main_tensors(lp, b, b.out, None, None, None)
    ptrs = [None if t is None else t.data_ptr() for t in tensors]
    rest = DL._main_rest(lp, b)
    assert list(got[9:9 + len(ptrs)]) == ptrs and got[9 + len(ptrs):9 + len(ptrs) + len(rest)] == rest
    assert rest[17:20] == (b.total_q, b.total_q * 6, b.total_q)
    kernel_params = list(DL._k.atrex_sm90_decode_splitkv.signature.parameters)[len(ptrs) + len(rest):]
    assert got[9 + len(ptrs) + len(rest):] == tuple(lp.meta[p] for p in kernel_params)  # the constexprs
    # a new class (another max_seqlen_k) whose launch keys all launched: its plan takes the kept kernel, no JIT
    c = b._replace(max_seqlen_k=b.max_seqlen_k + 1000)
    DL.decode(c, c.out, splits=1)
    assert jit == ["atrex_sm90_decode_splitkv"] and len(rec.calls) == 2 and DL.WARM.plans() == 2


def _with_cls(call, cls):
    return tuple.__new__(type(call), (*call[:-1], cls))


def test_attention_class_key_of_a_memo_served_record():
    """The short key of a record the core's memo served (its class fixes the layouts): the per-call values still
    separate (``total_q``'s classes, every pointer's alignment, another ``out``'s strides), new tensors and lengths
    within their classes do not."""
    cls = object()
    base = _with_cls(attn(q_lens=(3, 2), k_lens=(40, 70), num_heads_q=6), cls)
    same = [_with_cls(attn(q_lens=(3, 3), k_lens=(70, 40), num_heads_q=6, seed=4), cls)]
    wide = torch.empty(base.out.shape[0], base.out.shape[1], base.out.shape[2] + 8)[..., :base.out.shape[2]]
    other = {
        "total_q == 1": _with_cls(attn(q_lens=(1,), k_lens=(40,), num_heads_q=6), cls),
        "total_q % 16": _with_cls(attn(q_lens=(8, 8), k_lens=(40, 70), num_heads_q=6), cls),
        "seqused_k alignment": base._replace(seqused_k=misaligned(base.seqused_k), cls=cls),
        "table alignment": base._replace(block_table=misaligned(base.block_table), cls=cls),
    }
    for mod in (DL, PL):
        key = mod.plan_key(base, base.out)
        assert key[0] is cls and all(mod.plan_key(c, c.out) == key for c in same)
        other_out = mod.plan_key(base, base.out.clone())  # (the out the core allocates when the call gives none)
        assert other_out == mod.plan_key(base, base.out.clone()) and mod.plan_key(base, wide) != other_out
        keys = {name: mod.plan_key(c, c.out) for name, c in other.items()}
        assert all(k != key for k in keys.values()), [n for n, k in keys.items() if k == key]


class _Rec:
    """A compiled kernel stand-in per launched kernel: records what its launcher receives."""

    def __init__(self, calls, name):
        self.calls, self.name = calls, name
        self.function, self.packed_metadata = "function", "packed"

    def run(self, *args):
        self.calls.append((self.name, args))


def _recorded_jit(monkeypatch, mod, calls):
    """Route ``mod``'s Triton JIT launches to recording stand-ins; returns the list of (kernel, args as a direct
    launch passes them) of each JIT launch."""
    jit = []

    def fake(kernel, grid, tensors, rest, meta):
        ptrs = [None if t is None else t.data_ptr() for t in tensors]
        n = len(tensors) + len(rest)
        tail = [meta[p.name] if p.name in meta else p.default for p in list(kernel.signature.parameters.values())[n:]]
        g = (*grid, 1, 1)
        jit.append((kernel.__name__, (g[0], g[1], g[2], 0, "function", "packed", None, None, None, *ptrs, *rest,
                                      *tail)))
        return _Rec(calls, kernel.__name__)

    monkeypatch.setattr(mod, "launch", fake)
    return jit


_GENERATED = {
    "decode": (DL, lambda c: DL.decode(c, c.out, splits=1), dict(return_lse=True)),
    "decode_split": (DL, lambda c: DL.decode(c, c.out, splits=3), dict(return_lse=True, sinks=True)),
    "decode_fp8": (DL, lambda c: DL.decode(c, c.out, splits=1), dict(dtype=torch.float8_e4m3fn)),
    "prefill": (PL, lambda c: PL.prefill(c, c.out), dict(return_lse=True, softcap=5.0)),
}


@pytest.mark.parametrize("name", list(_GENERATED))
def test_generated_launch_passes_what_the_jit_path_passes(monkeypatch, name):
    """A plan's generated launch function, for a new call of the class (new tensors, ``total_q``, lengths), passes
    each compiled kernel exactly the arguments Triton's JIT path would bind for that call."""
    if not launch_plan.replay_supported():
        pytest.skip("this Triton is not one whose compiled kernels launch directly")
    mod, run, kw = _GENERATED[name]
    monkeypatch.setattr(mod, "WARM", WarmRecord())
    monkeypatch.setattr(launch_plan, "_kept", {})
    calls = []
    jit = _recorded_jit(monkeypatch, mod, calls)
    a = attn(q_lens=(3, 2), k_lens=(40, 70), num_heads_q=6, **kw)
    b = attn(q_lens=(3, 3), k_lens=(70, 40), num_heads_q=6, seed=5, **kw)
    run(a)
    assert calls == [] and mod.WARM.plans() == 1
    first = list(jit)
    run(b)  # the plan path: the generated function
    assert jit == first and [n for n, _ in calls] == [n for n, _ in first]
    got = [args for _, args in calls]
    mod.WARM.clear()
    run(b)  # the JIT path for b: the oracle
    want = [args for _, args in jit[len(first):]]
    # what each path allocates per call (the LSE; the split partials, which the plan path takes from one kept
    # buffer) differs; every other argument must not: main kernel 9 + (10 pointers, out, LSE, partials), combine
    # 9 + (partials, sinks, cu_seqlens_q, out, LSE)
    own = [{9 + 11, 9 + 12, 9 + 13}, {9, 10, 9 + 5}]
    assert [len(g) for g in got] == [len(w) for w in want]
    assert [[x for i, x in enumerate(g) if i not in m] for g, m in zip(got, own)] == \
        [[x for i, x in enumerate(w) if i not in m] for w, m in zip(want, own)]
    if name == "decode_split":  # the partials: two pointers into the stream's kept buffer, 512-byte aligned
        ows, lws = got[0][9 + 12], got[0][9 + 13]
        assert (ows, lws) == got[1][9:11] and (lws - ows) % 512 == 0 and lws - ows >= 3 * 6 * 6 * 64 * 4


def test_generated_gdn_decode_launch_passes_what_the_jit_path_passes(monkeypatch):
    if not launch_plan.replay_supported():
        pytest.skip("this Triton is not one whose compiled kernels launch directly")
    monkeypatch.setattr(GDL, "WARM", WarmRecord())
    calls = []
    jit = _recorded_jit(monkeypatch, GDL, calls)
    a, b = decode_step(), decode_step(seed=5)
    GDL.decode(a)
    GDL.decode(b)
    got = [args for _, args in calls]
    GDL.WARM.clear()
    GDL.decode(b)
    assert len(jit) == 2 and len(got) == 1
    outs = (9 + 5, 9 + 7)  # o and the new state: allocated per call by each path
    assert [x for i, x in enumerate(got[0]) if i not in outs] == [x for i, x in enumerate(jit[1][1]) if i not in outs]


def test_gdn_decode_plan_with_nothing_to_compute_launches_nothing(monkeypatch):
    """A plan whose class has nothing to compute (no output rows, the pool updated in place) launches no kernel,
    even with a compiled kernel and a generated launch kept for its launch key (an empty grid is not a launch)."""
    step = decode_step(inplace=True)
    calls = []
    lp = GDL.new_plan(step)._replace(runs=False, direct=launch_plan.Direct(None, (), (), None),
                                     go=lambda *a: calls.append(a))
    monkeypatch.setattr(GDL, "launch", lambda *a: calls.append(a))
    o, state, compiled = GDL._launch(lp, step)
    assert calls == [] and compiled is None and state is step.pool


def test_direct_launch_steps_aside_for_a_launch_hook():
    if not launch_plan.replay_supported():
        pytest.skip("this Triton is not one whose compiled kernels launch directly")
    d = launch_plan.Direct(lambda *a: None, ("f", "p", None, None, None), (), None)
    assert launch_plan.direct_ready([d]) and launch_plan.go_stream(None) == 0
    chain = launch_plan._RUNTIME.launch_enter_hook
    hook = lambda *a: None
    chain.add(hook)
    try:
        assert not launch_plan.direct_ready([d]) and launch_plan.go_stream(None) is None
    finally:
        chain.remove(hook)
    assert launch_plan.go_stream(None) == 0


def test_int_class():
    assert launch_plan.int_class(1) != launch_plan.int_class(2) != launch_plan.int_class(16)
    assert launch_plan.int_class(3) == launch_plan.int_class(5)
    assert launch_plan.int_class(16) == launch_plan.int_class(32)
    assert launch_plan.int_class(1 << 31) != launch_plan.int_class(1 << 30)


@pytest.mark.parametrize("shape", [(3,), (2, 5, 7), (1, 64, 32, 128), (0, 4), (4, 0, 3), (1, 1), ()])
def test_contiguous_strides_are_torch_empty_strides(shape):
    assert launch_plan.contiguous_strides(shape) == torch.empty(shape).stride()


def test_template_launches_inputs_outputs_and_workspace_views(monkeypatch):
    """A template (chunk_gdn's launch plan) launches each kernel with the new call's input and output pointers and
    its workspace views at the first run's offsets within one buffer; through Triton (no compiled kernel usable) it
    passes views with the first run's dtypes, sizes and strides at the same addresses."""
    from atrex_nvidia import launch_template as LT

    direct_calls, jit_calls = [], []
    direct = launch_plan.Direct(lambda *a: direct_calls.append(a), ("f", "p", None, None, None), ("T",), None)

    class Kernel:  # a JIT kernel stand-in: kernel[grid](*args, **meta)
        __name__ = "k"

        def __getitem__(self, grid):
            return lambda *a, **m: jit_calls.append((grid, a))

    q, g, o = torch.randn(4, 8), torch.randn(4), torch.empty(4, 8)
    ws1, ws2 = torch.empty(100), torch.empty(7, dtype=torch.int32)
    launches = [(Kernel(), (2, 3), (q, 5, ws1[10:], None, o, 0.5), {}), (Kernel(), (1,), (ws2, g, q, 7, ws1), {})]
    tpl = LT.derive(launches, [direct, direct], (q, None, g), (o, None))
    assert tpl is not None and tpl.go is not None and tpl.workspace == 1024
    q2, g2 = q.clone(), g.clone()
    o2, none = tpl.run((q2, None, g2), torch.device("cpu"))
    assert none is None and o2.shape == o.shape and len(direct_calls) == 2
    a, b = direct_calls
    assert a[:9] == (2, 3, 1, 0, "f", "p", None, None, None) and b[:3] == (1, 1, 1)
    assert a[9:] == (q2.data_ptr(), 5, a[11], None, o2.data_ptr(), 0.5, "T")
    assert b[9:] == (b[9], g2.data_ptr(), q2.data_ptr(), 7, b[13], "T")
    assert a[11] - b[13] == 40 and abs(b[9] - b[13]) >= 400  # ws1[10:] and ws1 in one slot, ws2 in another
    # the generated whole run a bound runner calls: the same launches (its own outputs; the stream's kept workspace
    # eagerly, a fresh one otherwise), and nothing allocated or launched for a misaligned root
    monkeypatch.setattr(launch_plan, "_kept", {})
    direct_calls.clear()
    o4, none = tpl.kept((q2, None, g2), torch.device("cpu"), True, 0)
    o5, _ = tpl.kept((q2, None, g2), torch.device("cpu"), False, 0)
    a2, b2, a3, b3 = direct_calls
    assert none is None and o4.shape == o.shape and o4.data_ptr() not in (o2.data_ptr(), o5.data_ptr())
    assert a2[:9] == a[:9] and b2[:9] == b[:9] and a3[:9] == a[:9]
    assert a2[9:] == (q2.data_ptr(), 5, a2[11], None, o4.data_ptr(), 0.5, "T") and a3[13] == o5.data_ptr()
    assert b2[9:] == (b2[9], g2.data_ptr(), q2.data_ptr(), 7, b2[13], "T") and a2[11] - b2[13] == 40
    assert b2[13] == launch_plan._kept[(torch.device("cpu"), 0)].data_ptr() != b3[13]
    direct_calls.clear()
    allocs, q_off = OpRecorder(), misaligned(q2)
    with allocs:
        assert tpl.kept((q_off, None, g2), torch.device("cpu"), True, 0) is launch_plan.MISS
    assert direct_calls == [] and allocs.ops == []
    jit_tpl = tpl._replace(go=None)
    o3, _ = jit_tpl.run((q2, None, g2), torch.device("cpu"))
    (ga, ja), (gb, jb) = jit_calls
    assert ga == (2, 3) and ja[0] is q2 and ja[4] is o3 and ja[1] == 5 and ja[3] is None
    view, whole = ja[2], jb[4]
    assert view.dtype == torch.float32 and view.shape == (90,) and view.data_ptr() - whole.data_ptr() == 40
    assert jb[0].dtype == torch.int32 and jb[0].shape == (7,)


def test_template_refuses_what_it_could_not_rebuild():
    from atrex_nvidia import launch_template as LT

    q = torch.randn(4, 8)
    k = q.view(-1)[:8].view(1, 8)  # an input view inside another input
    launch = [(object(), (1,), (q, q[1:]), {})]
    assert LT.derive(launch, [None], (q,), ()) is None  # a view of an input
    assert LT.derive([(object(), (1,), (q, k), {})], [None], (q, k), ()) is None  # one address


# ---- capture checks still fire --------------------------------------------------------------------------

def test_capture_of_a_class_without_a_plan_raises_before_any_tensor_op(monkeypatch):
    monkeypatch.setattr(DL, "WARM", WarmRecord())
    monkeypatch.setattr(PL, "WARM", WarmRecord())
    monkeypatch.setattr(GDL, "WARM", WarmRecord())
    a = attn(return_lse=True)._replace(capturing=True)
    step = decode_step()._replace(capturing=True)
    rec = OpRecorder()
    with rec:
        for fn in (lambda: DL.decode(a, a.out), lambda: PL.prefill(a, a.out), lambda: GDL.decode(step)):
            with pytest.raises(AtrexCaptureError, match="prewarm"):
                fn()
    assert rec.ops == []


def test_clearing_the_record_drops_the_plans():
    w = WarmRecord()
    w.add([("k",)])
    w.keep_plan(("class",), "plan")
    assert w.plan(("class",)) == "plan"
    w.clear()
    assert w.plan(("class",)) is None and w.plans() == 0


# ---- the runners the core binds per memo class and per-call key (ImplSpec.bind) ----------------------------

def test_kept_runner_serves_the_found_plan_until_missed_cleared_or_hooked():
    warm, log, found = WarmRecord(), [], [None]

    def run(x):
        log.append(("run", x))
        return "ran"

    def go(plan, stream, x):
        if x == "odd":
            return launch_plan.MISS
        log.append(("go", plan, stream, x))
        return "went"

    r = launch_plan.kept_runner(warm, run, lambda x: found[0], go)
    assert r(1) == "ran" and r(2) == "ran"  # no plan found yet
    found[0] = ("plan", None)  # (device None: a CPU stand-in, stream 0)
    assert r(3) == "ran" and r(4) == "went"
    assert r("odd") == "ran"  # a call the plan does not serve: run's path, nothing launched by go
    warm.clear()
    assert r(5) == "ran" and r(6) == "went"  # the cleared plan is dropped, then found again
    hook = lambda *a: None
    chain = launch_plan._RUNTIME.launch_enter_hook if launch_plan._RUNTIME is not None else None
    if chain is not None:
        chain.add(hook)
        try:
            assert r(7) == "ran"  # a profiler's launch hook: Triton's own path
        finally:
            chain.remove(hook)
    assert [e for e in log if e[0] == "go"] == [("go", "plan", 0, 4), ("go", "plan", 0, 6)]


@pytest.mark.parametrize("mod", [DL, PL], ids=["decode_splitkv", "paged_prefill"])
def test_paged_runner_launches_what_the_plan_path_launches(monkeypatch, mod):
    """A paged launcher's runner (``paged_key.runner``) passes the compiled kernels exactly what the plan path
    passes for a new call of the class; a misaligned table and cleared plans take the launcher's own path."""
    if not launch_plan.replay_supported():
        pytest.skip("this Triton is not one whose compiled kernels launch directly")
    from atrex_nvidia.flash_attn.sm90 import paged_key

    monkeypatch.setattr(mod, "WARM", WarmRecord())
    monkeypatch.setattr(launch_plan, "_kept", {})
    calls = []
    jit = _recorded_jit(monkeypatch, mod, calls)
    run = DL.decode if mod is DL else PL.prefill
    ran = []

    def counted(call, out):
        ran.append(call)
        return run(call, out)

    cls = object()
    a = _with_cls(attn(q_lens=(3, 2), k_lens=(40, 70), num_heads_q=6, return_lse=True), cls)
    b = _with_cls(attn(q_lens=(3, 3), k_lens=(70, 40), num_heads_q=6, return_lse=True, seed=5), cls)
    assert a.aligned16 and b.aligned16
    r = paged_key.runner(mod.WARM, counted, mod.plan_key, mod.go, mod.plan_device)
    r(a, a.out)
    n = len(jit)
    assert n and calls == []
    r(b, b.out)
    assert ran == [a]  # b: the runner's kept plan
    by_runner = [args for _, args in calls]
    calls.clear()
    run(b, b.out)  # the launcher's plan path for the same call
    lse = 9 + 11  # (the LSE: allocated per call by both)
    assert len(jit) == n and [x for i, x in enumerate(by_runner[0]) if i != lse] == \
        [x for i, x in enumerate(calls[0][1]) if i != lse] and len(by_runner) == len(calls)
    c = b._replace(block_table=misaligned(b.block_table), cls=cls)
    r(c, c.out)
    assert len(jit) == 2 * n and ran[1:] == [c]  # another launch key (the table's alignment): Triton's JIT path
    mod.WARM.clear()
    r(b, b.out)
    assert len(jit) == 3 * n and ran[2:] == [b]


def test_gdn_decode_runner_launches_what_the_plan_path_launches(monkeypatch):
    if not launch_plan.replay_supported():
        pytest.skip("this Triton is not one whose compiled kernels launch directly")
    monkeypatch.setattr(GDL, "WARM", WarmRecord())
    calls = []
    jit = _recorded_jit(monkeypatch, GDL, calls)
    cls = object()
    a, b = _with_cls(decode_step(), cls), _with_cls(decode_step(seed=5), cls)
    ran = []

    def counted(call):
        ran.append(call)
        return GDL.decode(call)

    r = GDL.runner(counted)
    r(a)
    r(b)
    GDL.decode(b)
    assert len(jit) == 1 and len(calls) == 2 and ran == [a]
    outs = (9 + 5, 9 + 7)  # o and the new state: allocated per call
    assert [x for i, x in enumerate(calls[0][1]) if i not in outs] == \
        [x for i, x in enumerate(calls[1][1]) if i not in outs]
    c = b._replace(q=misaligned(b.q), cls=cls)
    r(c)
    assert len(jit) == 2 and len(calls) == 2 and ran[1:] == [c]


def test_chunk_gdn_runner_runs_the_kept_template_with_the_calls_roots(monkeypatch):
    """The chunk_gdn runner finds the template ``run`` kept for the class and runs its generated whole run with
    each later call's roots (the memo-served record's tensors); a misaligned input goes back to ``run``."""
    from atrex.api.chunk_gdn import normalize_gdn_call
    from atrex.inputs import gdn_inputs
    from atrex_nvidia import launch_template as LT
    from atrex_nvidia.chunk_gdn.sm90 import launch as GL

    monkeypatch.setattr(GL, "WARM", WarmRecord())
    monkeypatch.setattr(launch_plan, "_kept", {})
    ran, launched = [], []
    direct = launch_plan.Direct(lambda *a: launched.append(a), ("f", "p", None, None, None), (), None)
    cls = object()

    def call(seed):
        kw = gdn_inputs([64], num_heads=2, num_v_heads=4, head_k_dim=32, head_v_dim=32, seed=seed)
        return _with_cls(normalize_gdn_call(**kw), cls)

    def run(c):  # a first run: one launch reading q and k into an output, kept as the class's template
        ran.append(c)
        roots = GL._record_roots(c)
        o = torch.empty(3)
        tpl = LT.derive([(object(), (1,), (roots[0], roots[1], o), {})], [direct], roots, (o, None), GL.RECORD_ROOTS)
        GL.WARM.keep_plan(GL.class_key(roots, c.cls, None, None), tpl)
        return "ran"

    a, b = call(0), call(1)
    r = GL.runner(run)
    assert r(a) == "ran" and launched == []
    o, ht = r(b)
    assert ran == [a] and ht is None and o.shape == (3,)
    assert launched == [(1, 1, 1, 0, "f", "p", None, None, None, b.q.data_ptr(), b.k.data_ptr(), o.data_ptr())]
    c = b._replace(q=misaligned(b.q), cls=cls)
    assert r(c) == "ran" and ran[1:] == [c] and len(launched) == 1


# ---- under the Triton interpreter: the plan path gives the first call's bits ----------------------------

HERE = os.path.dirname(os.path.abspath(__file__))
OPTEST = os.path.abspath(os.path.join(HERE, ".."))

_SCRIPT = textwrap.dedent(r'''
    import json, os, sys
    assert os.environ.get("TRITON_INTERPRET") == "1"
    sys.path[:0] = [OPTEST, os.path.join(OPTEST, "nvidia", "chunk_gdn")]
    import torch
    import triton_interp_bf16
    triton_interp_bf16.install()
    from atrex.api.flash_attn import normalize_flash_attn_call
    from atrex.api.gdn_decode import normalize_gdn_decode_call
    from atrex.inputs import attn_inputs, gdn_decode_inputs
    from atrex_nvidia.flash_attn.sm90.decode_splitkv import launch as DL
    from atrex_nvidia.flash_attn.sm90.paged_prefill import launch as PL
    from atrex_nvidia.gdn_decode.sm90 import launch as GDL
    from atrex_nvidia.chunk_gdn.sm90 import runner
    import _gdn_cases as C

    torch.set_num_threads(2)
    res = {}

    def same(a, b):
        return all(torch.equal(x.view(torch.uint8) if x.dtype.itemsize == 1 else x, y.view(torch.uint8)
                               if y.dtype.itemsize == 1 else y) for x, y in zip(a, b) if x is not None)

    def attn(q_lens, k_lens, seed, **kw):
        return normalize_flash_attn_call(**attn_inputs(q_lens, k_lens, head_dim=64, page_size=16, out=True,
                                                       seed=seed, **kw))

    def attn_case(name, mod, fn, q_a, q_b, **kw):
        """A call, the same again, and a call of the same class with new tensors and lengths (through the plan),
        against that call's own first run."""
        mod.WARM.clear()
        a, b = attn(q_a, [150, 40], 1, **kw), attn(q_b, [40, 150], 2, **kw)
        assert mod.plan_key(a, a.out) == mod.plan_key(b, b.out)
        def run(c):
            c.out.zero_()
            lse = fn(c, c.out)
            return c.out.clone(), lse

        first_a = run(a)
        again_a = run(a)  # the plan path, the same inputs
        plan_b = run(b)  # the plan path, new pointers and lengths
        plans = mod.WARM.plans()
        mod.WARM.clear()
        first_b = run(b)
        res[name] = dict(plans=plans, same_a=same(first_a, again_a), same_b=same(plan_b, first_b))

    attn_case("decode_split", DL, lambda c, o: DL.decode(c, o, splits=2), [3, 2], [3, 3], num_heads_q=6,
              return_lse=True)
    attn_case("decode_fp8_sinks", DL, lambda c, o: DL.decode(c, o, splits=1), [3, 2], [3, 3], num_heads_q=6,
              dtype=torch.float8_e4m3fn, sinks=True)
    attn_case("prefill", PL, PL.prefill, [5, 9], [9, 3], return_lse=True)

    def step(seed):
        return normalize_gdn_decode_call(**gdn_decode_inputs([1, 2, 1], mtp=True, head_k_dim=32, head_v_dim=32,
                                                             seed=seed, inplace=False))
    GDL.WARM.clear()
    a, b = step(1), step(2)
    first_a, again_a, plan_b = GDL.decode(a), GDL.decode(a), GDL.decode(b)
    plans = GDL.WARM.plans()
    GDL.WARM.clear()
    res["gdn_decode"] = dict(plans=plans, same_a=same(first_a, again_a), same_b=same(plan_b, GDL.decode(b)))

    for cid in ("T65_noL2", "varlen_0_1"):
        kw = dict(C.SMALL_CASES)[cid]
        x, extra = C.case_inputs(cid, kw, "cpu")
        y = C.make_inputs(device="cpu", seed=4, **kw)
        runner.WARM.clear()
        first_x, again_x, plan_y = C.call(x, extra), C.call(x, extra), C.call(y, extra)
        plans = runner.WARM.plans()
        runner.WARM.clear()
        res["chunk_gdn_" + cid] = dict(plans=plans, same_a=same(first_x, again_x),
                                       same_b=same(plan_y, C.call(y, extra)))
    print("RESULT " + json.dumps(res))
''').replace("OPTEST", repr(OPTEST))


def test_interpreted_plan_path_matches_the_first_call():
    pytest.importorskip("numpy")
    res = run_result_script(_SCRIPT, set_env={"TRITON_INTERPRET": "1"}, cwd=HERE, what="interpreter subprocess")
    assert set(res) == {"decode_split", "decode_fp8_sinks", "prefill", "gdn_decode", "chunk_gdn_T65_noL2",
                        "chunk_gdn_varlen_0_1"}
    bad = {k: v for k, v in res.items() if not (v["plans"] == 1 and v["same_a"] and v["same_b"])}
    assert not bad, bad


# ---- a direct launch passes what Triton's own launcher passes ------------------------------------------------

class _CEntry:
    """Stands in for a launcher's C ``launch`` (not a Python function, as the C entry is not)."""

    def __init__(self):
        self.calls = []

    def __call__(self, *args):
        self.calls.append(args)


def _launcher(scratch=0):
    """This Triton's ``CudaLauncher`` with a recording C entry, built without a GPU (no compile, no driver)."""
    from triton.backends.nvidia.driver import CudaLauncher

    lc = object.__new__(CudaLauncher)
    lc.launch = _CEntry()
    lc.global_scratch_size, lc.global_scratch_align, lc.num_ctas = scratch, 128, 2
    lc.profile_scratch_size, lc.profile_scratch_align = 0, 1
    lc.launch_cooperative_grid, lc.launch_pdl, lc.gsan_enabled = False, True, False
    lc.arg_annotations, lc.kernel_signature = ("ann",), b"sig"
    return lc


def _triton_call(lc, args, scratch_ptr=None, grid=(3, 2, 1), stream=7):
    """What Triton's own path hands the C entry: ``CompiledKernel.run`` as ``JITFunction.run`` calls it, with
    Triton's allocator returning ``scratch_ptr``; returns (the C entry's call, the allocator's requests)."""
    import types

    import triton
    from triton.runtime import _allocation

    asked = []
    token = _allocation._allocator.set(lambda size, align, stream: asked.append((size, align)) or scratch_ptr)
    drv, active = triton.runtime.driver, triton.runtime.driver._active
    drv._active = active or types.SimpleNamespace()  # (Triton 3.9's __call__ reads it; no driver here)
    try:
        lc(*grid, stream, "fn", (4, 2, 0), None, None, None, *args)
    finally:
        drv._active = active
        _allocation._allocator.reset(token)
    return lc.launch.calls.pop(), asked


@pytest.fixture
def tiny_kernel():
    import triton
    import triton.language as tl

    @triton.jit
    def atrex_test_tiny(x_ptr, n, BLOCK: tl.constexpr):
        tl.store(x_ptr + tl.arange(0, BLOCK), n)

    return atrex_test_tiny


def _compiled(lc):
    import types

    return types.SimpleNamespace(run=lc, function="fn", packed_metadata=(4, 2, 0))


def test_direct_launch_calls_the_c_entry_as_tritons_launcher_does(tiny_kernel):
    if launch_plan._C_FORM is None:
        pytest.skip("no C launch convention read for this Triton")
    lc = _launcher()
    d = launch_plan.capture(tiny_kernel, _compiled(lc), 2, {"BLOCK": 16}, torch.device("cpu"))
    assert d.fn is lc.launch and d.scratch is None and d.tail == (16,)
    d(3, 2, 1, 7, (4096, 5, *d.tail))
    ours = lc.launch.calls.pop()
    theirs, asked = _triton_call(lc, (4096, 5, 16))
    assert ours == theirs and asked == []
    # a launch hook: Triton's own path again (a Direct is used only while hooks_idle())
    lc.launch = lambda *a: None  # (the C entry wrapped in Python, as Triton wraps it for host tensor descriptors)
    wrapped = launch_plan.capture(tiny_kernel, _compiled(lc), 2, {"BLOCK": 16}, torch.device("cpu"))
    assert wrapped.fn is lc and wrapped.head == ("fn", (4, 2, 0), None, None, None)


def test_template_places_global_scratch_in_its_workspace(tiny_kernel):
    """A kernel with global scratch (in-kernel TMA descriptors): outside a template Triton's launcher allocates it;
    a template launches the C entry with a pointer into its own workspace, sized as Triton's allocator is asked."""
    if launch_plan._C_FORM is None:
        pytest.skip("no C launch convention read for this Triton")
    from atrex_nvidia import launch_template as LT

    lc = _launcher(scratch=96)
    d = launch_plan.capture(tiny_kernel, _compiled(lc), 2, {"BLOCK": 16}, torch.device("cpu"))
    assert d.fn is lc and d.c_fn is lc.launch and d.scratch[:2] == (192, 128)
    x, ws_view = torch.empty(16), torch.empty(40)
    tpl = LT.derive([(tiny_kernel, (3, 2), (x, 5), {"BLOCK": 16}), (tiny_kernel, (1,), (ws_view, 6), {"BLOCK": 16})],
                    [d, d], (x,), ())
    assert tpl is not None and tpl.go is not None and not tpl.scoped
    assert [ln.scratch for ln in tpl.launches] == [512, 512 + 1536]  # after the view's slot, 6 and 1 programs
    assert tpl.workspace == 512 + 1536 + 512
    x2 = torch.empty(16)
    tpl.run((x2,), torch.device("cpu"))
    first, second = lc.launch.calls
    slot = d.scratch[2] + 4
    theirs, asked = _triton_call(lc, (x2.data_ptr(), 5, 16), first[slot], stream=0)
    assert first == theirs and asked == [(6 * 192, 128)]
    base = second[-1][0] if d.c_pack else second[-3]  # (the second launch's view: the workspace's first slot)
    theirs, asked = _triton_call(lc, (base, 6, 16), second[slot], (1, 1, 1), 0)
    assert second == theirs and asked == [(192, 128)]
    assert (first[slot] - base, second[slot] - base) == (512, 512 + 1536)
    # the generated whole run (a bound runner's): the same launches, the scratch in its workspace too
    lc.launch.calls.clear()
    assert tpl.kept((x2,), torch.device("cpu"), False, 0) == ()
    first_k, second_k = lc.launch.calls
    base_k = second_k[-1][0] if d.c_pack else second_k[-3]
    assert (first_k[slot] - base_k, second_k[slot] - base_k) == (512, 512 + 1536)
    assert [a for i, a in enumerate(first_k) if i != slot] == [a for i, a in enumerate(first) if i != slot]


def test_workspace_kept_per_stream_up_to_its_bound(monkeypatch):
    monkeypatch.setattr(launch_plan, "_kept", {})
    monkeypatch.setattr(launch_plan, "KEEP_WORKSPACE", 4096)
    cpu = torch.device("cpu")
    a = launch_plan.workspace(cpu, 7, 1000)
    assert launch_plan.workspace(cpu, 7, 800) is a and launch_plan.workspace(cpu, 8, 800) is not a
    b = launch_plan.workspace(cpu, 7, 2000)  # grows, and is kept from then on
    assert b.numel() >= 2000 and launch_plan.workspace(cpu, 7, 1000) is b
    big = launch_plan.workspace(cpu, 7, 5000)  # past the bound: the call's own
    assert big.numel() >= 5000 and launch_plan.workspace(cpu, 7, 1000) is b
    monkeypatch.setattr(launch_plan, "KEEP_STREAMS", 3)
    for s in range(100, 110):  # streams made per request: at most KEEP_STREAMS buffers stay
        launch_plan.workspace(cpu, s, 100)
    assert 1 <= len(launch_plan._kept) <= 3
