"""Warp-specialised Gluon state passes of the SM90 chunked Gated-DeltaNet forward (math: ``gluon_common``).

``atrex_sm90_gdn_state_output_gl_ws``: the state pass for calls with few (sequence, head) programs. One program per
(V block, sequence x value head), its work split over four warp partitions of one CTA:

    chain (default, 4 warps):  S (fp32, registers); per chunk: S -> bf16 buffer b, K S, X, U = A X -> U buffer b,
                               S = e^gamma_last S + K^T (dk U). Hands (S_c, U_c) to the output partitions.
    output (2 x 4 warps):      O = scale (e^gamma (Q S_c) + Aqk U_c) from the handed-over buffers, stored to HBM; one
                               partition takes the even chunks, the other the odd, so that each has two chain steps
                               for a chunk's output.
    loader (1 warp):           the TMA loads of chunk c into ring slot c % STAGES once both consumers freed it, and
                               the chunk's row factors (loaded one chunk ahead, so that their latency falls on this
                               warp) stored into the slot before its ready arrive.

mbarriers: ready[s] (TMA bytes landed), empty[s] (count 2: the chain and the chunk's output partition are done with
slot s), su_ready[b] / su_empty[b] (double-buffered S_c / U_c hand-off, b = c % 2: each buffer has one reader). Only
one thread of a partition arrives on an mbarrier, so each arrive follows a partition barrier.

``atrex_sm90_gdn_state_segments_gl``: the first phase of the sequence-parallel state pass (the chain and loader
partitions only).
"""

from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (
    fence_async_shared,
    mbarrier,
    warpgroup_mma,
    warpgroup_mma_wait,
)

from .gluon_common import (
    _cta_barrier,
    _descriptors,
    _initial_state,
    _load_chunk,
    _q_side_scaled,
    _ring_barriers,
    _ring_tiles,
    _sequence,
    _store_state,
)


@gluon.jit
def _ws_loader(kd, qd, vd, ad, aqd, k_s, q_s, a_s, aq_s, v_s, f_s, el_s, gm_s, ready, empty, NT, row, arow, qcol,
               vcol, ROWS, QW, VW, s_qr, s_kr, s_vr, HV, TOTAL_T, f_base, L,
               BK: gl.constexpr, BV: gl.constexpr, STAGES: gl.constexpr, QSIDE: gl.constexpr = False,
               NO_Q: gl.constexpr = False):
    """Loader partition (1 warp): chunk c's k, q, A, Aqk and v tiles into slot c % STAGES by TMA, after the consumers
    released the slot's previous chunk (empty barriers start 'phase 1 complete': the first pass over the ring does
    not wait). The descriptors are built here, by the only partition that uses them. Before the slot's ready arrive
    the warp stores the chunk's factor planes 1-4 (0 past the sequence end) into ``f_s`` rows 4 slot .. 4 slot + 3
    and e^gamma_last (in all BK entries) into ``el_s`` row slot, loaded from global memory one chunk ahead, while it
    waits for the next free slot. ``QSIDE``: no Aqk tile; the chunk-local gamma (plane 0, 0 past the sequence end)
    into ``gm_s`` row slot instead, for the output partition's decay tile. ``NO_Q`` (the segment kernel; without
    QSIDE): neither the q nor the Aqk tile."""
    gl.static_assert(not (NO_Q and QSIDE))
    descs = _descriptors(kd, qd, vd, ad, aqd, ROWS, QW, VW, s_qr, s_kr, s_vr, HV, TOTAL_T, BK, BV)
    FL: gl.constexpr = gl.BlockedLayout([2], [32], [1], [0])
    EL: gl.constexpr = gl.BlockedLayout([BK // 32], [32], [1], [0])
    fr = gl.arange(0, 64, layout=FL)
    er = gl.arange(0, BK, layout=EL)
    plane = (HV + fr * 0).to(gl.int64) * TOTAL_T
    p_el = f_base + 3 * (HV + er * 0).to(gl.int64) * TOTAL_T - 1
    fm = fr < L
    f1 = gl.load(f_base + plane + fr, mask=fm, other=0.0)
    f2 = gl.load(f_base + 2 * plane + fr, mask=fm, other=0.0)
    f3 = gl.load(f_base + 3 * plane + fr, mask=fm, other=0.0)
    f4 = gl.load(f_base + 4 * plane + fr, mask=fm, other=0.0)
    fe = gl.load(p_el + gl.minimum(L, 64) + er * 0, mask=(er * 0) < L, other=1.0)
    if QSIDE:
        f0 = gl.load(f_base + fr, mask=fm, other=0.0)
    for c in range(NT):
        slot = c % STAGES
        mbarrier.wait(empty.index(slot), ((c // STAGES) & 1) ^ 1)
        f_s.index(slot * 4).store(f1)
        f_s.index(slot * 4 + 1).store(f2)
        f_s.index(slot * 4 + 2).store(f3)
        f_s.index(slot * 4 + 3).store(f4)
        el_s.index(slot).store(fe)
        if QSIDE:
            gm_s.index(slot).store(f0)
        _cta_barrier()  # every lane's stores precede the (one-thread) ready arrive in _load_chunk's expect
        _load_chunk(descs, ready.index(slot), slot, k_s, q_s, a_s, aq_s, v_s, row, arow, c * 64, qcol, vcol, BK, BV,
                    QSIDE or NO_Q, None, False, NO_Q)
        # chunk c + 1's factors (masked past the sequence end: nothing is read beyond it)
        l1 = c * 64 + 64
        fm = (l1 + fr) < L
        f1 = gl.load(f_base + plane + l1 + fr, mask=fm, other=0.0)
        f2 = gl.load(f_base + 2 * plane + l1 + fr, mask=fm, other=0.0)
        f3 = gl.load(f_base + 3 * plane + l1 + fr, mask=fm, other=0.0)
        f4 = gl.load(f_base + 4 * plane + l1 + fr, mask=fm, other=0.0)
        fe = gl.load(p_el + gl.minimum(L, l1 + 64) + er * 0, mask=(l1 + er * 0) < L, other=1.0)
        if QSIDE:
            f0 = gl.load(f_base + l1 + fr, mask=fm, other=0.0)


@gluon.jit
def _ws_output(q_s, aq_s, k_s, gm_s, sb_s, u_s, f_s, ready, empty, su_ready, su_empty, o, NT, bos, L, hv, b_idx,
               s_ob, s_ot, s_oh, offs_vc, V, scale, BV: gl.constexpr, STAGES: gl.constexpr, QSIDE: gl.constexpr,
               PAR: gl.constexpr):
    """Output partition (4 warps) of the chunks c with c % 2 == ``PAR``: both off-chain dots as one asynchronous
    pair, then the epilogue with e^gamma from the slot's factor rows. With ``QSIDE`` the slot holds the raw q and no
    Aqk: the raw q goes to both dots, Aqk is formed in registers (``_q_side_scaled``), the L2 norm and ``scale`` are
    row factors, and the slot is released as soon as Aqk is formed."""
    MMA: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, BV, 16])
    ROW: gl.constexpr = gl.SliceLayout(1, MMA)
    COL: gl.constexpr = gl.SliceLayout(0, MMA)
    AV: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=MMA, k_width=2)  # left operand, BV-wide result
    M64: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, 64, 16])
    A64: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=M64, k_width=2)  # left operand, 64-wide result
    dt: gl.constexpr = q_s.dtype
    zero = gl.zeros([64, BV], gl.float32, MMA)
    z64 = gl.zeros([64, 64], gl.float32, M64)
    rr = gl.expand_dims(gl.arange(0, 64, layout=gl.SliceLayout(1, M64)), 1)
    cc = gl.expand_dims(gl.arange(0, 64, layout=gl.SliceLayout(0, M64)), 0)
    ro = gl.arange(0, 64, layout=ROW)
    cs = offs_vc + gl.arange(0, BV, layout=COL)
    mc = gl.expand_dims(cs < V, 0)
    o_base = o + b_idx.to(gl.int64) * s_ob + hv * s_oh
    for c in range(PAR, NT, 2):
        l0 = c * 64
        slot = c % STAGES
        b = c % 2
        mbarrier.wait(ready.index(slot), (c // STAGES) & 1)
        eg = f_s.index(slot * 4 + 2).load(ROW)
        if QSIDE:
            qa, aqk, r64 = _q_side_scaled(q_s.index(slot), k_s.index(slot), gm_s.index(slot), None, z64, scale, rr,
                                          cc, M64, A64, AV, dt, False)
            eg = eg * gl.convert_layout(r64, ROW)
            _cta_barrier()  # (every warp's Q K^T has read k; the gamma rows are loaded)
            mbarrier.arrive(empty.index(slot), count=1)
            qv = gl.convert_layout(qa, AV, assert_trivial=True)
            mbarrier.wait(su_ready.index(b), (c // 2) & 1)
            qs = warpgroup_mma(qv, sb_s.index(b), zero, use_acc=False, is_async=True)
            ot = warpgroup_mma(aqk, u_s.index(b), zero, use_acc=False, is_async=True)
        else:
            mbarrier.wait(su_ready.index(b), (c // 2) & 1)
            qs = warpgroup_mma(q_s.index(slot), sb_s.index(b), zero, use_acc=False, is_async=True)
            ot = warpgroup_mma(aq_s.index(slot), u_s.index(b), zero, use_acc=False, is_async=True)
        qs, ot = warpgroup_mma_wait(0, deps=[qs, ot])
        _cta_barrier()  # every warp's wgmma reads of S_c, U_c and the slot are complete
        mbarrier.arrive(su_empty.index(b), count=1)
        if QSIDE:  # (the slot was released above; scale is in eg and Aqk)
            out = qs * gl.expand_dims(eg, 1) + ot
        else:
            mbarrier.arrive(empty.index(slot), count=1)
            out = (qs * gl.expand_dims(eg, 1) + ot) * scale
        mo = gl.expand_dims((l0 + ro) < L, 1) & mc
        p_o = o_base + gl.expand_dims((bos + l0 + ro).to(gl.int64) * s_ot, 1) + gl.expand_dims(cs, 0)
        gl.store(p_o, out.to(p_o.dtype.element_ty), mask=mo)


@gluon.jit
def _ws_chain(k_s, a_s, v_s, sb_s, x_s, u_s, ud_s, f_s, el_s, ready, empty, su_ready, su_empty, S, NT,
              BV: gl.constexpr, STAGES: gl.constexpr, HANDOFF: gl.constexpr = True, vmask=None):
    """Chain partition (default, 4 warps): the state recurrence, with the row factors from the slot's factor rows;
    returns ``(final state,)``. Without ``HANDOFF`` (the segment kernel, which has no output partition; ``sb_s`` one
    [BK, BV] buffer, ``u_s``, ``su_ready`` and ``su_empty`` unused) no S_c / U_c hand-off. ``vmask`` ([1, BV], or
    None for all): the columns whose v term counts (the segment kernel's transition columns run with v = 0)."""
    MMA: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, BV, 16])
    ROW: gl.constexpr = gl.SliceLayout(1, MMA)
    dt: gl.constexpr = sb_s.dtype
    zero = gl.zeros([64, BV], gl.float32, MMA)
    for c in range(NT):
        slot = c % STAGES
        b = c % 2
        if HANDOFF:
            sb = sb_s.index(b)
            mbarrier.wait(su_empty.index(b), ((c // 2) & 1) ^ 1)  # the output partition is done with chunk c - 2
        else:
            sb = sb_s
        sb.store(S.to(dt))
        fence_async_shared()
        _cta_barrier()
        # every warp is past chunk c - 1 (its wgmmas and its v loads, fenced above): release that slot
        mbarrier.arrive(empty.index((c + STAGES - 1) % STAGES), count=1, pred=c > 0)
        mbarrier.wait(ready.index(slot), (c // STAGES) & 1)
        kb = k_s.index(slot)
        ks = warpgroup_mma(kb, sb, zero, use_acc=False, is_async=True)
        vt = v_s.index(slot).load(MMA).to(gl.float32)
        c_bt = f_s.index(slot * 4).load(ROW)
        c_be = f_s.index(slot * 4 + 1).load(ROW)
        c_dk = f_s.index(slot * 4 + 3).load(ROW)
        c_egl = gl.expand_dims(el_s.index(slot).load(ROW), 1)
        ks = warpgroup_mma_wait(0, deps=[ks])
        if vmask is None:
            X = gl.expand_dims(c_bt, 1) * vt - gl.expand_dims(c_be, 1) * ks
        else:
            X = gl.where(vmask, gl.expand_dims(c_bt, 1) * vt, 0.0) - gl.expand_dims(c_be, 1) * ks
        x_s.store(X.to(dt))
        fence_async_shared()
        _cta_barrier()
        u = warpgroup_mma(a_s.index(slot), x_s, zero, use_acc=False, is_async=True)
        u = warpgroup_mma_wait(0, deps=[u])
        if HANDOFF:
            u_s.index(b).store(u.to(dt))
        ud_s.store((u * gl.expand_dims(c_dk, 1)).to(dt))
        fence_async_shared()
        _cta_barrier()
        if HANDOFF:
            mbarrier.arrive(su_ready.index(b), count=1)
        st = warpgroup_mma(kb.permute((1, 0)), ud_s, S * c_egl, is_async=True)
        S = warpgroup_mma_wait(0, deps=[st])
    return (S,)  # a tuple: Triton 3.6 flattens the default partition's result as a sequence


@gluon.jit(do_not_specialize=["T", "TOTAL_T"])
def atrex_sm90_gdn_state_output_gl_ws(
    qd, kd, vd, ad, aqd, fac, h0, o, ht, cu, scale,
    T, HV, K, V,
    s_ob, s_ot, s_oh,
    s_h0n, s_h0h, s_h0k, s_h0v,
    TOTAL_T, ROWS, QW, VW, s_qr, s_kr, s_vr, N_NH,
    IS_VARLEN: gl.constexpr, G: gl.constexpr, BK: gl.constexpr, BV: gl.constexpr,
    USE_H0: gl.constexpr, STORE_HT: gl.constexpr, STATE_V_FIRST: gl.constexpr, STAGES: gl.constexpr,
    OUT_REGS: gl.constexpr, QSIDE: gl.constexpr = False,
):
    """One program per (V block ``program_id(0)``, sequence x value head ``program_id(1)``) carries its state block
    across the sequence's chunks, its work split over the partitions of the module comment. ``qd``, ``kd``, ``vd``
    are the q, k, v data (``[B*T, H*K]``, ``[B*T, HV*V]`` through ROWS, QW, VW and the row strides), ``ad``, ``aqd``
    the intra kernel's A and Aqk tiles, ``fac`` its factor planes; the TMA descriptors are built in the kernel. Rows
    of a chunk past the sequence end hold the next sequence's (finite) rows: the masked row factors (0) remove them
    from the state and the output store skips them. K == BK (64 or 128), BV in {32, 64}; num_warps 4 (the chain
    partition); STAGES load slots; OUT_REGS registers per output-partition thread. ``QSIDE``: ``qd`` is the raw q and
    ``aqd`` is not read; the output partitions form the q norms and Aqk themselves. ``N_NH`` is not read."""
    MMA: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, BV, 16])
    ROW: gl.constexpr = gl.SliceLayout(1, MMA)
    COL: gl.constexpr = gl.SliceLayout(0, MMA)
    SH_V: gl.constexpr = gl.NVMMASharedLayout.get_default_for([64, BV], gl.bfloat16)
    SH_S: gl.constexpr = gl.NVMMASharedLayout.get_default_for([BK, BV], gl.bfloat16)
    dt: gl.constexpr = o.dtype.element_ty

    i_v = gl.program_id(0)
    n, hv, h, bos, b_idx, tg0, L = _sequence(cu, T, HV, G, IS_VARLEN)
    NT = gl.cdiv(L, 64)
    n64 = n.to(gl.int64)
    offs_vc = i_v * BV
    row = tg0
    arow = hv * TOTAL_T + tg0
    qcol = h * K
    vcol = hv * V + offs_vc
    f_base = fac + hv.to(gl.int64) * TOTAL_T + tg0.to(gl.int64)

    rs = gl.arange(0, BK, layout=ROW)
    cs = offs_vc + gl.arange(0, BV, layout=COL)
    ms = gl.expand_dims(rs < K, 1) & gl.expand_dims(cs < V, 0)
    S = _initial_state(h0, n64, hv, s_h0n, s_h0h, s_h0k, s_h0v, rs, cs, ms, BK, BV, USE_H0, MMA)

    k_s, q_s, a_s, aq_s, v_s = _ring_tiles(dt, BK, BV, STAGES)
    sb_s = gl.allocate_shared_memory(dt, [2, BK, BV], SH_S)
    u_s = gl.allocate_shared_memory(dt, [2, 64, BV], SH_V)
    x_s = gl.allocate_shared_memory(dt, [64, BV], SH_V)
    ud_s = gl.allocate_shared_memory(dt, [64, BV], SH_V)
    f_s = gl.allocate_shared_memory(gl.float32, [STAGES * 4, 64], gl.SwizzledSharedLayout(1, 1, 1, [0]))
    el_s = gl.allocate_shared_memory(gl.float32, [STAGES, BK], gl.SwizzledSharedLayout(1, 1, 1, [0]))
    if QSIDE:  # the chunk-local gamma rows of the slots (for the output partitions' decay tiles)
        gm_s = gl.allocate_shared_memory(gl.float32, [STAGES, 64], gl.SwizzledSharedLayout(1, 1, 1, [0]))
    else:
        gm_s = el_s
    ready, empty, su_ready, su_empty = _ring_barriers(STAGES)
    # the loader holds the next chunk's factors in registers (and the gamma row with QSIDE)
    LREGS: gl.constexpr = 48 if QSIDE else 40
    # (the argument tuples are written out in each call: a tuple held in a variable turns its constexprs into tensors)
    res = gl.warp_specialize([
        (_ws_chain, (k_s, a_s, v_s, sb_s, x_s, u_s, ud_s, f_s, el_s, ready, empty, su_ready, su_empty, S, NT, BV,
                     STAGES)),
        (_ws_output, (q_s, aq_s, k_s, gm_s, sb_s, u_s, f_s, ready, empty, su_ready, su_empty, o, NT, bos, L, hv, b_idx,
                      s_ob, s_ot, s_oh, offs_vc, V, scale, BV, STAGES, QSIDE, 0)),
        (_ws_output, (q_s, aq_s, k_s, gm_s, sb_s, u_s, f_s, ready, empty, su_ready, su_empty, o, NT, bos, L, hv, b_idx,
                      s_ob, s_ot, s_oh, offs_vc, V, scale, BV, STAGES, QSIDE, 1)),
        (_ws_loader, (kd, qd, vd, ad, aqd, k_s, q_s, a_s, aq_s, v_s, f_s, el_s, gm_s, ready, empty, NT, row,
                      arow, qcol, vcol, ROWS, QW, VW, s_qr, s_kr, s_vr, HV, TOTAL_T, f_base, L, BK, BV, STAGES,
                      QSIDE)),
    ], [4, 4, 1], [OUT_REGS, OUT_REGS, LREGS])
    S = res[0]

    if STORE_HT:
        _store_state(ht, S, n64, hv, HV, K, V, rs, cs, ms, STATE_V_FIRST)


# ---------------------------------------------------------------------------------------------------------------
# Segment pass: the first phase of the sequence-parallel state pass, for calls with too few (sequence, value head)
# pairs to fill the SMs (one long prompt at tensor-parallel 4 or 8). Each sequence is cut into NSEG segments of LSEG
# tokens (a multiple of 64, so that the intra kernel's chunks are the segments' chunks). The recurrence is linear in
# the state, S_end = M S_start + R, with M (K x K) the product of the segment's per-token transitions and R the state
# the segment reaches from zero. One launch forms both for every segment: the chain runs on V + K columns, the first V
# from a zero state with the segment's v, the last K from the identity with v = 0 (the columns of M). No output is
# formed. ``atrex_sm90_gdn_segment_scan`` then composes the segments' initial states in fp32, and the usual state pass
# runs the segments as sequences from them, forming the outputs.
# ---------------------------------------------------------------------------------------------------------------


@gluon.jit(do_not_specialize=["T", "TOTAL_T", "LSEG"])
def atrex_sm90_gdn_state_segments_gl(
    kd, vd, ad, fac, R, cu_out,
    T, LSEG, NSEG, NA, HV, K, V, N_CU,
    TOTAL_T, ROWS, QW, VW, s_kr, s_vr,
    G: gl.constexpr, BK: gl.constexpr, BV: gl.constexpr, STAGES: gl.constexpr,
):
    """Program (i_v, (b * NA + s) * HV + hv): columns [i_v BV, i_v BV + BV) of segment s (the first NA of a
    sequence's NSEG) of batch row b, value head hv, over the ``V + K`` columns of ``R`` ``[B, NA, HV, K, V + K]``
    (fp32): R's value columns from a zero state, M's columns from the identity (the comment above). The segment is
    rows [b T + s LSEG, + min(LSEG, T - s LSEG)) of the token-indexed operands (k ``[B*T, H*K]``, v ``[B*T, HV*V]``,
    A, the factor planes). Program (0, 0) also writes the ``N_CU`` = B NSEG + 1 segment bounds ``cu_out`` (int32),
    the cu_seqlens of the state pass that runs the segments as sequences. K == BK (64 or 128), BV 32 or 64 dividing V,
    num_warps 4. Partitions: ``_ws_chain`` without the hand-off, ``_ws_loader`` without the q and Aqk tiles."""
    MMA: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, BV, 16])
    ROW: gl.constexpr = gl.SliceLayout(1, MMA)
    COL: gl.constexpr = gl.SliceLayout(0, MMA)
    SH_V: gl.constexpr = gl.NVMMASharedLayout.get_default_for([64, BV], gl.bfloat16)
    SH_K: gl.constexpr = gl.NVMMASharedLayout.get_default_for([64, BK], gl.bfloat16)
    SH_A: gl.constexpr = gl.NVMMASharedLayout.get_default_for([64, 64], gl.bfloat16)
    SH_S: gl.constexpr = gl.NVMMASharedLayout.get_default_for([BK, BV], gl.bfloat16)
    dt: gl.constexpr = kd.dtype.element_ty

    i_v = gl.program_id(0)
    i_sh = gl.program_id(1)
    if (i_v == 0) & (i_sh == 0):
        CL: gl.constexpr = gl.BlockedLayout([1], [32], [4], [0])
        for j0 in range(0, N_CU, 128):
            j = j0 + gl.arange(0, 128, layout=CL)
            gl.store(cu_out + j, (j // NSEG) * T + gl.minimum((j % NSEG) * LSEG, T), mask=j < N_CU)
    hv = i_sh % HV
    i_seg = i_sh // HV
    b = i_seg // NA
    s0 = (i_seg % NA) * LSEG
    L = gl.minimum(LSEG, T - s0)
    NT = gl.cdiv(L, 64)
    row = b * T + s0
    arow = hv * TOTAL_T + row
    qcol = (hv // G) * K
    vcol = hv * V + (i_v % (V // BV)) * BV  # (M's columns load a v tile they do not use)
    f_base = fac + hv.to(gl.int64) * TOTAL_T + row.to(gl.int64)

    VP = V + K
    rs = gl.arange(0, BK, layout=ROW)
    cs = i_v * BV + gl.arange(0, BV, layout=COL)
    S = gl.where(gl.expand_dims(rs + V, 1) == gl.expand_dims(cs, 0), 1.0, 0.0)  # zero on the value columns
    vmask = gl.expand_dims(cs < V, 0)

    a_s = gl.allocate_shared_memory(dt, [STAGES, 64, 64], SH_A)
    k_s = gl.allocate_shared_memory(dt, [STAGES, 64, BK], SH_K)
    v_s = gl.allocate_shared_memory(dt, [STAGES, 64, BV], SH_V)
    sb_s = gl.allocate_shared_memory(dt, [BK, BV], SH_S)
    x_s = gl.allocate_shared_memory(dt, [64, BV], SH_V)
    ud_s = gl.allocate_shared_memory(dt, [64, BV], SH_V)
    f_s = gl.allocate_shared_memory(gl.float32, [STAGES * 4, 64], gl.SwizzledSharedLayout(1, 1, 1, [0]))
    el_s = gl.allocate_shared_memory(gl.float32, [STAGES, BK], gl.SwizzledSharedLayout(1, 1, 1, [0]))
    ready, empty, _su_ready, _su_empty = _ring_barriers(STAGES, 1)
    res = gl.warp_specialize([
        (_ws_chain, (k_s, a_s, v_s, sb_s, x_s, ud_s, ud_s, f_s, el_s, ready, empty, ready, empty, S, NT, BV, STAGES,
                     False, vmask)),
        (_ws_loader, (kd, kd, vd, ad, ad, k_s, k_s, a_s, a_s, v_s, f_s, el_s, el_s, ready, empty, NT, row,
                      arow, qcol, vcol, ROWS, QW, VW, s_kr, s_kr, s_vr, HV, TOTAL_T, f_base, L, BK, BV, STAGES,
                      False, True)),
    ], [1], [40])
    S = res[0]
    ms = gl.expand_dims(rs < K, 1) & gl.expand_dims(cs < VP, 0)
    p_r = R + i_sh.to(gl.int64) * K * VP + gl.expand_dims(rs * VP, 1) + gl.expand_dims(cs, 0)
    gl.store(p_r, S, mask=ms)
