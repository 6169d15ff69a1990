"""GPU test bodies of ``nvidia.gdn_sm90``, imported by the target tests (``test_chunk_gdn_sm90.py`` and the SM103 /
SM120 files, which run the Triton paths).

Every kernel result is compared with the float64 recurrence (``_gdn_cases``) and its measured rrmse is printed and
recorded (``record_property``); bit-equality checks (graph replay, compiled-kernel replay, PDL, one-sequence varlen)
come in addition. Paths other than the default are run by passing a ``GdnPlan``.
"""

import pytest
import torch
from _gdn_cases import (
    ALL_CASES,
    GPU_CASES,
    RING_CASES,
    RRMSE_BOUND,
    SEQ_PAR_CASES,
    STATE_PATHS,
    bound_for,
    call,
    case_inputs,
    fp16_guard_inputs,
    make_inputs,
    oracle,
    path_cases,
    plan_for,
    report,
    rrmse,
    run_case,
    segment_scan_check,
    without_pdl,
)

GLUON_STATES = ("ws", "rc", "rc2")


def _launch():
    from atrex_nvidia.chunk_gdn.sm90 import launch
    return launch


def _plan_or_skip(path, x, sm_count=132):
    plan = plan_for(path, x, sm_count)
    if plan is None:
        pytest.skip(f"state path {path} does not apply to these tensors on this device")
    return plan


def _names(launches):
    return [kern.__name__ for kern, *_ in launches]


# ---- every case: the default plan, then every path forced where it applies ----

DEFAULT_CASES = GPU_CASES + RING_CASES + SEQ_PAR_CASES


@pytest.mark.parametrize("case_id,kw", DEFAULT_CASES, ids=[c[0] for c in DEFAULT_CASES])
def test_default_dispatch(case_id, kw, record_property):
    """``gdn_fwd`` with the plan the launcher picks, against the float64 recurrence."""
    x, extra = case_inputs(case_id, kw, "cuda")
    plan = _launch().default_plan(x["q"], x["k"], x["v"], cu_seqlens=x["cu_seqlens"],
                                  use_qk_l2norm_in_kernel=x["use_qk_l2norm_in_kernel"])
    eo, eh, bound = run_case(case_id, kw, "cuda")
    report(f"{case_id} default {plan.intra}/{plan.state}{' segments' if plan.segments else ''}", eo, eh, bound,
           record_property)


FORCED = path_cases(STATE_PATHS, GPU_CASES + RING_CASES)
FORCED_TRITON = [c for c in FORCED if c[0] not in GLUON_STATES]
_PATH_KERNEL = {"ws": "_gl_ws", "rc": "_gl_rc", "rc2": "_gl_rc2", "tma": "_tma", "triton": "_v2", "generic": "output"}


def _forced(path, case_id, kw, record_property):
    x, _ = case_inputs(case_id, kw, "cuda")
    plan = _plan_or_skip(path, x)
    _, launches = call(x, plan=plan, plan_only=True)
    assert _names(launches)[-1].endswith(_PATH_KERNEL[path]), _names(launches)
    eo, eh, bound = run_case(case_id, kw, "cuda", plan=plan)
    report(f"{case_id} {path}", eo, eh, bound, record_property)


@pytest.mark.parametrize("path,case_id,kw", FORCED, ids=[f"{c}-{p}" for p, c, _ in FORCED])
def test_forced_plan(path, case_id, kw, record_property):
    """Each state path (and with ``generic`` the generic intra kernel) through a ``GdnPlan`` on every case it
    applies to, against the float64 recurrence; the call launched that path's state kernel."""
    _forced(path, case_id, kw, record_property)


@pytest.mark.parametrize("path,case_id,kw", FORCED_TRITON, ids=[f"{c}-{p}" for p, c, _ in FORCED_TRITON])
def test_forced_triton_plan(path, case_id, kw, record_property):
    """``test_forced_plan`` for the Triton state paths (tma, triton, generic), the ones other GPUs run."""
    _forced(path, case_id, kw, record_property)


RING = path_cases(GLUON_STATES, RING_CASES)


@pytest.mark.parametrize("path,case_id,kw", RING, ids=[f"{c}-{p}" for p, c, _ in RING])
def test_rings_across_items_on_three_ctas(path, case_id, kw, record_property):
    """``sm_count=3``: the persistent kernels (rc, rc2) run 3 CTAs, each taking many (sequence, head) items in a row,
    empty sequences among them, so every ring's phase and every item's initial and final state cross item
    boundaries inside one CTA (ws: the same call, its grid does not depend on the SM count)."""
    x, _ = case_inputs(case_id, kw, "cuda")
    plan = _plan_or_skip(path, x, sm_count=3)
    _, launches = call(x, plan=plan, sm_count=3, plan_only=True)
    if path != "ws":
        assert launches[-1][1] == (3,), launches[-1][1]
    eo, eh, bound = run_case(case_id, kw, "cuda", plan=plan, sm_count=3)
    report(f"{case_id} {path} sm_count=3", eo, eh, bound, record_property)


@pytest.mark.parametrize("case_id,kw", SEQ_PAR_CASES, ids=[c[0] for c in SEQ_PAR_CASES])
def test_sequence_parallel_plan(case_id, kw, record_property):
    """One long prompt with few heads: the default plan runs the segment pass, the fp32 composition and the state
    pass over the segments (as sequences, from the composed initial states, no final-state store); within the
    bound of the float64 recurrence, and without the final state the output is the same bits."""
    x, extra = case_inputs(case_id, kw, "cuda")
    plan, launches = call(x, plan_only=True)
    if plan.segments is None:
        pytest.skip("no sequence-parallel plan on this device (the segment pass is a Gluon kernel)")
    names = _names(launches)
    assert names[-3:-1] == ["atrex_sm90_gdn_state_segments_gl", "atrex_sm90_gdn_segment_scan"], names
    meta = launches[-1][3]
    assert meta["IS_VARLEN"] and meta["USE_H0"] and not meta["STORE_HT"], meta
    o, ht = call(x)
    o2, h2 = call(x, output_final_state=False)
    assert h2 is None and torch.equal(o, o2)
    ro, rh = oracle(x)
    report(f"{case_id} segments {plan.segments} {plan.state}", rrmse(ro, o), rrmse(rh, ht), bound_for(kw),
           record_property)


def test_segment_scan_composes_in_fp32(record_property):
    """The composition kernel of the sequence-parallel plan alone, against float64."""
    rows = segment_scan_check("cuda")
    for tag, (e_hs, e_ht, bound) in rows.items():
        report(tag, e_hs, e_ht, bound, record_property)


def test_split_and_carry(record_property):
    """Running [0, 300) then [300, 777) with the carried state equals the unsplit run, and each is within the
    bound of the float64 recurrence."""
    x = make_inputs(device="cuda", T=777, H=2, HV=4, K=128, h0=torch.float32)
    o, h = call(x)
    sl = lambda a, b: {n: (t[:, a:b].contiguous() if n in ("q", "k", "v", "g", "beta") else t)
                       for n, t in x.items()}
    o1, h1 = call(sl(0, 300))
    o2, h2 = call(dict(sl(300, 777), initial_state=h1))
    ro, rh = oracle(x)
    report("split_carry vs unsplit", rrmse(o, torch.cat([o1, o2], 1)), rrmse(h, h2), RRMSE_BOUND, record_property)
    report("split_carry vs float64", rrmse(ro, torch.cat([o1, o2], 1)), rrmse(rh, h2), RRMSE_BOUND)


def test_fp16_inverse_guard_positive_g(record_property):
    """The fp16 UT inverse's per-tile guard: positive g (decay factors above 1) takes the bf16 + Newton branch, so
    the default plan's call is finite and within the bound of the float64 recurrence."""
    x = fp16_guard_inputs("cuda")
    o, ht = call(x)
    assert torch.isfinite(o.float()).all() and torch.isfinite(ht).all()
    ro, rh = oracle(x)
    report("fp16_guard_positive_g", rrmse(ro, o), rrmse(rh, ht), RRMSE_BOUND, record_property)


def test_all_sequences_empty():
    """Every sequence empty (T = 0): no launch, the output is empty and the final state is the initial state."""
    x = make_inputs(device="cuda", T=0, H=2, HV=4, K=64, cu_seqlens=[0, 0, 0], h0=torch.float32)
    plan, launches = call(x, plan_only=True)
    assert launches == []
    o, ht = call(x)
    assert o.shape == (1, 0, 4, 64) and torch.equal(ht, x["initial_state"])


# ---- graph capture and replay ----


def graph_replay_check(plan_path=None, T=300):
    """Capture once with one cu_seqlens content, replay with others (same shapes): equals eager bit for bit and is
    within the bound of the float64 recurrence. K = 64, V = 128: every state path applies."""
    x = make_inputs(device="cuda", T=T, H=2, HV=4, K=64, V=128, cu_seqlens=[0, 10, 150, 150, T],
                    h0=torch.float32, state_v_first=True)
    plan = None if plan_path is None else _plan_or_skip(plan_path, x)
    cu = x["cu_seqlens"]
    call(x, plan=plan)  # compile outside capture
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        og, hg = call(x, plan=plan)
    for new in ([0, 1, 1, 200, T], [0, 0, 64, 65, T], [0, 10, 150, 150, T]):
        cu.copy_(torch.tensor(new, dtype=cu.dtype, device="cuda"))
        graph.replay()
        torch.cuda.synchronize()
        oe, he = call(x, plan=plan)
        assert torch.equal(og, oe) and torch.equal(hg, he), new
        ro, rh = oracle(x)
        report(f"graph replay {plan_path or 'default'} cu={new}", rrmse(ro, og), rrmse(rh, hg), RRMSE_BOUND)
    return plan


@pytest.mark.parametrize("path", STATE_PATHS)
def test_graph_capture_replay_changed_cu_seqlens(path):
    """Each state path under CUDA-graph capture, replayed with new cu_seqlens contents (the TMA and Gluon kernels
    take Triton's descriptor scratch from the graph's pool)."""
    graph_replay_check(path)


def test_sequence_parallel_graph_capture():
    """The sequence-parallel plan captured after one eager call: replay equals eager bit for bit, also after new
    input values are copied into the captured tensors (the segment bounds are formed on the device)."""
    kw = dict(T=4096, H=4, HV=8, K=128, h0=torch.float32)
    x = make_inputs(device="cuda", **kw)
    plan, _ = call(x, plan_only=True)
    if plan.segments is None:
        pytest.skip("no sequence-parallel plan on this device")
    oe, he = call(x)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        og, hg = call(x)
    graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(og, oe) and torch.equal(hg, he)
    y = make_inputs(device="cuda", seed=1, **kw)
    for n in ("q", "k", "v", "g", "beta", "initial_state"):
        x[n].copy_(y[n])
    graph.replay()
    torch.cuda.synchronize()
    oe2, he2 = call(x)
    assert torch.equal(og, oe2) and torch.equal(hg, he2) and not torch.equal(oe2, oe)
    ro, rh = oracle(x)
    report("segments graph replay", rrmse(ro, og), rrmse(rh, hg), bound_for(kw))


def test_capture_unwarmed_raises_then_prewarm_captures():
    """An unwarmed specialisation raises AtrexCaptureError under capture before any launch; after atrex.prewarm
    the same call captures, and replay equals eager bit for bit."""
    import atrex
    from atrex.errors import AtrexCaptureError

    launch = _launch()
    # K=48, V=80, H=3, HV=6: a specialisation no other test launches
    x = make_inputs(device="cuda", T=211, H=3, HV=6, K=48, V=80, cu_seqlens=[0, 5, 211], h0=torch.float32)
    kw = _api_kwargs(x)
    n_warm = launch.warmed_count()
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with pytest.raises(AtrexCaptureError, match="prewarm"), torch.cuda.graph(g):
        atrex.chunk_gated_delta_rule(**kw)
    torch.cuda.synchronize()
    assert launch.warmed_count() == n_warm
    assert atrex.prewarm("chunk_gated_delta_rule", [kw]) == [("nvidia.gdn_sm90", "compiled")]
    g2 = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g2):
        o_g, ht_g = atrex.chunk_gated_delta_rule(**kw)
    g2.replay()
    torch.cuda.synchronize()
    o_e, ht_e = atrex.chunk_gated_delta_rule(**kw)
    assert torch.equal(o_g, o_e) and torch.equal(ht_g, ht_e)
    ro, rh = oracle(x)
    report("prewarm capture", rrmse(ro, o_g), rrmse(rh, ht_g), bound_for(dict(H=3, HV=6, h0=torch.float32)))


# ---- T = 1 between other kernels ----

T1_SHAPES = [
    ("T1_B2_gva_h0", dict(B=2, T=1, H=2, HV=4, K=64, h0=torch.float32)),
    ("T1_B3_qwen_bf16h0_vfirst", dict(B=3, T=1, H=16, HV=32, K=128, h0=torch.bfloat16, state_v_first=True)),
    ("T1_B64_qwen", dict(B=64, T=1, H=16, HV=32, K=128)),
    ("T1_varlen", dict(T=1, H=2, K=32, cu_seqlens=[0, 1])),
    ("T1_K256", dict(T=1, H=1, K=256)),
]


def test_t1_replay_of_the_faulting_order():
    """Regression test for an intermittent T = 1 illegal address: ptxas 12.8 (Triton 3.6) assembled the T = 1
    specialisation of a state kernel with a wgmma descriptor taken from a uniform register nothing writes, and a
    process faulted at a T1 case after T64, T65_noL2 and T130_B2_gva_bf16h0. This replays that order eight times,
    syncing after each call and checking every result against the float64 recurrence."""
    cases = dict(GPU_CASES)
    for _ in range(8):
        for cid in ("T64", "T65_noL2", "T130_B2_gva_bf16h0", "T1"):
            eo, eh, bound = run_case(cid, cases[cid], "cuda")
            torch.cuda.synchronize()
            report(cid, eo, eh, bound)


@pytest.mark.parametrize("path", ["default", "tma", "triton"])
def test_t1_shapes_between_other_kernels(path):
    """T = 1 calls of several shapes, each run six times between long calls (the faulty binary read a register an
    earlier kernel had left), against the float64 recurrence; every T = 1 state launch used a kernel compiled without
    T as a constant (the Triton twins, or a Gluon kernel with T and TOTAL_T in ``do_not_specialize``)."""
    from atrex_nvidia.chunk_gdn.sm90.triton_state import NO_T1_SPECIALISATION
    twins = set(NO_T1_SPECIALISATION.values())
    long = make_inputs(device="cuda", **ALL_CASES["qwen3next_T1000_bf16h0"])
    plans = {}
    for cid, kw in T1_SHAPES:
        x = make_inputs(device="cuda", **kw)
        plans[cid] = None if path == "default" else plan_for(path, x)
        if path != "default" and plans[cid] is None:
            continue
        _, launches = call(x, plan=plans[cid], plan_only=True)
        state = [kern for kern, *_ in launches if "state_output" in kern.__name__]
        assert state and all(kern in twins or {"T", "TOTAL_T"} <= set(getattr(kern, "do_not_specialize", ()))
                             for kern in state), (cid, _names(launches))
    ran = [cid for cid, _ in T1_SHAPES if path == "default" or plans[cid] is not None]
    assert ran, path
    for _ in range(6):
        for cid, kw in T1_SHAPES:
            if cid in ran:
                eo, eh, bound = run_case(cid, kw, "cuda", plan=plans[cid])
                torch.cuda.synchronize()
                report(f"{cid} {path}", eo, eh, bound)
                call(long)


# ---- compiled-kernel replay (the kept template) ----

REPLAY_CASES = ["qwen3next_T1000_bf16h0", "qwen_varlen_mixed", "varlen_g1", "fla_D100_fp16", "tp4_T5000_h0_vfirst"]


@pytest.mark.parametrize("case_id", REPLAY_CASES)
def test_compiled_kernel_replay_same_bits(case_id, monkeypatch):
    """A call whose class launched before runs the template kept from its first run (``launch_template.py``: the
    compiled kernels launched directly, no Triton JIT dispatch): the same bits as the first call, eagerly and under
    CUDA-graph capture, and for new inputs of the class the same bits as their own first call; with a launch hook
    installed (profilers) Triton's own path runs and the hook sees every launch; within the bound of the float64
    recurrence."""
    import triton
    from triton.runtime import jit

    from atrex_nvidia.chunk_gdn.sm90 import runner
    if not runner._REPLAY_OK:
        pytest.skip(f"no compiled-kernel replay under Triton {triton.__version__}")
    runner.WARM.clear()  # (no template kept: the first call takes Triton's path)
    kw = ALL_CASES[case_id]
    x = make_inputs(device="cuda", **kw)
    runs, orig_run = [], jit.JITFunction.run

    def counting_run(self, *a, **k):
        runs.append(self.__name__)
        return orig_run(self, *a, **k)

    monkeypatch.setattr(jit.JITFunction, "run", counting_run)
    _, launches = call(x, plan_only=True)
    o1, h1 = call(x)  # Triton's path; records the compiled kernels
    assert runs == _names(launches), (runs, _names(launches))
    triton_launches = list(runs)
    runs.clear()
    o2, h2 = call(x)  # replays them
    torch.cuda.synchronize()
    assert runs == [] and torch.equal(o1, o2) and torch.equal(h1, h2), runs
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        og, hg = call(x)
    assert runs == [], runs
    og.zero_()
    hg.zero_()
    graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(og, o1) and torch.equal(hg, h1)
    seen = []
    chain = triton.knobs.runtime.launch_enter_hook  # (a HookChain)
    chain.add(seen.append)
    try:
        oh, hh = call(x)
        torch.cuda.synchronize()
    finally:
        chain.remove(seen.append)
    assert runs == triton_launches and len(seen) == len(triton_launches), (runs, len(seen))
    assert torch.equal(oh, o1) and torch.equal(hh, h1)
    x2 = make_inputs(device="cuda", seed=7, **kw)  # new inputs of the class: the template, then a first call
    runs.clear()
    ot, ht = call(x2)
    assert runs == [], runs
    runner.WARM.clear()
    of, hf = call(x2)
    torch.cuda.synchronize()
    assert runs == triton_launches and torch.equal(ot, of) and torch.equal(ht, hf)
    ro, rh = oracle(x)
    report(f"{case_id} replay", rrmse(ro, o1), rrmse(rh, h1), bound_for(kw))


# ---- programmatic dependent launch ----

PDL_CASES = [(cid, ALL_CASES[cid]) for cid in ("qwen_varlen_mixed", "K128_varlen_i64_gva", "qwen3next_T1000_bf16h0",
                                               "K64_V128_strong_h0")] + [
    ("qwen_varlen_16x257", dict(T=16 * 257, H=32, HV=32, K=128, cu_seqlens=[257 * i for i in range(17)])),
]


@pytest.mark.parametrize("case_id,kw", PDL_CASES, ids=[c[0] for c in PDL_CASES])
def test_pdl_same_bits_eager_and_in_chained_graphs(case_id, kw, record_property):
    """rc / rc2 plans launch their chain with programmatic dependent launch (each kernel waits for its predecessor
    first). The arithmetic is unchanged, so an eager call equals the same plan without PDL bit for bit; three calls
    captured in one graph, each reading the previous call's output as v and its final state as initial state,
    replay (twice, the inputs rewritten in between) to the same bits as that chain run eagerly without PDL. The
    first call is within the bound of the float64 recurrence. (Fixed-length cases run a forced rc plan.)"""
    x = make_inputs(device="cuda", **kw)
    plan, launches = call(x, plan_only=True)
    if plan.state not in ("rc", "rc2"):
        plan = _plan_or_skip("rc", x)
        _, launches = call(x, plan=plan, plan_only=True)
    if not plan.pdl:
        pytest.skip("this Triton has no grid dependency control")
    pdl = [(kern.__name__, meta) for kern, _g, _a, meta in launches if meta.get("launch_pdl")]
    names = {n for n, _ in pdl}
    assert "atrex_sm90_gdn_intra_chunk_v3" in names and any("_gl_rc" in n for n in names), names
    o, h = call(x, plan=plan)
    o0, h0_ = call(x, plan=without_pdl(plan))
    assert torch.equal(o, o0) and torch.equal(h, h0_)
    ro, rh = oracle(x)
    report(f"{case_id} {plan.state} pdl", rrmse(ro, o), rrmse(rh, h), bound_for(kw), record_property)

    n_seq = x["cu_seqlens"].numel() - 1 if x["cu_seqlens"] is not None else x["q"].shape[0]
    kv = (x["v"].shape[3], x["q"].shape[3]) if x["state_v_first"] else (x["q"].shape[3], x["v"].shape[3])
    h_in = x["initial_state"] if x["initial_state"] is not None else torch.zeros(
        (n_seq, x["v"].shape[2], *kv), dtype=torch.float32, device="cuda")
    v0, s0 = x["v"].clone(), h_in.clone()

    def chain(p):
        v, s = v0, s0
        for _ in range(3):
            v, s = call(dict(x, v=v, initial_state=s), plan=p)
        return v, s

    chain(plan)  # compile outside capture
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        og, hg = chain(plan)
    for step in range(2):
        if step:
            v0.copy_(torch.randn_like(v0))
            s0.copy_(torch.randn_like(s0) * 0.1)
        graph.replay()
        torch.cuda.synchronize()
        oe, he = chain(without_pdl(plan))
        torch.cuda.synchronize()
        assert torch.equal(og, oe) and torch.equal(hg, he), (case_id, step, rrmse(oe, og), rrmse(he, hg))


# ---- the public operator ----


def _api_kwargs(x):
    return dict(q=x["q"], k=x["k"], v=x["v"], g=x["g"], beta=x["beta"], scale=x["scale"],
                initial_state=x["initial_state"], output_final_state=True,
                use_qk_l2norm_in_kernel=x["use_qk_l2norm_in_kernel"], state_v_first=x["state_v_first"],
                cu_seqlens=x["cu_seqlens"])


@pytest.mark.parametrize("kw", [dict(T=2000, H=4, HV=8, K=128, h0=torch.float32, state_v_first=True),
                                dict(T=130, H=2, HV=2, K=64, h0=torch.bfloat16),
                                dict(T=1, H=16, HV=32, K=128, h0=torch.float32, state_v_first=True)],
                         ids=["tp4_vfirst", "mha_k64", "T1_qwen"])
def test_one_sequence_varlen_equals_fixed_length(kw):
    """A varlen call of one sequence (cu_seqlens = [0, T], as vLLM passes a lone prompt) plans and launches the
    fixed-length call's kernels (no varlen bookkeeping) and gives its bits; both within the float64 bound."""
    x = make_inputs(device="cuda", cu_seqlens=[0, kw["T"]], **kw)
    fixed = dict(x, cu_seqlens=None)
    p1, l1 = call(x, plan_only=True)
    p0, l0 = call(fixed, plan_only=True)
    assert p1 == p0 and _names(l1) == _names(l0), (_names(l1), _names(l0))
    assert not {"atrex_sm90_gdn_chunk_offsets", "atrex_sm90_gdn_slot_seq"} & set(_names(l1))
    o1, h1 = call(x)
    o0, h0 = call(fixed)
    assert torch.equal(o1, o0) and torch.equal(h1, h0)
    ro, rh = oracle(x)
    report(f"one-sequence varlen {p1.state}", rrmse(ro, o1), rrmse(rh, h1), bound_for(kw))


def test_kernel_names_in_profiler():
    import torch.profiler as tp
    x = make_inputs(device="cuda", T=200, H=2, HV=4, K=64, cu_seqlens=[0, 3, 200])
    call(x)
    with tp.profile(activities=[tp.ProfilerActivity.CUDA]) as prof:
        call(x)
        torch.cuda.synchronize()
    names = {e.key for e in prof.key_averages() if e.device_type == torch.autograd.DeviceType.CUDA}
    kernels = {n for n in names if not n.lower().startswith(("memcpy", "memset"))}
    assert kernels and all(n.startswith("atrex_sm90_gdn_") for n in kernels), kernels


def test_dispatch_selects_gdn_sm90_and_matches_launcher():
    """The public operator picks nvidia.gdn_sm90 on this device and returns the launcher's bits."""
    import atrex
    from atrex.api.chunk_gdn import explain_chunk_gated_delta_rule

    x = make_inputs(device="cuda", T=300, H=2, HV=4, K=64, cu_seqlens=[0, 1, 100, 300], h0=torch.float32)
    kw = _api_kwargs(x)
    assert explain_chunk_gated_delta_rule(**kw).chosen == "nvidia.gdn_sm90"
    assert atrex.can_use_chunk_gated_delta_rule(**kw)
    o, ht = atrex.chunk_gated_delta_rule(**kw)
    o2, ht2 = call(x)
    assert torch.equal(o, o2) and torch.equal(ht, ht2)
    ro, rh = oracle(x)
    report("atrex.chunk_gated_delta_rule", rrmse(ro, o), rrmse(rh, ht), RRMSE_BOUND)


def test_fp16_takes_the_per_head_kernels(record_property):
    """fp16 calls with K and V multiples of 16 plan the per-head kernels as bf16 calls do (same plan), not the
    generic pair, and stay within the float64 bound."""
    for cid in ("qwen3next_T1000_fp16", "qwen_varlen_fp16_vfirst"):
        kw = ALL_CASES[cid]
        x = make_inputs(device="cuda", **kw)
        plan, _ = call(x, plan_only=True)
        bf16, _ = call(make_inputs(device="cuda", **dict(kw, dtype=torch.bfloat16)), plan_only=True)
        assert plan.intra == "per_head" and plan == bf16, (plan, bf16)
        eo, eh, bound = run_case(cid, kw, "cuda")
        report(f"{cid} {plan.state}", eo, eh, bound, record_property)
