"""Target test of ``nvidia.gdn_sm90`` (ATREX chunked Gated-DeltaNet, Triton) on SM90 hardware."""

import _gdn_cases as _t

_t.skip_unless((9, 0), "sm90")

from _gdn_cases import (  # noqa: E402,F401
    test_capture_unwarmed_raises_then_prewarm_captures,
    test_cases,
    test_cases_variants,
    test_cases_wy_form,
    test_dispatch_selects_gdn_sm90_and_matches_launcher,
    test_fast_launch_replays_the_triton_launches,
    test_fp16_default_takes_the_fast_kernels,
    test_fp16_inverse_guard_positive_g,
    test_fused_rc,
    test_fused_rc_graph_capture,
    test_fused_rc_rings_across_items,
    test_gates_book_same_bookkeeping,
    test_gluon_rc2_rings_across_items,
    test_gluon_rc_rings_across_items,
    test_gluon_state_kernel,
    test_gluon_ws_fac_smem_same_bits,
    test_gluon_ws_rings_and_empty_sequences,
    test_graph_capture_replay_changed_cu_seqlens,
    test_intra_diag16,
    test_intra_gates,
    test_intra_gva_share,
    test_intra_mask_out_matches_default,
    test_intra_slot_map,
    test_item_schedule_same_bits,
    test_kernel_names_in_profiler,
    test_one_sequence_varlen_takes_the_fixed_length_kernels,
    test_pdl_same_bits_eager_and_in_chained_graphs,
    test_rc_h0_prefetch_same_bits,
    test_rc_late_factors_same_bits,
    test_rc_qscale,
    test_rc_qside,
    test_rc_round27_options_same_bits,
    test_rc_two_chains_same_bits_as_gl_rc,
    test_split_and_carry,
    test_split_state_pass_graph_capture,
    test_state_split_xu_decay0_probe,
    test_t1_replay_of_the_faulting_order,
    test_t1_shapes_between_other_kernels,
    test_ut_inverse_accuracy_and_acc_merge,
    test_ws_out2_same_bits,
    test_ws_qscale,
    test_ws_qside,
)


def test_default_inverse_form_is_diag16_at_the_goal_shapes():
    """Round 22 made ``INTRA_V3_DIAG16 = True`` the default on sm90 (r76/r77, on an H100): at the Qwen3-Next goal
    shapes (two-head fixed-length programs, H = 16 / HV = 32; one-head varlen programs, H = HV = 32), shortened, the
    shipped call launches the v3 intra kernel with DIAG16, and its output and final state stay within the contract's
    bound of the float64 recurrence."""
    from atrex_nvidia.chunk_gdn.sm90 import launch
    seen, orig = [], launch._launch_all

    def spy(dev, launches, *a, **kw):
        seen.extend((kern.__name__, meta) for kern, _g, _a, meta in launches)
        return orig(dev, launches, *a, **kw)

    shapes = (dict(T=1000, H=16, HV=32, K=128),
              dict(T=1000, H=32, HV=32, K=128, cu_seqlens=[0, 1, 65, 300, 1000], h0=_t.torch.float32))
    launch._launch_all = spy
    try:
        for kw in shapes:
            seen.clear()
            x = _t.make_inputs(device="cuda", **kw)
            o, ht = launch.gdn_fwd(x["q"], x["k"], x["v"], x["g"], x["beta"], scale=x["scale"],
                                   initial_state=x["initial_state"], output_final_state=True,
                                   use_qk_l2norm_in_kernel=True, state_v_first=False, cu_seqlens=x["cu_seqlens"])
            intra = [m for n, m in seen if n == "atrex_sm90_gdn_intra_chunk_v3"]
            assert len(intra) == 1 and intra[0].get("DIAG16"), (kw, [n for n, _ in seen])
            ro, rh = _t.ref_recurrence(x["q"], x["k"], x["v"], x["g"], x["beta"], scale=x["scale"],
                                       initial_state=x["initial_state"], use_qk_l2norm_in_kernel=True,
                                       cu_seqlens=x["cu_seqlens"])
            err = max(_t.rrmse(ro, o), _t.rrmse(rh, ht))
            assert err <= _t.bound_for(kw), (kw, err)
    finally:
        launch._launch_all = orig


def test_default_gl_ws_has_two_output_partitions_at_the_fixed_length_goal_shape(monkeypatch):
    """Round 32 made ``GL_WS_OUT2`` the default (r114-r116, on an H100). At the fixed-length goal shapes' form (H = 16,
    HV = 32, K = V = 128, one sequence: few programs, so gl_ws with its QSIDE output partitions), shortened to 1100
    tokens with an fp32 initial state, the shipped call launches gl_ws with OUT2 and GL_WS_OUT2_REGS registers per
    output partition; its output and final state equal the one-partition call bit for bit, and are within the
    contract's bound of the float64 recurrence."""
    from atrex_nvidia.chunk_gdn.sm90 import launch
    if not launch._gluon_ws_supported():
        _t.pytest.skip("gl_ws runs with Gluon's warp specialisation only")
    assert launch.GL_WS_OUT2 is True
    monkeypatch.setattr(launch, "GL_WS_OUT2", True)  # (so that teardown restores it: the pair below sets it)
    metas = _t._state_launch_metas(monkeypatch, launch, "atrex_sm90_gdn_state_output_gl_ws")
    kw = dict(T=1100, H=16, HV=32, K=128, h0=_t.torch.float32)
    x = _t.make_inputs(device="cuda", **kw)
    assert _t._knob_pair_error(launch, x, "cuda", {"GL_WS_OUT2": True}, {"GL_WS_OUT2": False}, exact=True) == 0.0
    assert [(m.get("OUT2", False), m.get("QSIDE"), m["OUT_REGS"]) for m in metas] == [
        (True, True, launch.GL_WS_OUT2_REGS), (False, True, launch.GL_WS_QSIDE_OUT_REGS)], metas
    monkeypatch.setattr(launch, "GL_WS_OUT2", True)
    eo, eh, bound = _t.run_case(_t.fwd(), "default_out2", kw, "cuda")
    assert eo <= bound and eh <= bound, (eo, eh, bound)


def test_default_takes_one_chain_per_cta_with_fewer_items_than_sms(monkeypatch):
    """Round 33 (``GL_RC2_ITEMS_PER_SM = 1``; r120 / r121, on an H100): a varlen call at Qwen3-Next's TP 2 heads (H = 8,
    HV = 16, K = V = 128) with 8 sequences of mixed lengths (128 (sequence, value head) items) and an fp32 initial state
    in the state_v_first layout launches gl_rc, one chain per CTA, on 132 SMs, where rounds 27-32 launched gl_rc2.
    Its output and final state equal gl_rc2's bit for bit (both run the QSCALE q side, r91) and are within the
    contract's bound of the float64 recurrence. With fewer SMs than items (``sm_count`` 127) the call keeps gl_rc2."""
    from atrex_nvidia.chunk_gdn.sm90 import launch
    if not launch._gluon_ws_supported():
        _t.pytest.skip("gl_rc / gl_rc2 run with Gluon's warp specialisation only")
    assert launch.GL_RC2_ITEMS_PER_SM == 1
    monkeypatch.setattr(launch, "GL_RC2_ITEMS_PER_SM", 1)  # (so that teardown restores it: the pair below sets it)
    names, orig = [], launch._launch_all

    def spy(dev, launches, *a, **kw):
        names.extend(kern.__name__ for kern, *_ in launches if "state_output" in kern.__name__)
        return orig(dev, launches, *a, **kw)

    monkeypatch.setattr(launch, "_launch_all", spy)
    kw = dict(T=1612, H=8, HV=16, K=128, cu_seqlens=[0, 700, 1100, 1300, 1455, 1558, 1598, 1611, 1612],
              h0=_t.torch.float32, state_v_first=True)
    x = _t.make_inputs(device="cuda", **kw)
    err = _t._knob_pair_error(launch, x, "cuda", {"GL_RC2_ITEMS_PER_SM": 1}, {"GL_RC2_ITEMS_PER_SM": 0}, exact=True,
                              sm_count=132)
    rc, rc2 = "atrex_sm90_gdn_state_output_gl_rc", "atrex_sm90_gdn_state_output_gl_rc2"
    assert names == [rc, rc2] and err == 0.0, (names, err)
    launch.GL_RC2_ITEMS_PER_SM = 1
    for sm_count, want in ((127, rc2), (132, rc)):  # (the last call's results are checked below)
        names.clear()
        o, ht = launch.gdn_fwd(x["q"], x["k"], x["v"], x["g"], x["beta"], scale=x["scale"],
                               initial_state=x["initial_state"], output_final_state=True,
                               use_qk_l2norm_in_kernel=True, state_v_first=True, cu_seqlens=x["cu_seqlens"],
                               sm_count=sm_count)
        assert names == [want], (sm_count, names)
    ro, rh = _t.ref_recurrence(x["q"], x["k"], x["v"], x["g"], x["beta"], scale=x["scale"],
                               initial_state=x["initial_state"], state_v_first=True, use_qk_l2norm_in_kernel=True,
                               cu_seqlens=x["cu_seqlens"])
    eo, eh, bound = _t.rrmse(ro, o), _t.rrmse(rh, ht), _t.bound_for(kw)
    assert eo <= bound and eh <= bound, (eo, eh, bound)


def test_default_prefetches_the_initial_state_at_the_varlen_goal_shape(monkeypatch):
    """Round 30 made ``GL_RC_H0_PREFETCH = 1`` the default (r102, on an H100). At the varlen goal shape's form (one-head
    programs, H = HV = 32; the perf case's fp32 initial state in the state_v_first layout), shortened to 8 sequences
    of mixed lengths, the shipped call launches gl_rc2 with H0PF = 1 and H0_KC; its output and final state equal the
    same call with the prefetch off bit for bit (a hint only), and are within the contract's bound of the float64
    recurrence."""
    from atrex_nvidia.chunk_gdn.sm90 import launch
    if not launch._gluon_ws_supported():
        _t.pytest.skip("gl_rc2 runs with Gluon's warp specialisation only")
    assert launch.GL_RC_H0_PREFETCH == 1
    seen, orig = [], launch._launch_all

    def spy(dev, launches, *a, **kw):
        seen.extend((kern.__name__, meta) for kern, _g, _a, meta in launches)
        return orig(dev, launches, *a, **kw)

    kw = dict(T=2100, H=32, HV=32, K=128, cu_seqlens=[0, 1, 64, 129, 700, 1000, 1024, 2000, 2100],
              h0=_t.torch.float32, state_v_first=True)
    x = _t.make_inputs(device="cuda", **kw)

    def call():
        seen.clear()
        return launch.gdn_fwd(x["q"], x["k"], x["v"], x["g"], x["beta"], scale=x["scale"],
                              initial_state=x["initial_state"], output_final_state=True,
                              use_qk_l2norm_in_kernel=True, state_v_first=True, cu_seqlens=x["cu_seqlens"])

    monkeypatch.setattr(launch, "_launch_all", spy)
    o, ht = call()
    names = [n for n, _ in seen]
    assert names[-1] == "atrex_sm90_gdn_state_output_gl_rc2", names
    assert seen[-1][1].get("H0PF") == 1 and seen[-1][1].get("H0_KC") is True, seen[-1][1]
    monkeypatch.setattr(launch, "GL_RC_H0_PREFETCH", 0)
    o0, ht0 = call()
    assert seen[-1][0] == names[-1] and "H0PF" not in seen[-1][1], seen[-1]
    assert _t.torch.equal(o, o0) and _t.torch.equal(ht, ht0)
    ro, rh = _t.ref_recurrence(x["q"], x["k"], x["v"], x["g"], x["beta"], scale=x["scale"],
                               initial_state=x["initial_state"], state_v_first=True, use_qk_l2norm_in_kernel=True,
                               cu_seqlens=x["cu_seqlens"])
    err = max(_t.rrmse(ro, o), _t.rrmse(rh, ht))
    assert err <= _t.bound_for(kw), err


SEQ_PAR_CASES = [  # (id, make_inputs kwargs): Qwen3-Next's heads at TP 4 (H = 4, HV = 8) and TP 8 (2 / 4), and MHA
    ("tp4_T8192", dict(T=8192, H=4, HV=8, K=128)),
    ("tp4_T5000_h0_vfirst", dict(T=5000, H=4, HV=8, K=128, h0=_t.torch.float32, state_v_first=True)),
    ("tp8_T5000_fp16_bf16h0", dict(T=5000, H=2, HV=4, K=128, dtype=_t.torch.float16, h0=_t.torch.bfloat16)),
    ("mha_T4100_K64", dict(T=4100, H=8, HV=8, K=64, V=128, h0=_t.torch.float32)),
    ("tp4_T4500_strong", dict(T=4500, H=4, HV=8, K=128, g_mode="strong", h0=_t.torch.float32)),
    ("tp4_T4200_tiny", dict(T=4200, H=4, HV=8, K=128, g_mode="tiny", h0=_t.torch.float32)),
    ("tp4_T6000_noL2", dict(T=6000, H=4, HV=8, K=128, l2norm=False, h0=_t.torch.float32)),
]


def _plan_spy(monkeypatch, launch):
    seen, orig = [], launch._launch_all

    def spy(dev, launches, *a, **kw):
        seen.append([(kern.__name__, meta) for kern, _g, _a, meta in launches])
        return orig(dev, launches, *a, **kw)

    monkeypatch.setattr(launch, "_launch_all", spy)
    return seen


@_t.pytest.mark.parametrize("case_id,kw", SEQ_PAR_CASES, ids=[c for c, _ in SEQ_PAR_CASES])
def test_seq_parallel_state_pass(case_id, kw, monkeypatch):
    """Round 34 (``SEQ_PARALLEL``): a fixed-length call with few value heads runs the segment pass, the fp32
    composition and the usual state pass over the segments as sequences (varlen, from the composed initial states, no
    final-state store). Its output and final state are within the contract's bound of the float64 recurrence, as
    close to it as the single-chain plan's (the knob off) to within 25% (+2e-4), and within the bound of that plan's.
    Without the final state the output is the same bit for bit (the composition then stops a segment earlier). Covers
    a partial last segment and chunk, both initial-state layouts and a bf16 one, fp16, GVA and MHA, K = 64, strong and
    slow decay (a state that carries across every segment), and q, k normalised by the caller (the state pass then
    reads the intra kernel's Aqk instead of forming it from q)."""
    from atrex_nvidia.chunk_gdn.sm90 import launch
    if not launch._gluon_ws_supported():
        _t.pytest.skip("the segment pass is a Gluon kernel")
    seen = _plan_spy(monkeypatch, launch)
    x = _t.make_inputs(device="cuda", **kw)

    def call(final=True):
        return launch.gdn_fwd(x["q"], x["k"], x["v"], x["g"], x["beta"], scale=x["scale"],
                              initial_state=x["initial_state"], output_final_state=final,
                              use_qk_l2norm_in_kernel=x["use_qk_l2norm_in_kernel"], state_v_first=x["state_v_first"],
                              cu_seqlens=None)

    o, ht = call()
    names = [n for n, _ in seen[-1]]
    assert names[-3:-1] == ["atrex_sm90_gdn_state_segments_gl", "atrex_sm90_gdn_segment_scan"], names
    smeta = seen[-1][-1][1]
    assert "state_output" in names[-1] and smeta["IS_VARLEN"] and smeta["USE_H0"] and not smeta["STORE_HT"], seen[-1]
    o2, h2 = call(final=False)
    assert h2 is None and _t.torch.equal(o, o2)
    ro, rh = _t.ref_recurrence(x["q"], x["k"], x["v"], x["g"], x["beta"], scale=x["scale"],
                               initial_state=x["initial_state"], state_v_first=x["state_v_first"],
                               use_qk_l2norm_in_kernel=x["use_qk_l2norm_in_kernel"])
    monkeypatch.setattr(launch, "SEQ_PARALLEL", False)
    o1, h1 = call()
    assert not any("segment" in n for n, _ in seen[-1]), seen[-1]
    bound = _t.bound_for(kw)
    e, e1 = (_t.rrmse(ro, o), _t.rrmse(rh, ht)), (_t.rrmse(ro, o1), _t.rrmse(rh, h1))
    apart = (_t.rrmse(o1, o), _t.rrmse(h1, ht))
    assert max(e) <= bound and max(apart) <= bound, (e, e1, apart, bound)
    assert all(a <= 1.25 * b + 2e-4 for a, b in zip(e, e1)), (e, e1)


def test_seq_parallel_graph_capture(monkeypatch):
    """The sequence-parallel plan under CUDA-graph capture after one eager call: the replay equals the eager call bit
    for bit, also after new input values are copied into the captured tensors (the segment bounds are formed on the
    device, by the segment pass, so nothing host-side is baked into the graph)."""
    from atrex_nvidia.chunk_gdn.sm90 import launch
    if not launch._gluon_ws_supported():
        _t.pytest.skip("the segment pass is a Gluon kernel")
    seen = _plan_spy(monkeypatch, launch)
    kw = dict(T=4096, H=4, HV=8, K=128, h0=_t.torch.float32)
    x = _t.make_inputs(device="cuda", **kw)

    def call():
        return launch.gdn_fwd(x["q"], x["k"], x["v"], x["g"], x["beta"], scale=x["scale"],
                              initial_state=x["initial_state"], output_final_state=True,
                              use_qk_l2norm_in_kernel=True, state_v_first=False, cu_seqlens=None)

    oe, he = call()
    _t.torch.cuda.synchronize()
    assert "atrex_sm90_gdn_state_segments_gl" in [n for n, _ in seen[-1]], seen[-1]
    graph = _t.torch.cuda.CUDAGraph()
    with _t.torch.cuda.graph(graph):
        og, hg = call()
    graph.replay()
    _t.torch.cuda.synchronize()
    assert _t.torch.equal(og, oe) and _t.torch.equal(hg, he)
    y = _t.make_inputs(device="cuda", seed=1, **kw)
    for n in ("q", "k", "v", "g", "beta", "initial_state"):
        x[n].copy_(y[n])
    graph.replay()
    _t.torch.cuda.synchronize()
    oe2, he2 = call()
    assert _t.torch.equal(og, oe2) and _t.torch.equal(hg, he2) and not _t.torch.equal(oe2, oe)


@_t.pytest.mark.parametrize("prec,bvs", [("tf32x3", 8), ("tf32x3", 16), ("ieee", 32)])
def test_segment_scan_composes_in_fp32(prec, bvs):
    """The composition kernel of the sequence-parallel plan alone, against float64 (``_gdn_cases.segment_scan_check``;
    the CPU tier runs the same check under the interpreter): the launcher's products (tf32x3, 8 columns; 16 before
    round 35) and IEEE FMA (32)."""
    from atrex_nvidia.chunk_gdn.sm90 import launch
    assert (launch.SEQ_PAR_SCAN_PREC, launch.SEQ_PAR_SCAN_BV) == ("tf32x3", 8)
    rows = _t.segment_scan_check("cuda", prec=prec, bvs=bvs)
    bad = {k: v for k, v in rows.items() if not (v[0] <= v[2] and v[1] <= v[2])}
    assert not bad, bad


# The mixed serving batch in the order where round-robin already beats both sorts (bench_gdn's mixed20p; interpreter
# row item_schedule_mixed20p_tp1): 70 chunk steps on the longest of 132 CTAs, against 74 by load and 81 snake.
MIXED20P = [33, 300, 1, 255, 512, 7, 130, 480, 1024, 900, 640, 100, 1500, 2048, 3000, 3500, 1100, 777, 65, 64]


@_t.pytest.mark.parametrize("mode", [True, "snake"])
def test_item_schedule_keeps_a_better_caller_order(mode, monkeypatch):
    """Round 37's fallback of ``atrex_sm90_gdn_item_schedule`` on the device: where neither sort shortens the longest
    CTA (the mixed20p batch at H = 16, HV = 32 on a 132-CTA grid), the kernel writes the identity order, and the call
    with the knob gives the same bits as the call without. ``test_item_schedule_same_bits`` compares the order with
    the reference on batches where the sorts help; this one pins the other branch (the bench's mixed20p row ran 0.400
    ms with the sorted order in r139, 0.383 with the fallback in r141)."""
    from atrex_nvidia.chunk_gdn.sm90 import launch
    if not launch._gluon_ws_supported():
        _t.pytest.skip("gl_rc / gl_rc2 need Gluon's warp specialisation")
    monkeypatch.setattr(launch, "GL_RC_SCHEDULE", False)
    seen, orig = [], launch._launch_all

    def spy(dev, launches, *a, **k):
        seen.append([(kern.__name__, args) for kern, _g, args, _m in launches])
        return orig(dev, launches, *a, **k)
    monkeypatch.setattr(launch, "_launch_all", spy)
    cu = [0]
    for n in MIXED20P:
        cu.append(cu[-1] + n)
    x = _t.make_inputs(device="cuda", T=cu[-1], H=16, HV=32, K=128, cu_seqlens=cu, h0=_t.torch.float32)
    err = _t._knob_pair_error(launch, x, "cuda", {"GL_RC_SCHEDULE": False}, {"GL_RC_SCHEDULE": mode}, exact=True,
                              sm_count=132)
    assert err == 0.0
    sargs = next(a for n, a in seen[-1] if n == "atrex_sm90_gdn_item_schedule")
    M, n_items, P = sargs[3], sargs[4], sargs[5]
    identity = list(range(n_items))
    assert _t.item_schedule_reference(MIXED20P, M, P, snake=mode == "snake") == identity, (
        f"the batch no longer takes the fallback at M={M}, P={P}: this test would not cover it")
    assert _t.item_schedule_reference(MIXED20P, M, P, snake=mode == "snake", fallback=False) != identity
    assert sargs[1][:n_items].cpu().tolist() == identity
