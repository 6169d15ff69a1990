"""Gluon state/output kernels of ATREX's SM90 chunked Gated-DeltaNet: ``STATE_IMPL`` "gl_ws" ("auto"'s choice where the
state pass has few programs and TMA applies, since round 9) and "gl_rc" (transposed state with register operands,
persistent; "auto"'s choice where there are more BV = 32 programs than SMs, since round 10; see its block comment).

Same math, arguments and grid as ``kernels.atrex_sm90_gdn_state_output_tma``: one program per (V-block, sequence x
value head) carries its fp32 state block ``S [BK, BV]`` across the chunks of its sequence. Per chunk, with the
per-row factors beta, beta e^gamma, e^gamma, e^(gamma_last - gamma) from the intra kernel:

    X  = beta V - (beta e^gamma) (K S)          U = A X
    O  = scale (e^gamma (Q S) + Aqk U)          S = e^gamma_last S + K^T (U e^(gamma_last - gamma))

Only ``K S``, ``U = A X`` and the state update are a dependent chain; ``Q S``, ``Aqk U`` and the output epilogue are
not. The kernel gives them to different warps (the partition comment below). Two earlier Gluon kernels of the same
math, one warp group issuing everything with asynchronous wgmma pairs (round 7 "gl": cp.async ring; round 8 "gl_tma":
TMA ring), were correct but slower than the Triton tma kernel and were removed in round 9 (BENCH_H200.md).

Gluon has no interpreter: this kernel is checked by compiling it for sm90 on a CPU (op_test/nvidia/
test_triton_sm90_compile.py) and by the GPU target cases.
"""

from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.ampere import async_copy, mma_v2
from triton.experimental.gluon.language.nvidia.hopper import (
    fence_async_shared,
    mbarrier,
    tma,
    warpgroup_mma,
    warpgroup_mma_wait,
)

from . import kernels as _k  # (the Triton kernels: an elementwise helper the fused kernel shares)

# CTA-wide barrier (inside a warp partition: that partition's warps): ``thread_barrier`` in 3.6, ``barrier`` in 3.9
_cta_barrier = getattr(gl, "thread_barrier", None) or gl.barrier
# TMA global -> shared (descriptor, coordinates, mbarrier, destination): ``async_copy_global_to_shared`` in Triton 3.6,
# renamed ``async_load`` by 3.9, which keeps the old name as an alias
_tma_load = getattr(tma, "async_load", None) or tma.async_copy_global_to_shared
# TMA shared -> global (descriptor, coordinates, source): ``async_copy_shared_to_global`` in Triton 3.6, ``async_store``
# by 3.9, which removed the old name
_tma_store = getattr(tma, "async_store", None) or tma.async_copy_shared_to_global
# cp.async global -> shared (destination, pointers, mask): ``async_copy_global_to_shared`` in 3.6, ``async_load`` in 3.9
_cp_async = getattr(async_copy, "async_load", None) or async_copy.async_copy_global_to_shared


@gluon.jit
def _pdl_enter(PDL: gl.constexpr):
    """``kernels._pdl_enter`` for the Gluon kernels (``launch.PDL``, round 28): the kernel's first statement, run by
    every warp before the partitions split, so that no partition touches memory before the previous kernel is done."""
    if PDL:
        gl.inline_asm_elementwise("griddepcontrol.wait; // $0", "=r", [], dtype=gl.int32, is_pure=False, pack=1)
        gl.inline_asm_elementwise("griddepcontrol.launch_dependents; // $0", "=r", [], dtype=gl.int32, is_pure=False,
                                  pack=1)


@gluon.jit
def _row_factors(f_base, plane, l0, L, ROW: gl.constexpr):
    """(beta, beta e^gamma, e^gamma, e^(gamma_last - gamma)) of chunk rows [l0, l0 + 64) (0 past L) and
    e^gamma_last (1 when the chunk is empty), from ``fac`` planes 1-4."""
    r = gl.arange(0, 64, layout=ROW)
    m = (l0 + r) < L
    p = f_base + l0 + r
    bt = gl.load(p + plane, mask=m, other=0.0)
    be = gl.load(p + 2 * plane, mask=m, other=0.0)
    eg = gl.load(p + 3 * plane, mask=m, other=0.0)
    dk = gl.load(p + 4 * plane, mask=m, other=0.0)
    last = gl.minimum(L, l0 + 64) - 1
    egl = gl.load(f_base + 3 * plane + last, mask=l0 < L, other=1.0)
    return bt, be, eg, dk, egl


@gluon.jit
def _sequence(cu, T, HV, G: gl.constexpr, IS_VARLEN: gl.constexpr):
    """(n, hv, h, bos, b_idx, tg0, L) of program axis 1 (sequence x value head): see ``_seq_head``."""
    return _seq_head(gl.program_id(1), cu, T, HV, G, IS_VARLEN)


@gluon.jit
def _seq_head(i_nh, cu, T, HV, G: gl.constexpr, IS_VARLEN: gl.constexpr):
    """(n, hv, h, bos, b_idx, tg0, L) of (sequence x value head) index ``i_nh``: the sequence's token range
    [bos, bos + L) in batch row ``b_idx``, and its first row ``tg0`` in the token-indexed workspaces."""
    n = i_nh // HV
    hv = i_nh % HV
    h = hv // G
    if IS_VARLEN:
        bos = gl.load(cu + n).to(gl.int32)
        eos = gl.load(cu + n + 1).to(gl.int32)
        b_idx = n * 0
        tg0 = bos
    else:
        bos = n * 0
        eos = bos + T
        b_idx = n
        tg0 = n * T
    return n, hv, h, bos, b_idx, tg0, eos - bos


@gluon.jit
def _initial_state(h0, n64, hv, s_h0n, s_h0h, s_h0k, s_h0v, rs, cs, ms, BK: gl.constexpr, BV: gl.constexpr,
                   USE_H0: gl.constexpr, MMA: gl.constexpr):
    """The fp32 state block [BK, BV] in the wgmma accumulator layout: from ``h0`` (either layout through its
    strides) or zero."""
    if USE_H0:
        p_h0 = h0 + n64 * s_h0n + hv * s_h0h + gl.expand_dims(rs * s_h0k, 1) + gl.expand_dims(cs * s_h0v, 0)
        S = gl.load(p_h0, mask=ms, other=0.0).to(gl.float32)
    else:
        S = gl.zeros([BK, BV], gl.float32, MMA)
    return S


@gluon.jit
def _store_state(ht, S, n64, hv, HV, K, V, rs, cs, ms, STATE_V_FIRST: gl.constexpr):
    """Final fp32 state block into ``ht`` ``[N, HV, K, V]`` (``[N, HV, V, K]`` if ``STATE_V_FIRST``)."""
    if STATE_V_FIRST:
        p_ht = ht + n64 * HV * K * V + hv * K * V + gl.expand_dims(cs * K, 0) + gl.expand_dims(rs, 1)
    else:
        p_ht = ht + n64 * HV * K * V + hv * K * V + gl.expand_dims(rs * V, 1) + gl.expand_dims(cs, 0)
    gl.store(p_ht, S, mask=ms)


# ---------------------------------------------------------------------------------------------------------------
# Warp-specialised state pass (round 9, STATE_IMPL "gl_ws"). Round 8 (ncu) had a one-warp-group Gluon step latency-bound
# with one warp per scheduler issuing everything: the dependent chain K S -> U = A X -> S update, and beside it the two
# off-chain dots (Q S, Aqk U) and the output epilogue. Here three partitions of one CTA split that work:
#   chain (default, 4 warps):  S (fp32, registers); per chunk: S -> bf16 buffer b, K S, X, U = A X -> U buffer b,
#                              S = e^gamma_last S + K^T (dk U). Hands (S_c, U_c) to the output partition.
#   output (worker, 4 warps):  O = scale (e^gamma (Q S_c) + Aqk U_c) from the handed-over buffers, stored to HBM.
#   loader (worker, 1 warp):   the TMA loads of chunk c into ring slot c % STAGES once both consumers freed it; with
#                              FAC_SMEM (round 13, the launcher's default) also the chunk's row factors, loaded one
#                              chunk ahead and stored into the slot before its ready arrive.
# mbarriers: ready[s] (TMA bytes landed), empty[s] (count 2: chain and output are done with slot s), su_ready[b] /
# su_empty[b] (double-buffered S_c / U_c hand-off, b = c % 2). Only one thread of a partition arrives on an mbarrier,
# so each arrive follows a partition barrier (every warp is past the data it guards).
# ---------------------------------------------------------------------------------------------------------------


@gluon.jit
def _ring_tiles(dt: gl.constexpr, BK: gl.constexpr, BV: gl.constexpr, STAGES: gl.constexpr,
                NO_AQK: gl.constexpr = False):
    """The load ring of the Gluon state kernels: STAGES slots of the k, q ([64, BK]), A, Aqk ([64, 64]) and v
    ([64, BV]) tiles, in the NVMMA layouts TMA writes and wgmma reads. ``NO_AQK`` (a kernel that loads no Aqk tile):
    the Aqk ring is the A ring's handle, never read (round 26: the 24 KB gl_rc's output tile takes)."""
    SH_K: gl.constexpr = gl.NVMMASharedLayout.get_default_for([64, BK], gl.bfloat16)
    SH_A: gl.constexpr = gl.NVMMASharedLayout.get_default_for([64, 64], gl.bfloat16)
    SH_V: gl.constexpr = gl.NVMMASharedLayout.get_default_for([64, BV], gl.bfloat16)
    a_s = gl.allocate_shared_memory(dt, [STAGES, 64, 64], SH_A)
    if NO_AQK:
        aq_s = a_s
    else:
        aq_s = gl.allocate_shared_memory(dt, [STAGES, 64, 64], SH_A)
    return (gl.allocate_shared_memory(dt, [STAGES, 64, BK], SH_K), gl.allocate_shared_memory(dt, [STAGES, 64, BK], SH_K),
            a_s, aq_s, gl.allocate_shared_memory(dt, [STAGES, 64, BV], SH_V))


@gluon.jit
def _ring_barriers(STAGES: gl.constexpr, CONSUMERS: gl.constexpr = 2):
    """(ready, empty, su_ready, su_empty), initialised: ready[s] (TMA bytes, and in gl_rc the cp.async factors, of slot
    s landed), empty[s] (count 2: chain and output partition are done with slot s), su_ready[b] / su_empty[b] (the
    double-buffered S_c / U_c hand-off from chain to output partition)."""
    ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    su_ready = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
    su_empty = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(STAGES):
        mbarrier.init(ready.index(i), count=1)
        mbarrier.init(empty.index(i), count=CONSUMERS)
    for i in gl.static_range(2):
        mbarrier.init(su_ready.index(i), count=1)
        mbarrier.init(su_empty.index(i), count=1)
    fence_async_shared()  # the initialised barriers, visible to the TMA unit and to every warp
    _cta_barrier()
    return ready, empty, su_ready, su_empty


@gluon.jit
def _descriptors(kd, qd, vd, ad, aqd, ROWS, QW, VW, s_qr, s_kr, s_vr, HV, TOTAL_T, BK: gl.constexpr,
                 BV: gl.constexpr):
    """The five TMA descriptors of the Gluon state kernels (built in the kernel, by the loader partition): k and q
    ``[B*T, H*K]`` boxes [64, BK], v ``[B*T, HV*V]`` boxes [64, BV], A and Aqk ``[HV*TOTAL_T, 64]`` boxes [64, 64]."""
    SH_K: gl.constexpr = gl.NVMMASharedLayout.get_default_for([64, BK], gl.bfloat16)
    SH_A: gl.constexpr = gl.NVMMASharedLayout.get_default_for([64, 64], gl.bfloat16)
    SH_V: gl.constexpr = gl.NVMMASharedLayout.get_default_for([64, BV], gl.bfloat16)
    return (tma.make_tensor_descriptor(kd, [ROWS, QW], [s_kr, 1], [64, BK], SH_K),
            tma.make_tensor_descriptor(qd, [ROWS, QW], [s_qr, 1], [64, BK], SH_K),
            tma.make_tensor_descriptor(vd, [ROWS, VW], [s_vr, 1], [64, BV], SH_V),
            tma.make_tensor_descriptor(ad, [HV * TOTAL_T, 64], [64, 1], [64, 64], SH_A),
            tma.make_tensor_descriptor(aqd, [HV * TOTAL_T, 64], [64, 1], [64, 64], SH_A))


@gluon.jit
def _load_chunk(descs, bar, slot, k_s, q_s, a_s, aq_s, v_s, row, arow, l0, qcol, vcol, BK: gl.constexpr,
                BV: gl.constexpr, NO_AQK: gl.constexpr = False, v1_s=None, V2: gl.constexpr = False,
                NO_Q: gl.constexpr = False):
    """Chunk rows [row + l0, row + l0 + 64) of k, q, v and rows [arow + l0, arow + l0 + 64) of A, Aqk into ring slot
    ``slot`` by TMA; ``bar`` expects their bytes. ``NO_AQK`` (gl_rc's QSIDE): no Aqk tile. ``V2`` (gl_rc2): also the
    next BV columns of v into ``v1_s``. ``NO_Q`` (the segment kernel, which forms no output): no q tile."""
    kdesc, qdesc, vdesc, adesc, aqdesc = descs
    mbarrier.expect(bar, ((1 if NO_Q else 2) * 64 * BK + (1 if NO_AQK else 2) * 64 * 64 + (2 if V2 else 1) * 64 * BV)
                    * 2)
    if V2:
        _tma_load(vdesc, [row + l0, vcol + BV], bar, v1_s.index(slot))
    _tma_load(kdesc, [row + l0, qcol], bar, k_s.index(slot))
    if not NO_Q:
        _tma_load(qdesc, [row + l0, qcol], bar, q_s.index(slot))
    _tma_load(adesc, [arow + l0, 0], bar, a_s.index(slot))
    if not NO_AQK:
        _tma_load(aqdesc, [arow + l0, 0], bar, aq_s.index(slot))
    _tma_load(vdesc, [row + l0, vcol], bar, v_s.index(slot))


@gluon.jit
def _ws_loader(kd, qd, vd, ad, aqd, k_s, q_s, a_s, aq_s, v_s, f_s, el_s, gm_s, ready, empty, NT, row, arow, qcol,
               vcol, ROWS, QW, VW, s_qr, s_kr, s_vr, HV, TOTAL_T, f_base, L,
               BK: gl.constexpr, BV: gl.constexpr, STAGES: gl.constexpr, FAC_SMEM: gl.constexpr,
               QSIDE: gl.constexpr = False, NO_Q: gl.constexpr = False):
    """Loader partition (1 warp): chunk c's k, q, A, Aqk and v tiles into slot c % STAGES by TMA, after both
    consumers released the slot's previous chunk (empty barriers start 'phase 1 complete': the first round passes).
    The descriptors are built here, by the only partition that uses them. With ``FAC_SMEM`` the warp also stores the
    chunk's factor planes 1-4 (0 past the sequence end) into ``f_s`` rows 4 slot .. 4 slot + 3 and e^gamma_last (in
    all BK entries) into ``el_s`` row slot, before the slot's ready arrive (which releases them to the consumers). It
    loads them from global memory one chunk ahead, while it waits for the next free slot, so that their latency
    falls on this warp, not on the chain. ``QSIDE`` (needs ``FAC_SMEM``): no Aqk tile; the chunk-local gamma (plane 0,
    0 past the sequence end) into ``gm_s`` row slot instead, for the output partition's decay tile. ``NO_Q`` (the
    segment kernel; without QSIDE): neither the q nor the Aqk tile."""
    gl.static_assert(FAC_SMEM or not QSIDE)
    gl.static_assert(not (NO_Q and QSIDE))
    descs = _descriptors(kd, qd, vd, ad, aqd, ROWS, QW, VW, s_qr, s_kr, s_vr, HV, TOTAL_T, BK, BV)
    if FAC_SMEM:
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
        if FAC_SMEM:
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
        if FAC_SMEM:  # chunk c + 1's factors (masked past the sequence end: nothing is read beyond it)
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
def _ws_output(q_s, aq_s, k_s, gm_s, sb_s, u_s, f_s, ready, empty, su_ready, su_empty, o, fac, NT, row, bos, L, hv,
               HV, TOTAL_T, b_idx, s_ob, s_ot, s_oh, offs_vc, V, scale, BV: gl.constexpr, STAGES: gl.constexpr,
               FAC_SMEM: gl.constexpr, QSIDE: gl.constexpr = False, FAST_EXP: gl.constexpr = False,
               QSCALE: gl.constexpr = False, ones_s=None, QNORM_MMA: gl.constexpr = False, PAR: gl.constexpr = 0,
               NOUT: gl.constexpr = 1):
    """Output partition (4 warps): per chunk, both off-chain dots as one asynchronous pair, then the epilogue
    (e^gamma from the slot's factor rows with ``FAC_SMEM``, else loaded from ``fac`` one chunk ahead). With ``QSIDE``
    (round 25) the slot holds the raw q and no Aqk: q is L2-normalised into registers (``_q_regs``) and Aqk = tril(Q
    K^T e^(gamma_r - gamma_c)) formed here, both held in registers as wgmma left operands (gl_rc's QSIDE step).
    ``QSCALE`` (round 26, with QSIDE): gl_rc's GL_RC_QSCALE and GL_RC_EARLY_FREE here (raw q in the dots, the norm and
    scale as row factors; the slot released once Aqk is formed), and ``QNORM_MMA`` (bf16) its GL_RC_QNORM_MMA.
    ``NOUT`` = 2 (round 32, GL_WS_OUT2): this partition takes only the chunks c with c % 2 == ``PAR``, a second one
    the others, so that each has two chain steps for a chunk's output (the S / U hand-off buffer of chunk c is c % 2:
    each buffer has one reader)."""
    gl.static_assert(NOUT == 1 or (NOUT == 2 and FAC_SMEM and not QNORM_MMA))
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
    plane = (hv * 0 + HV).to(gl.int64) * TOTAL_T
    p_eg = fac + 3 * plane + hv.to(gl.int64) * TOTAL_T + row.to(gl.int64)  # e^gamma of the sequence's rows
    if FAC_SMEM:
        eg = gl.zeros([64], gl.float32, ROW)
    else:
        eg = gl.load(p_eg + ro, mask=ro < L, other=0.0)
    if QNORM_MMA:
        _fill_ones(ones_s)
    for c in range(PAR, NT, NOUT):
        l0 = c * 64
        slot = c % STAGES
        b = c % 2
        if not FAC_SMEM:
            eg_n = gl.load(p_eg + l0 + 64 + ro, mask=(l0 + 64 + ro) < L, other=0.0)
        mbarrier.wait(ready.index(slot), (c // STAGES) & 1)
        if FAC_SMEM:
            eg = f_s.index(slot * 4 + 2).load(ROW)
        if QSIDE and QSCALE:
            qa, aqk, r64 = _q_side_scaled(q_s.index(slot), k_s.index(slot), gm_s.index(slot), ones_s, z64, scale, rr,
                                          cc, M64, A64, AV, dt, FAST_EXP, QNORM_MMA)
            eg = eg * gl.convert_layout(r64, ROW)
            _cta_barrier()  # (every warp's Q K^T has read k; the gamma rows are loaded)
            mbarrier.arrive(empty.index(slot), count=1)
            qv = gl.convert_layout(qa, AV, assert_trivial=True)
            mbarrier.wait(su_ready.index(b), (c // 2) & 1)
            qs = warpgroup_mma(qv, sb_s.index(b), zero, use_acc=False, is_async=True)
            ot = warpgroup_mma(aqk, u_s.index(b), zero, use_acc=False, is_async=True)
        elif QSIDE:
            qa = _q_regs(q_s.index(slot), A64)
            qk = warpgroup_mma(qa, k_s.index(slot).permute((1, 0)), z64, use_acc=False, is_async=True)
            aqk = _aqk_regs(qk, gm_s.index(slot), rr, cc, l0, L, M64, AV, dt, FAST_EXP)
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
        if QSIDE and QSCALE:  # (the slot was released above; scale is in eg and Aqk)
            out = qs * gl.expand_dims(eg, 1) + ot
        else:
            mbarrier.arrive(empty.index(slot), count=1)
            out = (qs * gl.expand_dims(eg, 1) + ot) * scale
        mo = gl.expand_dims((l0 + ro) < L, 1) & mc
        p_o = o_base + gl.expand_dims((bos + l0 + ro).to(gl.int64) * s_ot, 1) + gl.expand_dims(cs, 0)
        gl.store(p_o, out.to(p_o.dtype.element_ty), mask=mo)
        if not FAC_SMEM:
            eg = eg_n


@gluon.jit
def _ws_chain(k_s, a_s, v_s, sb_s, x_s, u_s, ud_s, f_s, el_s, ready, empty, su_ready, su_empty, S, f_base, plane, NT,
              L, BV: gl.constexpr, STAGES: gl.constexpr, FAC_SMEM: gl.constexpr, HANDOFF: gl.constexpr = True,
              vmask=None):
    """Chain partition (default, 4 warps): the state recurrence; returns ``(final state,)``. The row factors come
    from the slot's factor rows with ``FAC_SMEM`` (no global load in the loop), else from ``fac`` one chunk ahead.
    Without ``HANDOFF`` (the segment kernel, which has no output partition; ``sb_s`` one [BK, BV] buffer, ``u_s``,
    ``su_ready`` and ``su_empty`` unused) no S_c / U_c hand-off; ``vmask`` ([1, BV], or None for all): the columns
    whose v term counts (the segment kernel's value columns; its transition columns run with v = 0)."""
    MMA: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, BV, 16])
    ROW: gl.constexpr = gl.SliceLayout(1, MMA)
    dt: gl.constexpr = sb_s.dtype
    zero = gl.zeros([64, BV], gl.float32, MMA)
    if not FAC_SMEM:
        bt, be, _eg, dk, egl = _row_factors(f_base, plane, 0, L, ROW)  # (e^gamma: the output partition's)
    for c in range(NT):
        l0 = c * 64
        slot = c % STAGES
        b = c % 2
        if not FAC_SMEM:
            bt_n, be_n, _eg_n, dk_n, egl_n = _row_factors(f_base, plane, l0 + 64, L, ROW)
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
        if FAC_SMEM:
            c_bt = f_s.index(slot * 4).load(ROW)
            c_be = f_s.index(slot * 4 + 1).load(ROW)
            c_dk = f_s.index(slot * 4 + 3).load(ROW)
            c_egl = gl.expand_dims(el_s.index(slot).load(ROW), 1)
        else:
            c_bt, c_be, c_dk, c_egl = bt, be, dk, egl
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
        if not FAC_SMEM:
            bt, be, dk, egl = bt_n, be_n, dk_n, egl_n
    return (S,)  # a tuple: Triton 3.6 flattens the default partition's result as a sequence


@gluon.jit(do_not_specialize=["T", "TOTAL_T"])
def atrex_sm90_gdn_state_output_gl_ws(
    qd, kd, vd, ad, aqd, fac, h0, o, ht, cu, scale,
    T, HV, K, V,
    s_ob, s_ot, s_oh,
    s_h0n, s_h0h, s_h0k, s_h0v,
    TOTAL_T, ROWS, QW, VW, s_qr, s_kr, s_vr, N_NH,
    IS_VARLEN: gl.constexpr, G: gl.constexpr, BK: gl.constexpr, BV: gl.constexpr,
    USE_H0: gl.constexpr, STORE_HT: gl.constexpr, STATE_V_FIRST: gl.constexpr, DEVICE_DESC: gl.constexpr,
    PERSISTENT: gl.constexpr, STAGES: gl.constexpr, OUT_REGS: gl.constexpr, FAC_SMEM: gl.constexpr = False,
    QSIDE: gl.constexpr = False, FAST_EXP: gl.constexpr = False, QSCALE: gl.constexpr = False,
    QNORM_MMA: gl.constexpr = False, OUT2: gl.constexpr = False,
):
    """The Triton tma kernel's math, arguments and grid (descriptors built in the kernel: DEVICE_DESC True, PERSISTENT
    False), with the work of a program split over three warp partitions (the block comment above): the 4 chain warps
    issue only the recurrence, the output dots and epilogue run on 4 other warps, the TMA loads on a ninth. Rows of a
    chunk past the sequence end hold the next sequence's (finite) rows, as in the tma kernel: the masked row factors
    (0) remove them from the state and the output store skips them. K == BK (64 or 128), BV in {32, 64}; num_warps
    must be 4 (the chain partition); STAGES load slots; OUT_REGS registers per output-partition thread. With
    ``FAC_SMEM`` (round 13) the loader also stores each chunk's row factors into the load slot (loaded one chunk
    ahead, 40 loader registers, 16 fewer for the output partition: the caller's OUT_REGS), so that neither consumer
    loads from global memory inside its loop. ``QSIDE`` (round 25, launch.GL_WS_QSIDE; needs ``FAC_SMEM``): gl_rc's
    QSIDE for this kernel: ``qd`` is the raw q, ``aqd`` is not read, the output partition forms the normalised q and
    Aqk in registers. ``QSCALE``, ``QNORM_MMA`` (round 26; with QSIDE): ``_ws_output``. ``OUT2`` (round 32,
    launch.GL_WS_OUT2; needs ``FAC_SMEM``): two output partitions of 4 warps, one for the even chunks and one for the
    odd, each with OUT_REGS registers (the chain keeps the rest of a 512-thread CTA's file)."""
    MMA: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, BV, 16])
    ROW: gl.constexpr = gl.SliceLayout(1, MMA)
    COL: gl.constexpr = gl.SliceLayout(0, MMA)
    SH_V: gl.constexpr = gl.NVMMASharedLayout.get_default_for([64, BV], gl.bfloat16)
    SH_S: gl.constexpr = gl.NVMMASharedLayout.get_default_for([BK, BV], gl.bfloat16)
    dt: gl.constexpr = o.dtype.element_ty
    gl.static_assert(DEVICE_DESC and not PERSISTENT)

    i_v = gl.program_id(0)
    n, hv, h, bos, b_idx, tg0, L = _sequence(cu, T, HV, G, IS_VARLEN)
    NT = gl.cdiv(L, 64)
    n64 = n.to(gl.int64)
    offs_vc = i_v * BV
    row = tg0
    arow = hv * TOTAL_T + tg0
    qcol = h * K
    vcol = hv * V + offs_vc
    plane = (hv * 0 + HV).to(gl.int64) * TOTAL_T
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
    FAC_ROWS: gl.constexpr = STAGES if FAC_SMEM else 1
    LOADER_REGS: gl.constexpr = 40 if FAC_SMEM else 24  # (the next chunk's factors in the loader's registers)
    f_s = gl.allocate_shared_memory(gl.float32, [FAC_ROWS * 4, 64], gl.SwizzledSharedLayout(1, 1, 1, [0]))
    el_s = gl.allocate_shared_memory(gl.float32, [FAC_ROWS, BK], gl.SwizzledSharedLayout(1, 1, 1, [0]))
    if QSIDE:  # the chunk-local gamma rows of the slots (for the output partition's decay tile)
        gm_s = gl.allocate_shared_memory(gl.float32, [STAGES, 64], gl.SwizzledSharedLayout(1, 1, 1, [0]))
    else:
        gm_s = el_s
    ones_s = _ones_tile(dt, BK, QNORM_MMA, x_s)
    ready, empty, su_ready, su_empty = _ring_barriers(STAGES)
    # (the argument tuples are written out in each call: a tuple held in a variable turns its constexprs into tensors)
    LREGS: gl.constexpr = LOADER_REGS + (8 if QSIDE else 0)
    if OUT2:
        res = gl.warp_specialize([
            (_ws_chain, (k_s, a_s, v_s, sb_s, x_s, u_s, ud_s, f_s, el_s, ready, empty, su_ready, su_empty, S, f_base,
                         plane, NT, L, BV, STAGES, FAC_SMEM)),
            (_ws_output, (q_s, aq_s, k_s, gm_s, sb_s, u_s, f_s, ready, empty, su_ready, su_empty, o, fac, NT, row, bos,
                          L, hv, HV, TOTAL_T, b_idx, s_ob, s_ot, s_oh, offs_vc, V, scale, BV, STAGES, FAC_SMEM, QSIDE,
                          FAST_EXP, QSCALE, ones_s, QNORM_MMA, 0, 2)),
            (_ws_output, (q_s, aq_s, k_s, gm_s, sb_s, u_s, f_s, ready, empty, su_ready, su_empty, o, fac, NT, row, bos,
                          L, hv, HV, TOTAL_T, b_idx, s_ob, s_ot, s_oh, offs_vc, V, scale, BV, STAGES, FAC_SMEM, QSIDE,
                          FAST_EXP, QSCALE, ones_s, QNORM_MMA, 1, 2)),
            (_ws_loader, (kd, qd, vd, ad, aqd, k_s, q_s, a_s, aq_s, v_s, f_s, el_s, gm_s, ready, empty, NT, row,
                          arow, qcol, vcol, ROWS, QW, VW, s_qr, s_kr, s_vr, HV, TOTAL_T, f_base, L, BK, BV, STAGES,
                          FAC_SMEM, QSIDE)),
        ], [4, 4, 1], [OUT_REGS, OUT_REGS, LREGS])
    else:
        res = gl.warp_specialize([
            (_ws_chain, (k_s, a_s, v_s, sb_s, x_s, u_s, ud_s, f_s, el_s, ready, empty, su_ready, su_empty, S, f_base,
                         plane, NT, L, BV, STAGES, FAC_SMEM)),
            (_ws_output, (q_s, aq_s, k_s, gm_s, sb_s, u_s, f_s, ready, empty, su_ready, su_empty, o, fac, NT, row, bos,
                          L, hv, HV, TOTAL_T, b_idx, s_ob, s_ot, s_oh, offs_vc, V, scale, BV, STAGES, FAC_SMEM, QSIDE,
                          FAST_EXP, QSCALE, ones_s, QNORM_MMA)),
            (_ws_loader, (kd, qd, vd, ad, aqd, k_s, q_s, a_s, aq_s, v_s, f_s, el_s, gm_s, ready, empty, NT, row,
                          arow, qcol, vcol, ROWS, QW, VW, s_qr, s_kr, s_vr, HV, TOTAL_T, f_base, L, BK, BV, STAGES,
                          FAC_SMEM, QSIDE)),
        ], [4, 1], [OUT_REGS, LREGS])
    S = res[0]

    if STORE_HT:
        _store_state(ht, S, n64, hv, HV, K, V, rs, cs, ms, STATE_V_FIRST)


# ---------------------------------------------------------------------------------------------------------------
# Segment pass (round 34, launch.SEQ_PARALLEL): the first phase of the sequence-parallel state pass, for calls with
# too few (sequence, value head) pairs to fill the SMs (one long prompt at tensor-parallel 4 or 8). Each sequence is
# cut into NSEG segments of LSEG tokens (a multiple of 64, so that the intra kernel's chunks are the segments' chunks).
# The recurrence is linear in the state, S_end = M S_start + R, with M (K x K) the product of the segment's per-token
# transitions and R the state the segment reaches from zero. One launch forms both for every segment at once: the
# chain runs on V + K columns, the first V from a zero state with the segment's v, the last K from the identity with
# v = 0 (the columns of M). No output is formed. ``kernels.atrex_sm90_gdn_segment_scan`` then composes the segments'
# initial states in fp32, and the usual state pass runs the segments as sequences from them, forming the outputs.
# Partitions: gl_ws's chain without the output hand-off (HANDOFF off) and gl_ws's loader without the q and Aqk tiles.
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
    (fp32): R's value columns from a zero state, M's columns from the identity (the block comment above). The segment
    is rows [b T + s LSEG, + min(LSEG, T - s LSEG)) of the token-indexed operands (k ``[B*T, H*K]``, v ``[B*T, HV*V]``,
    A, the factor planes). Program (0, 0) also writes the ``N_CU`` = B NSEG + 1 segment bounds ``cu_out`` (int32),
    the cu_seqlens of the state pass that runs the segments as sequences. K == BK (64 or 128), BV 32 or 64 dividing V,
    num_warps 4."""
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
        (_ws_chain, (k_s, a_s, v_s, sb_s, x_s, ud_s, ud_s, f_s, el_s, ready, empty, ready, empty, S, f_base, 0, NT,
                     L, BV, STAGES, True, False, vmask)),
        (_ws_loader, (kd, kd, vd, ad, ad, k_s, k_s, a_s, a_s, v_s, f_s, el_s, el_s, ready, empty, NT, row,
                      arow, qcol, vcol, ROWS, QW, VW, s_kr, s_kr, s_vr, HV, TOTAL_T, f_base, L, BK, BV, STAGES,
                      True, False, True)),
    ], [1], [40])
    S = res[0]
    ms = gl.expand_dims(rs < K, 1) & gl.expand_dims(cs < VP, 0)
    p_r = R + i_sh.to(gl.int64) * K * VP + gl.expand_dims(rs * VP, 1) + gl.expand_dims(cs, 0)
    gl.store(p_r, S, mask=ms)


# ---------------------------------------------------------------------------------------------------------------
# Register-chain state pass (round 10, STATE_IMPL "gl_rc"). gl_ws's chain step (ncu, round 9: ~1.2 us, latency-bound)
# spends most of its time outside the tensor cores: before each of its three dependent wgmmas the chain warps store an
# operand (S, X, dk U) to shared memory, fence and synchronise. Carried transposed, S^T [BV, BK] with BV = 64 (the
# wgmma M), every chain dot takes its left operand from registers, as FlashAttention-3 does with P:
#     P^T = S^T K^T      (left: S^T, bf16 registers;  right: the k tile, permuted)
#     X^T = beta V^T - (beta e^gamma) P^T                (factors along columns)
#     U^T = X^T A^T      (left: X^T, registers;        right: the A tile, permuted)
#     S^T = e^gamma_last S^T + (U^T dk) K                (left: U^T dk, registers; right: the k tile)
# The accumulator -> left-operand conversions move no data (``assert_trivial``). The chain stores S_c^T and U_c^T for
# the output partition after issuing the dot that reads the same registers, off its critical path. The kernel is
# persistent: a 1-D grid of CTAs, each looping over (V block, sequence x value head) items with one chunk counter for
# every ring, so the loader fetches the next item's first chunks while the chain finishes the current one.
# ---------------------------------------------------------------------------------------------------------------


CTA_SCHED_NB = gl.constexpr(64)  # (launch.GL_RC_SCHEDULE = "cta": at most this many sequences)
CTA_SCHED_RB = gl.constexpr(16)  # (and at most this many rounds of items)


@gluon.jit
def _cta_slots(cu, sched, N, N_ITEMS, r):
    """``launch.GL_RC_SCHEDULE = "cta"`` (round 37; SCHED == 2): the "snake" order of ``kernels.
    atrex_sm90_gdn_item_schedule`` for this CTA's own slots only, in its prologue, so that no schedule kernel stands in
    the call's chain. Sequences ranked by chunk count (descending, ties by index: a sequence's rank is the number of
    keys above its own, an N x N comparison); with P = grid CTAs and R = ceil(N_ITEMS / P) rounds, slot j P + p takes
    the item at sorted position j P + p where j has the last round's parity, else j P + P - 1 - p, and the item at
    sorted position s is (the sequence of rank s // M) * M + s % M, M = N_ITEMS / N. Returns the items of rounds
    ``r`` (``[CTA_SCHED_RB]``, slice 1 of the layout below) and writes them to ``sched[j P + p]`` too (read by nothing
    but the GPU test). ``cu`` is the call's input, so this may run before the PDL wait. N <= CTA_SCHED_NB,
    R <= CTA_SCHED_RB."""
    NB: gl.constexpr = CTA_SCHED_NB
    L2: gl.constexpr = gl.BlockedLayout([1, 2], [2, 16], [gl.num_warps(), 1], [1, 0])
    RL: gl.constexpr = gl.SliceLayout(1, L2)
    CL: gl.constexpr = gl.SliceLayout(0, L2)
    P = gl.num_programs(0)
    p = gl.program_id(0)
    M = N_ITEMS // N
    R = gl.cdiv(N_ITEMS, P)
    ja = gl.arange(0, NB, layout=RL)
    jb = gl.arange(0, NB, layout=CL)
    ma = ja < N
    mb = jb < N
    ca = gl.cdiv(gl.load(cu + ja + 1, mask=ma, other=0).to(gl.int32) - gl.load(cu + ja, mask=ma, other=0).to(gl.int32),
                 64)
    cb = gl.cdiv(gl.load(cu + jb + 1, mask=mb, other=0).to(gl.int32) - gl.load(cu + jb, mask=mb, other=0).to(gl.int32),
                 64)
    ka = gl.where(ma, ca.to(gl.int64) * NB + (NB - 1 - ja), -1)
    kb = gl.where(mb, cb.to(gl.int64) * NB + (NB - 1 - jb), -1)
    rank = gl.sum((gl.expand_dims(ka, 1) > gl.expand_dims(kb, 0)).to(gl.int32), axis=0)  # (CL: sequence jb's rank)
    pos = r * P + gl.where((r % 2) == ((R - 1) % 2), p, P - 1 - p)
    hit = (gl.expand_dims(pos // M, 1) == gl.expand_dims(rank, 0)) & gl.expand_dims(mb, 0)
    seq = gl.sum(gl.where(hit, gl.expand_dims(jb, 0), 0), axis=1)
    item = seq * M + pos % M
    gl.store(sched + r * P + p, item, mask=(r < R) & (r * P + p < N_ITEMS))
    return item


@gluon.jit
def _sched_table(cu, sched, N, N_ITEMS, SCHED: gl.constexpr):
    """The CTA's items, round by round, in shared memory (round 37): ``[CTA_SCHED_RB, 1]`` int32, entry j the item of
    slot j P + p. SCHED 2 forms them here (``_cta_slots``), otherwise they are read from the order the schedule kernel
    wrote (``sched``, complete before this kernel launched). Returns (the first slot's item, the table). The
    partitions then read their item per slot from it (``_sched_item``) and hold no pointer or item across their
    loops: round 37's SASS of a global-memory read per item spilled twice the registers (r138)."""
    RB: gl.constexpr = CTA_SCHED_RB
    L2: gl.constexpr = gl.BlockedLayout([1, 2], [2, 16], [gl.num_warps(), 1], [1, 0])
    r = gl.arange(0, RB, layout=gl.SliceLayout(1, L2))
    if SCHED == 2:
        item = _cta_slots(cu, sched, N, N_ITEMS, r)
    else:
        slot = r * gl.num_programs(0) + gl.program_id(0)
        item = gl.load(sched + slot, mask=slot < N_ITEMS, other=0)
    tab = gl.allocate_shared_memory(gl.int32, [RB, 1], gl.SwizzledSharedLayout(1, 1, 1, [0]))
    LY: gl.constexpr = gl.BlockedLayout([1], [32], [gl.num_warps()], [0])
    for j in gl.static_range(RB):
        tab.index(j).store(gl.full([1], gl.sum(gl.where(r == j, item, 0), axis=0), gl.int32, LY))
    return gl.sum(gl.where(r == 0, item, 0), axis=0), tab


@gluon.jit
def _sched_item(tab, slot_i, SCHED: gl.constexpr):
    """The work item of slot ``slot_i`` (CTA p runs slots p, p + grid, ...): with ``SCHED`` (round 36,
    launch.GL_RC_SCHEDULE) the entry of its round in the CTA's shared-memory table (``_sched_table``), else
    ``slot_i``."""
    if SCHED:
        LY: gl.constexpr = gl.BlockedLayout([1], [32], [gl.num_warps()], [0])
        item = gl.sum(tab.index((slot_i - gl.program_id(0)) // gl.num_programs(0)).load(LY), axis=0)
    else:
        item = slot_i
    return item


@gluon.jit
def _rc_item(item, NV, cu, T, HV, G: gl.constexpr, IS_VARLEN: gl.constexpr):
    """(i_v, n, hv, h, bos, b_idx, tg0, L) of work item ``item`` = (sequence x value head) * NV + V block."""
    i_v = item % NV
    n, hv, h, bos, b_idx, tg0, L = _seq_head(item // NV, cu, T, HV, G, IS_VARLEN)
    return i_v, n, hv, h, bos, b_idx, tg0, L


@gluon.jit
def _rc_loader(kd, qd, vd, ad, aqd, fac, k_s, q_s, a_s, aq_s, v_s, f_s, gm_s, ready, empty, cu, T, HV, K, V, N_ITEMS,
               NV, ROWS, QW, VW, s_qr, s_kr, s_vr, TOTAL_T,
               G: gl.constexpr, IS_VARLEN: gl.constexpr, BK: gl.constexpr, BV: gl.constexpr, STAGES: gl.constexpr,
               EG_PLANE: gl.constexpr, QSIDE: gl.constexpr, v1_s=None, V2: gl.constexpr = False,
               L2PF: gl.constexpr = False, h0=None, s_h0n=0, s_h0h=0, s_h0k=0, s_h0v=0, H0PF: gl.constexpr = 0,
               H0_KC: gl.constexpr = True, sched=None, SCHED: gl.constexpr = False):
    """Loader partition (1 warp): every chunk of every item of this CTA into ring slot (chunk counter) % STAGES: the
    five tiles by TMA, and the chunk's factor planes 1-4 (beta, beta e^gamma, e^gamma, e^(gamma_last - gamma); 0 past
    the sequence end) and e^gamma_last (in all 64 entries of a fifth row) by cp.async, whose completion the slot's ready
    barrier also waits for. (TMA cannot fetch the factors: a plane's row stride, TOTAL_T fp32, need not be a multiple of
    16 bytes.) With ``QSIDE`` no Aqk tile; instead the chunk-local gamma (plane 0; 0 past the sequence end) into
    ``gm_s``. ``L2PF`` (round 27, launch.GL_RC_L2_PREFETCH): once a chunk's loads are issued, the rows of the item's next
    chunk (k, q with QSIDE, A, v: 448 lines of 128 bytes at K = V = 128) are prefetched into L2, a chunk before the
    slot that takes them is free (r97: gl_rc2's chains waited half their time for their loads; the DRAM was 84%
    busy on an H100). ``H0PF`` (round 29, launch.GL_RC_H0_PREFETCH; only with an initial state): 1, at the start of
    each item after the CTA's first, the item's initial-state block is prefetched into L2 (the chains load it STAGES
    chunks later, when they reach the item); 2, the next item's block at the start of each item (L2::evict_last)."""
    gl.static_assert(not (SCHED and H0PF == 2))  # (mode 2 prefetches slot + grid's item: not with a schedule)
    FL: gl.constexpr = gl.BlockedLayout([2], [32], [1], [0])
    fr = gl.arange(0, 64, layout=FL)
    plane = (HV + fr * 0).to(gl.int64) * TOTAL_T
    descs = _descriptors(kd, qd, vd, ad, aqd, ROWS, QW, VW, s_qr, s_kr, s_vr, HV, TOTAL_T, BK, BV)
    it = 0
    for slot_i in range(gl.program_id(0), N_ITEMS, gl.num_programs(0)):
        item = _sched_item(sched, slot_i, SCHED)
        i_v, n, hv, h, bos, b_idx, tg0, L = _rc_item(item, NV, cu, T, HV, G, IS_VARLEN)
        if H0PF == 1:
            if slot_i != gl.program_id(0):  # (the CTA's first item: the kernel's start, before the PDL wait)
                _h0_prefetch(h0, item, N_ITEMS, NV, cu, T, HV, V, s_h0n, s_h0h, s_h0k, s_h0v, G, IS_VARLEN, BK,
                             (2 if V2 else 1) * BV, H0_KC, 1, False)
        elif H0PF == 2:
            _h0_prefetch(h0, item + gl.num_programs(0), N_ITEMS, NV, cu, T, HV, V, s_h0n, s_h0h, s_h0k, s_h0v, G,
                         IS_VARLEN, BK, (2 if V2 else 1) * BV, H0_KC, 1, True)
        arow = hv * TOTAL_T + tg0
        qcol = h * K
        vcol = hv * V + i_v * BV
        f_base = fac + hv.to(gl.int64) * TOTAL_T + tg0.to(gl.int64)
        for c in range(gl.cdiv(L, 64)):
            slot = it % STAGES
            mbarrier.wait(empty.index(slot), ((it // STAGES) & 1) ^ 1)
            bar = ready.index(slot)
            l0 = c * 64
            fm = (l0 + fr) < L
            for j in gl.static_range(4):  # planes 1, 2, EG_PLANE (the output's e^gamma), 4
                _cp_async(f_s.index(slot * 5 + j), f_base + (EG_PLANE if j == 2 else j + 1) * plane + l0 + fr,
                          mask=fm)
            _cp_async(f_s.index(slot * 5 + 4), f_base + 3 * plane + gl.minimum(L, l0 + 64) - 1 + fr * 0)
            if QSIDE:
                _cp_async(gm_s.index(slot), f_base + l0 + fr, mask=fm)
            # each lane's arrive raises the pending count now and lowers it when its copies have landed: the phase
            # cannot complete before them (it must come before the expect's own arrive)
            async_copy.mbarrier_arrive(bar)
            _load_chunk(descs, bar, slot, k_s, q_s, a_s, aq_s, v_s, tg0, arow, l0, qcol, vcol, BK, BV, QSIDE, v1_s, V2)
            if L2PF and l0 + 64 < L:
                nr = L - l0 - 64  # (rows of the next chunk inside the sequence: >= 1; the rest are clamped to its last)
                _l2_prefetch_rows(kd + qcol, tg0 + l0 + 64, nr, s_kr, BK // 64)
                if QSIDE:
                    _l2_prefetch_rows(qd + qcol, tg0 + l0 + 64, nr, s_qr, BK // 64)
                _l2_prefetch_rows(ad, arow + l0 + 64, nr, 64, 1)
                _l2_prefetch_rows(vd + vcol, tg0 + l0 + 64, nr, s_vr, (2 if V2 else 1) * BV // 64)
            it += 1


@gluon.jit
def _l2_prefetch_rows(base, r0, nr, stride, LINES: gl.constexpr):
    """Prefetch into L2 (``prefetch.global.L2``, a hint: nothing waits for it) rows r0 .. r0 + 63 of a row-major
    16-bit tensor at ``base`` (row stride ``stride`` elements), LINES 128-byte lines from ``base`` in each row; rows
    from r0 + ``nr`` on are replaced by row r0 + nr - 1 (addresses inside the sequence only). One warp, a line per lane
    per step."""
    FL: gl.constexpr = gl.BlockedLayout([1], [32], [1], [0])
    lane = gl.arange(0, 32, layout=FL)
    for j in gl.static_range(64 * LINES // 32):
        idx = j * 32 + lane
        r = gl.minimum(idx // LINES, nr - 1)
        p = base + (r0 + r).to(gl.int64) * stride + (idx % LINES) * 64
        gl.inline_asm_elementwise("prefetch.global.L2 [$1];\n\tmov.u32 $0, 0;", "=r,l", [p], dtype=gl.int32,
                                  is_pure=False, pack=1)


@gluon.jit
def _h0_prefetch(h0, item, N_ITEMS, NV, cu, T, HV, V, s_h0n, s_h0h, s_h0k, s_h0v, G: gl.constexpr,
                 IS_VARLEN: gl.constexpr, BK: gl.constexpr, BW: gl.constexpr, H0_KC: gl.constexpr,
                 NW: gl.constexpr, EVICT_LAST: gl.constexpr):
    """Prefetch into L2 (a hint: nothing waits for it) the initial-state block of work item ``item`` (nothing when
    ``item >= N_ITEMS``): its BW value columns from V block ``item % NV`` times its BK key rows, one address every 32
    elements (a 128-byte line of an fp32 state; a 16-bit state gets two per line), BW * BK / 32 addresses over the
    ``NW`` warps that call it. ``H0_KC``: h0's k stride is 1 (the
    state_v_first layout: BW rows of BK contiguous values), else its v stride is (BK rows of BW). Addresses past V
    are clamped to the last column (inside the tensor). ``EVICT_LAST``: the L2::evict_last form (a prefetch an item
    ahead, which streaming loads would otherwise evict)."""
    if item < N_ITEMS:
        i_v, n, hv, h, bos, b_idx, tg0, L = _rc_item(item, NV, cu, T, HV, G, IS_VARLEN)
        base = h0 + n.to(gl.int64) * s_h0n + hv.to(gl.int64) * s_h0h
        FL: gl.constexpr = gl.BlockedLayout([1], [32], [NW], [0])
        # (the thread's index through an opaque 0 that depends on the item: otherwise the compiler hoists the 16
        # addresses' column parts out of the item loop and keeps them on the stack, as HT_REMAT's note tells)
        z = gl.inline_asm_elementwise("mov.u32 $0, 0;", "=r,r", [item], dtype=gl.int32, is_pure=True, pack=1)
        lane = gl.arange(0, 32 * NW, layout=FL) + z
        c0 = i_v * BW
        for j in gl.static_range(BW * BK // (1024 * NW)):  # (an address per thread at a time: the loader has 24 registers)
            idx = j * 32 * NW + lane
            if H0_KC:
                col = gl.minimum(c0 + idx // (BK // 32), V - 1)
                p = base + col.to(gl.int64) * s_h0v + (idx % (BK // 32)) * 32 * s_h0k
            else:
                col = gl.minimum(c0 + (idx % (BW // 32)) * 32, V - 1)
                p = base + (idx // (BW // 32)).to(gl.int64) * s_h0k + col * s_h0v
            if EVICT_LAST:
                gl.inline_asm_elementwise("prefetch.global.L2::evict_last [$1];\n\tmov.u32 $0, 0;", "=r,l", [p],
                                          dtype=gl.int32, is_pure=False, pack=1)
            else:
                gl.inline_asm_elementwise("prefetch.global.L2 [$1];\n\tmov.u32 $0, 0;", "=r,l", [p],
                                          dtype=gl.int32, is_pure=False, pack=1)


@gluon.jit
def _rc_out_item(item, NV, cu, T, HV, V, o, s_ob, s_oh, COL: gl.constexpr, G: gl.constexpr, IS_VARLEN: gl.constexpr,
                 BV: gl.constexpr):
    """What an output partition needs of work item ``item``: (bos, L, its V columns, their mask, its output base, and
    for a TMA store its first row and column in the ``[B*T, HV*V]`` view of the output)."""
    i_v, n, hv, h, bos, b_idx, tg0, L = _rc_item(item, NV, cu, T, HV, G, IS_VARLEN)
    cs = i_v * BV + gl.arange(0, BV, layout=COL)
    return bos, L, cs, gl.expand_dims(cs < V, 0), o + b_idx.to(gl.int64) * s_ob + hv * s_oh, tg0, hv * V + i_v * BV


@gluon.jit
def _rc_out_store(qs, ot, eg, scale, o_base, bos, l0, L, ro, cs, mc, s_ot):
    """O = scale (e^gamma (Q S_c) + Aqk U_c) of chunk rows [l0, l0 + 64) into the output (rows past L skipped)."""
    out = (qs * gl.expand_dims(eg, 1) + ot) * scale
    mo = gl.expand_dims((l0 + ro) < L, 1) & mc
    p_o = o_base + gl.expand_dims((bos + l0 + ro).to(gl.int64) * s_ot, 1) + gl.expand_dims(cs, 0)
    gl.store(p_o, out.to(p_o.dtype.element_ty), mask=mo)


@gluon.jit
def _rc_out_desc(o, ROWS, W, s_ot, o_s, BV: gl.constexpr, OUT_TMA: gl.constexpr):
    """The TMA descriptor of the output as ``[ROWS, W]`` with row stride ``s_ot``, boxes [64, BV] (``OUT_TMA``; else
    ``o_s``, never used as one)."""
    if OUT_TMA:
        return tma.make_tensor_descriptor(o, [ROWS, W], [s_ot, 1], [64, BV], o_s.layout)
    else:
        return o_s


@gluon.jit
def _rc_tile_out(out, o_s, od, o_base, bos, l0, L, ro, cs, mc, s_ot, orow, ocol, OUT_TMA: gl.constexpr):
    """A chunk's [64, BV] output tile ``out`` (fp32, accumulator layout) to rows [l0, l0 + 64) of a sequence: with
    ``OUT_TMA`` and a whole chunk through ``o_s`` by one TMA store at (``orow`` + l0, ``ocol``) of ``od`` (the caller
    waited for the previous one), else by the masked store at ``o_base`` (rows past ``L`` skipped)."""
    if OUT_TMA and l0 + 64 <= L:
        o_s.store(out.to(o_s.dtype))
        fence_async_shared()
        _cta_barrier()
        _tma_store(od, [orow + l0, ocol], o_s)
    else:
        mo = gl.expand_dims((l0 + ro) < L, 1) & mc
        p_o = o_base + gl.expand_dims((bos + l0 + ro).to(gl.int64) * s_ot, 1) + gl.expand_dims(cs, 0)
        gl.store(p_o, out.to(p_o.dtype.element_ty), mask=mo)


@gluon.jit
def _rc_output(q_s, aq_s, k_s, gm_s, sb_s, u_s, f_s, o_s, ready, empty, su_ready, su_empty, o, cu, T, HV, V, N_ITEMS,
               NV, TOTAL_T, ROWS, s_ob, s_ot, s_oh, scale,
               G: gl.constexpr, IS_VARLEN: gl.constexpr, BK: gl.constexpr, BV: gl.constexpr, STAGES: gl.constexpr,
               QSIDE: gl.constexpr, FAST_EXP: gl.constexpr, QREG: gl.constexpr = False, QSCALE: gl.constexpr = False,
               EARLY_FREE: gl.constexpr = False, OUT_TMA: gl.constexpr = False, ones_s=None,
               QNORM_MMA: gl.constexpr = False, sched=None, SCHED: gl.constexpr = False):
    """Output partition (4 warps): O = scale (e^gamma (Q S_c) + Aqk U_c) from the chain's transposed S_c^T, U_c^T.
    With ``QSIDE`` the slot holds the raw q and no Aqk: q is L2-normalised in place and Aqk = tril(Q K^T e^(gamma_r -
    gamma_c)) formed here (the intra kernel's arithmetic, held in registers as the left operand of Aqk U), while the
    chain works on the chunk. With ``QREG`` as well (round 25) q is normalised into registers instead (``_q_regs``):
    the left operand of both Q K^T and Q S_c, with no store, fence or barrier before them.
    Round 26 (r90: this partition, ~816 instructions a chunk, bounded the step; the chain alone steps in ~1.5 us):
    ``QSCALE`` (with QREG) feeds the raw q to both dots and applies the L2 norm and ``scale`` as row factors: 1 / ||q_r||
    times scale folded into the decay tile's exponent and into e^gamma (``_q_raw_regs``, ``_aqk_regs_scaled``): no
    per-element normalisation, rounding or output scaling. ``EARLY_FREE`` (with QREG) releases the load slot once Aqk is
    formed: Q S_c and Aqk U_c read registers and the hand-off buffers only. ``OUT_TMA`` (a TMA-describable output)
    stores each whole chunk's tile through shared memory ``o_s`` by TMA (a chunk that ends its sequence early keeps the
    masked store: TMA would write the next sequence's rows). ``QNORM_MMA`` (with QSCALE, bf16): the rows' squared norms
    by the tensor cores, (Q o Q) times the ones tile ``ones_s`` (``_q_raw_regs_mma``)."""
    MMA: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, BV, 16])
    ROW: gl.constexpr = gl.SliceLayout(1, MMA)
    COL: gl.constexpr = gl.SliceLayout(0, MMA)
    A64: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=MMA, k_width=2)
    TK: gl.constexpr = BK // 8
    BLK: gl.constexpr = gl.BlockedLayout([1, 8], [32 // TK, TK], [4, 1], [1, 0])
    dt: gl.constexpr = q_s.dtype
    zero = gl.zeros([64, BV], gl.float32, MMA)
    ro = gl.arange(0, 64, layout=ROW)
    rr = gl.expand_dims(ro, 1)
    cc = gl.expand_dims(gl.arange(0, 64, layout=COL), 0)
    od = _rc_out_desc(o, ROWS, HV * V, s_ot, o_s, BV, OUT_TMA)
    if QNORM_MMA:
        _fill_ones(ones_s)
    it = 0
    for slot_i in range(gl.program_id(0), N_ITEMS, gl.num_programs(0)):
        item = _sched_item(sched, slot_i, SCHED)
        bos, L, cs, mc, o_base, orow, ocol = _rc_out_item(item, NV, cu, T, HV, V, o, s_ob, s_oh, COL, G, IS_VARLEN,
                                                          BV)
        for c in range(gl.cdiv(L, 64)):
            l0 = c * 64
            slot = it % STAGES
            b = it % 2
            mbarrier.wait(ready.index(slot), (it // STAGES) & 1)
            eg = f_s.index(slot * 5 + 2).load(ROW)
            if QSIDE and QREG:
                if QSCALE:
                    qa, aqk, rs = _q_side_scaled(q_s.index(slot), k_s.index(slot), gm_s.index(slot), ones_s, zero,
                                                 scale, rr, cc, MMA, A64, A64, dt, FAST_EXP, QNORM_MMA)
                    eg = eg * rs
                else:
                    qa = _q_regs(q_s.index(slot), A64)
                    qk = warpgroup_mma(qa, k_s.index(slot).permute((1, 0)), zero, use_acc=False, is_async=True)
                    aqk = _aqk_regs(qk, gm_s.index(slot), rr, cc, l0, L, MMA, A64, dt, FAST_EXP)
                if EARLY_FREE:  # (every warp's Q K^T has read k and its gamma rows are loaded)
                    _cta_barrier()
                    mbarrier.arrive(empty.index(slot), count=1)
                mbarrier.wait(su_ready.index(b), (it // 2) & 1)
                qs = warpgroup_mma(qa, sb_s.index(b).permute((1, 0)), zero, use_acc=False, is_async=True)
                ot = warpgroup_mma(aqk, u_s.index(b).permute((1, 0)), zero, use_acc=False, is_async=True)
            elif QSIDE:
                qb = q_s.index(slot)
                _fu_l2norm(qb, BLK)
                fence_async_shared()
                _cta_barrier()
                qk = warpgroup_mma(qb, k_s.index(slot).permute((1, 0)), zero, use_acc=False, is_async=True)
                valid = (rr >= cc) & ((l0 + rr) < L)  # (rows past the sequence: gamma 0, their outputs not stored)
                gr = gm_s.index(slot).load(ROW)
                gc = gm_s.index(slot).load(COL)
                e = _fu_exp(gl.where(valid, gl.expand_dims(gr, 1) - gl.expand_dims(gc, 0), 0.0), FAST_EXP)
                qk = warpgroup_mma_wait(0, deps=[qk])
                aqk = gl.convert_layout(gl.where(valid, qk * e, 0.0).to(dt), A64, assert_trivial=True)
                mbarrier.wait(su_ready.index(b), (it // 2) & 1)
                qs = warpgroup_mma(qb, sb_s.index(b).permute((1, 0)), zero, use_acc=False, is_async=True)
                ot = warpgroup_mma(aqk, u_s.index(b).permute((1, 0)), zero, use_acc=False, is_async=True)
            else:
                mbarrier.wait(su_ready.index(b), (it // 2) & 1)
                qs = warpgroup_mma(q_s.index(slot), sb_s.index(b).permute((1, 0)), zero, use_acc=False, is_async=True)
                ot = warpgroup_mma(aq_s.index(slot), u_s.index(b).permute((1, 0)), zero, use_acc=False, is_async=True)
            qs, ot = warpgroup_mma_wait(0, deps=[qs, ot])
            if OUT_TMA:  # (the previous chunk's TMA store has read o_s before any warp passes the barrier below)
                tma.store_wait(0)
            _cta_barrier()  # every warp's wgmma reads of S_c, U_c and the slot are complete
            mbarrier.arrive(su_empty.index(b), count=1)
            if not (EARLY_FREE and QSIDE and QREG):
                mbarrier.arrive(empty.index(slot), count=1)
            if QSCALE and QSIDE and QREG:  # (scale is in eg and Aqk)
                _rc_tile_out(qs * gl.expand_dims(eg, 1) + ot, o_s, od, o_base, bos, l0, L, ro, cs, mc, s_ot, orow, ocol,
                             OUT_TMA)
            elif OUT_TMA:
                _rc_tile_out((qs * gl.expand_dims(eg, 1) + ot) * scale, o_s, od, o_base, bos, l0, L, ro, cs, mc, s_ot,
                             orow, ocol, OUT_TMA)
            else:
                _rc_out_store(qs, ot, eg, scale, o_base, bos, l0, L, ro, cs, mc, s_ot)
            it += 1
    if OUT_TMA:
        tma.store_wait(0)


@gluon.jit
def _rc_chain(k_s, a_s, v_s, f_s, sb_s, u_s, ready, empty, su_ready, su_empty, tready, h0, ht, cu, T, HV, K, V,
              N_ITEMS, NV, TOTAL_T, s_h0n, s_h0h, s_h0k, s_h0v,
              G: gl.constexpr, IS_VARLEN: gl.constexpr, BK: gl.constexpr, BV: gl.constexpr,
              USE_H0: gl.constexpr, STORE_HT: gl.constexpr, STATE_V_FIRST: gl.constexpr, STAGES: gl.constexpr,
              TMA_READY: gl.constexpr = False, LATE_FAC: gl.constexpr = False, IV_OFF: gl.constexpr = 0,
              HT_REMAT: gl.constexpr = False, sched=None, SCHED: gl.constexpr = False):
    """Chain partition (default, 4 warps): the transposed recurrence with register left operands; loads each item's
    initial state and stores its final state. With ``TMA_READY`` (the fused kernel, whose ``ready`` is the aux
    partition's barrier) it also waits on the slot's TMA barrier ``tready`` itself: the TMA-written v tile is then
    ordered before its loads by an mbarrier this partition observed, not only through the aux partition's arrive (the
    phase is complete by then: one try_wait). With ``LATE_FAC`` (round 26) the v tile and the X factors are loaded after
    the P^T wait instead of while P^T runs: the same arithmetic with ~32 fewer registers live at the step's peak (the
    P^T operand S^T in bf16 is dead by then). At 168 registers (the loader given the rest; CPU-compiled) the chain then
    reloads nothing inside its step loop, against ~35 reloads a step without it: the register budget of a CTA with two
    chain warp groups. ``IV_OFF`` (gl_rc2, whose items are whole heads, NV = 1): this chain's V block. ``HT_REMAT``
    (round 27, launch.GL_RC_HT_REMAT): the final state's store indices and mask are recomputed after the chunk loop
    instead of kept from the item's start; without it the compiler hoists their column parts out of the item loop and
    spills them (r97: ~50 local reloads per item that miss L2; CPU-compiled gl_rc2 at the varlen launch: stack 296 ->
    112 bytes, local loads 128 -> 36, stores 119 -> 27 instructions)."""
    M64: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, 64, 16])
    MS: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, BK, 16])
    A64: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=M64, k_width=2)  # left operand, 64-wide result
    AS: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=MS, k_width=2)  # left operand, BK-wide result
    C64: gl.constexpr = gl.SliceLayout(0, M64)  # chunk rows (columns of the transposed tiles)
    dt: gl.constexpr = sb_s.dtype
    zero = gl.zeros([BV, 64], gl.float32, M64)
    RS: gl.constexpr = gl.SliceLayout(1, MS)  # rows of S^T (V columns)
    rv = gl.arange(0, BV, layout=RS)
    ck = gl.arange(0, BK, layout=gl.SliceLayout(0, MS))
    it = 0
    for slot_i in range(gl.program_id(0), N_ITEMS, gl.num_programs(0)):
        item = _sched_item(sched, slot_i, SCHED)
        i_v, n, hv, h, bos, b_idx, tg0, L = _rc_item(item, NV, cu, T, HV, G, IS_VARLEN)
        n64 = n.to(gl.int64)
        cv = (i_v + IV_OFF) * BV + rv
        ms = gl.expand_dims(cv < V, 1) & gl.expand_dims(ck < K, 0)
        if USE_H0:  # S^T[v, k] = h0[n, hv, k, v] (strides swap the layouts)
            p_h0 = h0 + n64 * s_h0n + hv * s_h0h + gl.expand_dims(cv * s_h0v, 1) + gl.expand_dims(ck * s_h0k, 0)
            S = gl.load(p_h0, mask=ms, other=0.0).to(gl.float32)
        else:
            S = gl.zeros([BV, BK], gl.float32, MS)
        # (Round 10, r24-r25, measured slower than this order and kept out: e^gamma_last S^T formed while P^T runs, beta
        # V^T formed before the P^T wait, the slot released at the hand-off barrier instead of after the update: the
        # varlen 16x1024 state pass took 0.245-0.255 ms against 0.220-0.226, T=8192 0.218 against 0.192-0.201.)
        for _c in range(gl.cdiv(L, 64)):
            slot = it % STAGES
            b = it % 2
            s16 = S.to(dt)
            sa = gl.convert_layout(s16, gl.DotOperandLayout(operand_index=0, parent=M64, k_width=2),
                                   assert_trivial=True)
            mbarrier.wait(ready.index(slot), (it // STAGES) & 1)
            if TMA_READY:
                mbarrier.wait(tready.index(slot), (it // STAGES) & 1)
            kb = k_s.index(slot)
            pt = warpgroup_mma(sa, kb.permute((1, 0)), zero, use_acc=False, is_async=True)
            # off the chain while P^T runs: S_c^T for the output partition, V^T of this chunk
            mbarrier.wait(su_empty.index(b), ((it // 2) & 1) ^ 1)  # the output partition is done with chunk it - 2
            sb_s.index(b).store(s16)
            # the column factors are read from the slot where they are used: a column vector of the transposed tiles
            # takes 16 registers per thread, and holding them from the step's start spilled
            if LATE_FAC:
                pt = warpgroup_mma_wait(0, deps=[pt])
                vt = v_s.index(slot).permute((1, 0)).load(M64)
                bt = f_s.index(slot * 5).load(C64)
                be = f_s.index(slot * 5 + 1).load(C64)
            else:
                vt = v_s.index(slot).permute((1, 0)).load(M64)
                bt = f_s.index(slot * 5).load(C64)
                be = f_s.index(slot * 5 + 1).load(C64)
                pt = warpgroup_mma_wait(0, deps=[pt])
            xt = gl.expand_dims(bt, 0) * vt.to(gl.float32) - gl.expand_dims(be, 0) * pt
            xa = gl.convert_layout(xt.to(dt), A64, assert_trivial=True)
            ut = warpgroup_mma(xa, a_s.index(slot).permute((1, 0)), zero, use_acc=False, is_async=True)
            dk = f_s.index(slot * 5 + 3).load(C64)
            egl = f_s.index(slot * 5 + 4).load(RS)  # e^gamma_last in every entry: 2 registers
            ut = warpgroup_mma_wait(0, deps=[ut])
            ua = gl.convert_layout((ut * gl.expand_dims(dk, 0)).to(dt), AS, assert_trivial=True)
            st = warpgroup_mma(ua, kb, S * gl.expand_dims(egl, 1), is_async=True)
            # off the chain while the update runs: U_c^T for the output partition
            u_s.index(b).store(ut.to(dt))
            fence_async_shared()
            _cta_barrier()
            mbarrier.arrive(su_ready.index(b), count=1)
            S = warpgroup_mma_wait(0, deps=[st])
            _cta_barrier()  # every chain warp's wgmma reads of the slot are complete
            mbarrier.arrive(empty.index(slot), count=1)
            it += 1
        if STORE_HT:  # (S^T: v along rows, k along columns; the expression order of the measured binary)
            if HT_REMAT:  # (the same indices, recomputed from an opaque 0 that depends on the loop: not hoisted)
                z = gl.inline_asm_elementwise("mov.u32 $0, 0;", "=r,r", [it], dtype=gl.int32, is_pure=True, pack=1)
                ck = ck + z
                cv = cv + z
                ms = gl.expand_dims(cv < V, 1) & gl.expand_dims(ck < K, 0)
            if STATE_V_FIRST:
                p_ht = ht + n64 * HV * K * V + hv * K * V + gl.expand_dims(cv * K, 1) + gl.expand_dims(ck, 0)
            else:
                p_ht = ht + n64 * HV * K * V + hv * K * V + gl.expand_dims(cv, 1) + gl.expand_dims(ck * V, 0)
            gl.store(p_ht, S, mask=ms)


@gluon.jit(do_not_specialize=["T", "TOTAL_T"])
def atrex_sm90_gdn_state_output_gl_rc(
    qd, kd, vd, ad, aqd, fac, h0, o, ht, cu, scale,
    T, HV, K, V,
    s_ob, s_ot, s_oh,
    s_h0n, s_h0h, s_h0k, s_h0v,
    TOTAL_T, ROWS, QW, VW, s_qr, s_kr, s_vr, N_NH, sched,
    IS_VARLEN: gl.constexpr, G: gl.constexpr, BK: gl.constexpr, BV: gl.constexpr,
    USE_H0: gl.constexpr, STORE_HT: gl.constexpr, STATE_V_FIRST: gl.constexpr, DEVICE_DESC: gl.constexpr,
    PERSISTENT: gl.constexpr, STAGES: gl.constexpr, OUT_REGS: gl.constexpr, EG_PLANE: gl.constexpr = 3,
    QSIDE: gl.constexpr = False, FAST_EXP: gl.constexpr = False, QREG: gl.constexpr = False,
    QSCALE: gl.constexpr = False, EARLY_FREE: gl.constexpr = False, OUT_TMA: gl.constexpr = False,
    QNORM_MMA: gl.constexpr = False, LATE_FAC: gl.constexpr = False, L2PF: gl.constexpr = False,
    HT_REMAT: gl.constexpr = False, PDL: gl.constexpr = False, H0PF: gl.constexpr = 0, H0_KC: gl.constexpr = True,
    SCHED: gl.constexpr = False,
):
    """gl_ws's arguments (in-kernel descriptors) on a 1-D grid: work item i is (V block i % NV, sequence x value head
    i // NV); CTA p runs items p, p + grid, ... (PERSISTENT: grid <= SMs; else one item per CTA), or with ``SCHED`` the
    items ``sched`` holds at those slots (launch.GL_RC_SCHEDULE; ``sched`` is unread without it). The chain keeps S^T
    and feeds its dots from registers (the block comment above). K == BK (64 or 128), BV == 64, num_warps 4.
    ``EG_PLANE``: the factor plane of the output's e^gamma (5 with the intra kernel's FOLD_NORM: q, k raw).
    ``QSIDE`` (round 24, launch.GL_RC_QSIDE): ``qd`` is the raw q (in-kernel L2 norm), ``aqd`` is not read, and the
    output partition forms Aqk itself from q, the normalised k and the gamma rows (``_rc_output``); the intra kernel
    then reads no q and writes no q copy and no Aqk. ``QSCALE``, ``EARLY_FREE``, ``OUT_TMA``: round 26 (``_rc_output``;
    OUT_TMA needs the output ``[B, T, HV, V]`` describable as ``[B*T, HV*V]`` with row stride ``s_ot``)."""
    SH_S: gl.constexpr = gl.NVMMASharedLayout.get_default_for([BV, BK], gl.bfloat16)
    SH_U: gl.constexpr = gl.NVMMASharedLayout.get_default_for([BV, 64], gl.bfloat16)
    dt: gl.constexpr = o.dtype.element_ty
    gl.static_assert(DEVICE_DESC and BV == 64)
    NV = gl.cdiv(V, BV)
    N_ITEMS = NV * N_NH
    if SCHED:  # (round 37: the CTA's items in shared memory, written before the CTA barrier below)
        first, sched = _sched_table(cu, sched, N_NH // HV, N_ITEMS, SCHED)
    else:
        first = gl.program_id(0)
    if H0PF != 0 and USE_H0:  # (round 29: h0 and cu are the call's inputs, complete before its first kernel waited;
        #   round 37: a schedule kernel runs second in the call's chain, so it too has completed before this launches)
        _h0_prefetch(h0, first, N_ITEMS, NV, cu, T, HV, V, s_h0n, s_h0h, s_h0k, s_h0v, G, IS_VARLEN, BK, BV, H0_KC, 4,
                     False)
    _pdl_enter(PDL)

    k_s, q_s, a_s, aq_s, v_s = _ring_tiles(dt, BK, BV, STAGES, QSIDE and OUT_TMA)  # (round 25's layout otherwise)
    sb_s = gl.allocate_shared_memory(dt, [2, BV, BK], SH_S)
    u_s = gl.allocate_shared_memory(dt, [2, BV, 64], SH_U)
    if OUT_TMA:  # the output tile a TMA store reads
        o_s = gl.allocate_shared_memory(dt, [64, BV], gl.NVMMASharedLayout.get_default_for([64, BV], dt))
    else:
        o_s = u_s
    ones_s = _ones_tile(dt, BK, QNORM_MMA, u_s)
    f_s = gl.allocate_shared_memory(gl.float32, [STAGES * 5, 64], gl.SwizzledSharedLayout(1, 1, 1, [0]))
    if QSIDE:  # the chunk-local gamma rows of the slots (for the output partition's decay tile)
        gm_s = gl.allocate_shared_memory(gl.float32, [STAGES, 64], gl.SwizzledSharedLayout(1, 1, 1, [0]))
    else:
        gm_s = f_s
    ready, empty, su_ready, su_empty = _ring_barriers(STAGES)

    gl.warp_specialize([
        (_rc_chain, (k_s, a_s, v_s, f_s, sb_s, u_s, ready, empty, su_ready, su_empty, ready, h0, ht, cu, T, HV, K, V,
                     N_ITEMS, NV, TOTAL_T, s_h0n, s_h0h, s_h0k, s_h0v, G, IS_VARLEN, BK, BV, USE_H0, STORE_HT,
                     STATE_V_FIRST, STAGES, False, LATE_FAC, 0, HT_REMAT, sched, SCHED)),
        (_rc_output, (q_s, aq_s, k_s, gm_s, sb_s, u_s, f_s, o_s, ready, empty, su_ready, su_empty, o, cu, T, HV, V,
                      N_ITEMS, NV, TOTAL_T, ROWS, s_ob, s_ot, s_oh, scale, G, IS_VARLEN, BK, BV, STAGES, QSIDE,
                      FAST_EXP, QREG, QSCALE, EARLY_FREE, OUT_TMA, ones_s, QNORM_MMA, sched, SCHED)),
        (_rc_loader, (kd, qd, vd, ad, aqd, fac, k_s, q_s, a_s, aq_s, v_s, f_s, gm_s, ready, empty, cu, T, HV, K, V,
                      N_ITEMS, NV, ROWS, QW, VW, s_qr, s_kr, s_vr, TOTAL_T, G, IS_VARLEN, BK, BV, STAGES, EG_PLANE,
                      QSIDE, None, False, L2PF, h0, s_h0n, s_h0h, s_h0k, s_h0v, H0PF, H0_KC, sched, SCHED)),
    ], [4, 1], [OUT_REGS, 24])


# ---------------------------------------------------------------------------------------------------------------
# Two-chain state pass (round 26, STATE_IMPL "gl_rc2"; run since round 27: bit for bit gl_rc's with QSCALE in r91, and
# "auto"'s varlen state pass since r95, 0.198 ms against gl_rc's 0.225 at varlen 16x1024 on the H200). gl_rc with
# a whole value head (V = 2 x 64) per work item: two chain partitions (gl_rc's chain, GL_RC_LATE_FACTORS' form, one per
# 64-column V block, 168 registers each: the CTA's 4 warp groups share 512 x 128) step their independent recurrences
# side by side on the same k, q, A tiles, loaded once; one output partition forms Q K^T, the decay tile and Aqk once
# per chunk (gl_rc's QSCALE form, the q norms as in GL_RC_QNORM_MMA where bf16) and both halves' outputs. gl_rc runs
# one chain per SM (r90: ~1.49 us a step alone, its tensor cores a third busy); here two share the SM. Shared memory:
# 2 load stages (k, q, A, two v tiles: 56 KB each) and double-buffered hand-offs for both chains (96 KB).
# ---------------------------------------------------------------------------------------------------------------


@gluon.jit
def _rc2_output(q_s, k_s, gm_s, sb0_s, u0_s, sb1_s, u1_s, f_s, o_s, ones_s, ready, empty, sr0, se0, sr1, se1, o, cu,
                T, HV, V,
                N_ITEMS, TOTAL_T, ROWS, s_ob, s_ot, s_oh, scale,
                G: gl.constexpr, IS_VARLEN: gl.constexpr, BK: gl.constexpr, BV: gl.constexpr, STAGES: gl.constexpr,
                FAST_EXP: gl.constexpr, OUT_TMA: gl.constexpr, QNORM_MMA: gl.constexpr, sched=None,
                SCHED: gl.constexpr = False):
    """gl_rc2's output partition (4 warps): per chunk the raw q in registers, Q K^T and Aqk once (``_rc_output``'s
    QSCALE form; the load slot released then), then for each chain h in {0, 1} (its hand-off buffers): O_h =
    e^gamma rs (Q S_c,h) + Aqk U_c,h, stored to the output's columns [64 h, 64 h + 64) of the head (whole chunks by TMA
    with ``OUT_TMA``, else masked)."""
    MMA: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, BV, 16])
    ROW: gl.constexpr = gl.SliceLayout(1, MMA)
    COL: gl.constexpr = gl.SliceLayout(0, MMA)
    A64: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=MMA, k_width=2)
    dt: gl.constexpr = q_s.dtype
    zero = gl.zeros([64, BV], gl.float32, MMA)
    ro = gl.arange(0, 64, layout=ROW)
    rr = gl.expand_dims(ro, 1)
    cc = gl.expand_dims(gl.arange(0, 64, layout=COL), 0)
    od = _rc_out_desc(o, ROWS, HV * V, s_ot, o_s, BV, OUT_TMA)
    if QNORM_MMA:
        _fill_ones(ones_s)
    it = 0
    for slot_i in range(gl.program_id(0), N_ITEMS, gl.num_programs(0)):
        item = _sched_item(sched, slot_i, SCHED)
        bos, L, cs, mc, o_base, orow, ocol = _rc_out_item(item, 1, cu, T, HV, V, o, s_ob, s_oh, COL, G, IS_VARLEN, BV)
        for c in range(gl.cdiv(L, 64)):
            l0 = c * 64
            slot = it % STAGES
            b = it % 2
            mbarrier.wait(ready.index(slot), (it // STAGES) & 1)
            eg = f_s.index(slot * 5 + 2).load(ROW)
            qa, aqk, rs = _q_side_scaled(q_s.index(slot), k_s.index(slot), gm_s.index(slot), ones_s, zero, scale, rr,
                                         cc, MMA, A64, A64, dt, FAST_EXP, QNORM_MMA)
            eg = eg * rs
            _cta_barrier()  # (every warp's Q K^T has read k; the gamma rows are loaded)
            mbarrier.arrive(empty.index(slot), count=1)
            for h in gl.static_range(2):
                if h == 0:
                    sb_s, u_s, su_ready, su_empty = sb0_s, u0_s, sr0, se0
                else:
                    sb_s, u_s, su_ready, su_empty = sb1_s, u1_s, sr1, se1
                mbarrier.wait(su_ready.index(b), (it // 2) & 1)
                qs = warpgroup_mma(qa, sb_s.index(b).permute((1, 0)), zero, use_acc=False, is_async=True)
                ot = warpgroup_mma(aqk, u_s.index(b).permute((1, 0)), zero, use_acc=False, is_async=True)
                qs, ot = warpgroup_mma_wait(0, deps=[qs, ot])
                if OUT_TMA:  # (the previous TMA store has read o_s before any warp passes the barrier below)
                    tma.store_wait(0)
                _cta_barrier()  # every warp's wgmma reads of S_c,h and U_c,h are complete
                mbarrier.arrive(su_empty.index(b), count=1)
                _rc_tile_out(qs * gl.expand_dims(eg, 1) + ot, o_s, od, o_base + h * BV, bos, l0, L, ro, cs, mc, s_ot,
                             orow, ocol + h * BV, OUT_TMA)
            it += 1
    if OUT_TMA:
        tma.store_wait(0)


@gluon.jit(do_not_specialize=["T", "TOTAL_T"])
def atrex_sm90_gdn_state_output_gl_rc2(
    qd, kd, vd, ad, aqd, fac, h0, o, ht, cu, scale,
    T, HV, K, V,
    s_ob, s_ot, s_oh,
    s_h0n, s_h0h, s_h0k, s_h0v,
    TOTAL_T, ROWS, QW, VW, s_qr, s_kr, s_vr, N_NH, sched,
    IS_VARLEN: gl.constexpr, G: gl.constexpr, BK: gl.constexpr, BV: gl.constexpr,
    USE_H0: gl.constexpr, STORE_HT: gl.constexpr, STATE_V_FIRST: gl.constexpr, DEVICE_DESC: gl.constexpr,
    PERSISTENT: gl.constexpr, STAGES: gl.constexpr, OUT_REGS: gl.constexpr, CHAIN_REGS: gl.constexpr = 168,
    EG_PLANE: gl.constexpr = 3, FAST_EXP: gl.constexpr = False, OUT_TMA: gl.constexpr = False,
    QNORM_MMA: gl.constexpr = False, L2PF: gl.constexpr = False, HT_REMAT: gl.constexpr = False,
    PDL: gl.constexpr = False, H0PF: gl.constexpr = 0, H0_KC: gl.constexpr = True,
    SCHED: gl.constexpr = False,
):
    """gl_rc's arguments (QSIDE: ``qd`` is the raw q, ``aqd`` not read) for V == 2 BV == 128: work item i is sequence x
    value head i, both V blocks, CTA p runs items p, p + grid, ... (the block comment above; with ``SCHED`` gl_rc's
    note). Partitions: chain 0
    (default, 4 warps), chain 1 (4 warps, CHAIN_REGS), output (4 warps, OUT_REGS), loader (1 warp)."""
    SH_S: gl.constexpr = gl.NVMMASharedLayout.get_default_for([BV, BK], gl.bfloat16)
    SH_U: gl.constexpr = gl.NVMMASharedLayout.get_default_for([BV, 64], gl.bfloat16)
    SH_V: gl.constexpr = gl.NVMMASharedLayout.get_default_for([64, BV], gl.bfloat16)
    dt: gl.constexpr = o.dtype.element_ty
    gl.static_assert(DEVICE_DESC and BV == 64)
    N_ITEMS = N_NH
    if SCHED:  # (gl_rc's notes)
        first, sched = _sched_table(cu, sched, N_NH // HV, N_ITEMS, SCHED)
    else:
        first = gl.program_id(0)
    if H0PF != 0 and USE_H0:
        _h0_prefetch(h0, first, N_ITEMS, 1, cu, T, HV, V, s_h0n, s_h0h, s_h0k, s_h0v, G, IS_VARLEN, BK, 2 * BV, H0_KC,
                     4, False)
    _pdl_enter(PDL)

    k_s, q_s, a_s, aq_s, v_s = _ring_tiles(dt, BK, BV, STAGES, True)
    v1_s = gl.allocate_shared_memory(dt, [STAGES, 64, BV], SH_V)
    sb0_s = gl.allocate_shared_memory(dt, [2, BV, BK], SH_S)  # (chain 0's S_c^T, U_c^T hand-offs; chain 1's)
    u0_s = gl.allocate_shared_memory(dt, [2, BV, 64], SH_U)
    sb1_s = gl.allocate_shared_memory(dt, [2, BV, BK], SH_S)
    u1_s = gl.allocate_shared_memory(dt, [2, BV, 64], SH_U)
    if OUT_TMA:
        o_s = gl.allocate_shared_memory(dt, [64, BV], gl.NVMMASharedLayout.get_default_for([64, BV], dt))
    else:
        o_s = u0_s
    ones_s = _ones_tile(dt, BK, QNORM_MMA, u0_s)
    f_s = gl.allocate_shared_memory(gl.float32, [STAGES * 5, 64], gl.SwizzledSharedLayout(1, 1, 1, [0]))
    gm_s = gl.allocate_shared_memory(gl.float32, [STAGES, 64], gl.SwizzledSharedLayout(1, 1, 1, [0]))
    ready, empty, sr0, se0 = _ring_barriers(STAGES, 3)
    sr1 = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
    se1 = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(2):
        mbarrier.init(sr1.index(i), count=1)
        mbarrier.init(se1.index(i), count=1)
    fence_async_shared()
    _cta_barrier()

    gl.warp_specialize([
        (_rc_chain, (k_s, a_s, v_s, f_s, sb0_s, u0_s, ready, empty, sr0, se0, ready, h0, ht, cu, T, HV, K, V, N_ITEMS,
                     1, TOTAL_T, s_h0n, s_h0h, s_h0k, s_h0v, G, IS_VARLEN, BK, BV, USE_H0, STORE_HT, STATE_V_FIRST,
                     STAGES, False, True, 0, HT_REMAT, sched, SCHED)),
        (_rc_chain, (k_s, a_s, v1_s, f_s, sb1_s, u1_s, ready, empty, sr1, se1, ready, h0, ht, cu, T, HV, K, V, N_ITEMS,
                     1, TOTAL_T, s_h0n, s_h0h, s_h0k, s_h0v, G, IS_VARLEN, BK, BV, USE_H0, STORE_HT, STATE_V_FIRST,
                     STAGES, False, True, 1, HT_REMAT, sched, SCHED)),
        (_rc2_output, (q_s, k_s, gm_s, sb0_s, u0_s, sb1_s, u1_s, f_s, o_s, ones_s, ready, empty, sr0, se0, sr1, se1, o,
                       cu, T, HV, V, N_ITEMS, TOTAL_T, ROWS, s_ob, s_ot, s_oh, scale, G, IS_VARLEN, BK, BV, STAGES, FAST_EXP,
                       OUT_TMA, QNORM_MMA, sched, SCHED)),
        (_rc_loader, (kd, qd, vd, ad, aqd, fac, k_s, q_s, a_s, aq_s, v_s, f_s, gm_s, ready, empty, cu, T, HV, K, V,
                      N_ITEMS, 1, ROWS, QW, VW, s_qr, s_kr, s_vr, TOTAL_T, G, IS_VARLEN, BK, BV, STAGES, EG_PLANE,
                      True, v1_s, True, L2PF, h0, s_h0n, s_h0h, s_h0k, s_h0v, H0PF, H0_KC, sched, SCHED)),
    ], [4, 4, 1], [CHAIN_REGS, OUT_REGS, 24])


# ---------------------------------------------------------------------------------------------------------------
# Fused chunk step (round 20, ``launch.FUSED_RC``; built on the CPU, not yet run on a GPU). gl_rc's chain partition
# plus two others, so that the call is one launch reading q, k, v, g, beta once and writing only o and the final state
# (rounds 17-18: the two-kernel data flow's HBM traffic alone is ~0.34 ms at varlen 16x1024, about the 3x goal's whole
# budget). Per chunk:
#   aux (4 warps):    k L2-normalised in place; K K^T by wgmma; gamma = cumsum g; the factor rows the chain and output
#                     read (gl_rc's layout) and gamma; L and its inverse A (v3's arithmetic: fp16 accumulating mask-out
#                     merges where every g of the chunk is <= 0, else bf16 subtracting merges + the Newton step) into
#                     the slot's A tile; then ``iready``. Up to STAGES chunks ahead of the chain.
#   chain (4 warps):  gl_rc's, unchanged, waiting on ``iready`` instead of ``ready``.
#   output (4 warps): after ``iready``, while the chain works on the chunk: q L2-normalised in place, Q K^T, the decay
#                     tile and Aqk, kept in registers as the left operand of Aqk U; then gl_rc's output step. Then, once
#                     the chain is done with the chunk's slot (``empty``), the loads of chunk it + STAGES into it: its
#                     g and beta rows (loaded a chunk ahead, 0 past the sequence end) into the slot's gate rows, the raw
#                     k, q, v tiles by TMA (``ready``). The load cursor walks the CTA's (item, chunk) sequence, skipping
#                     empty sequences.
# The aux partition is the one whose per-chunk time can exceed a chain step (v3's whole program takes ~7 us alone,
# round 18): the q side of the intra work (a third of it) runs in the output partition, which otherwise waits for
# the chain.
# Three warp groups, 3 x 168 registers per thread: 224 for the chain (gl_rc's chain spills at 168), FUSED_AUX_REGS /
# FUSED_OUT_REGS for the other two. A separate one-warp loader (gl_rc's form, tried first) costs a fourth, padded
# warp group, and then the chain spilled ~90 instructions' worth at 168 registers (Triton 3.6 SASS). Round 18's fused
# Triton kernel put the intra work on each program's sequential chain; here it runs in its own warps.
# ---------------------------------------------------------------------------------------------------------------


@gluon.jit
def _add_f32(a, b):
    return a + b


# ``e^x`` of an fp32 tensor (FAST: ex2.approx.ftz): the v3 kernel's decay-tile exponential, so that the fused kernel's
# decay tiles are the v3 kernel's bits
_fu_exp = gluon.jit(_k._exp_tile.fn)


@gluon.jit
def _fu_l2norm(t_s, BLK: gl.constexpr):
    """The rows of the [64, BK] tile ``t_s`` L2-normalised in place (fp32, eps 1e-6 inside the sqrt, rounded back to
    the tile's dtype: the v3 kernel's ``_load_qk_tile``). Each thread writes back exactly the elements it read."""
    x = t_s.load(BLK).to(gl.float32)
    inv = gl.rsqrt(gl.sum(x * x, 1) + 1e-6)
    t_s.store((x * gl.expand_dims(inv, 1)).to(t_s.dtype))


@gluon.jit
def _q_regs(qb, A: gl.constexpr):
    """The [64, BK] q tile of slot view ``qb`` L2-normalised into registers in wgmma left-operand layout ``A``: the
    arithmetic and rounding of ``_fu_l2norm`` (fp32, eps 1e-6 inside the sqrt, rounded to the tile's dtype), with no
    store back into the slot (round 25)."""
    x = qb.load(A).to(gl.float32)
    inv = gl.rsqrt(gl.sum(x * x, 1) + 1e-6)
    return (x * gl.expand_dims(inv, 1)).to(qb.dtype)


@gluon.jit
def _q_raw_regs(qb, A: gl.constexpr):
    """(the raw [64, BK] q tile of slot view ``qb`` in wgmma left-operand layout ``A``, its rows' squared L2 norms in
    fp32): GL_RC_QSCALE's form of ``_q_regs`` (round 26), the norm applied to the dots' results instead."""
    x = qb.load(A)
    xf = x.to(gl.float32)
    return x, gl.sum(xf * xf, 1)


@gluon.jit
def _ones_tile(dt: gl.constexpr, BK: gl.constexpr, ON: gl.constexpr, other):
    """The ones tile of GL_RC_QNORM_MMA's norms, [8, BK] with K contiguous (the dot reads it permuted, K-major: the
    operand form of Q K^T's k tile; r91 on the H200: the N-major [BK, 8] tile of round 26 gave wrong sums and an
    illegal address at K = 128, right ones at K = 64), allocated where ``ON``; else ``other``, never read."""
    if ON:
        return gl.allocate_shared_memory(dt, [8, BK], gl.NVMMASharedLayout.get_default_for([8, BK], dt))
    else:
        return other


@gluon.jit
def _fill_ones(ones_s):
    """Fill the ones tile (4 warps), visible to the tensor cores and to every warp of the partition."""
    ones_s.store(gl.full(ones_s.shape, 1.0, ones_s.dtype, gl.BlockedLayout([1, 8], [8, 4], [4, 1], [1, 0])))
    fence_async_shared()
    _cta_barrier()


@gluon.jit
def _q_raw_regs_mma(qb, ones_s, A: gl.constexpr):
    """``_q_raw_regs`` with the squared norms by the tensor cores (GL_RC_QNORM_MMA, round 26; bf16 only): the squares
    rounded to bf16 (``mul.rn.bf16x2``, 2 per instruction), summed in fp32 by a 64x8xBK wgmma against the ones tile
    ``ones_s`` (every column of the result is the row sum), instead of 64 unpacks and 64 fused multiply-adds a thread.
    The squares' roundings (at most 2^-9 each, all terms positive) move a row's norm by at most 2^-10 relative.
    Returns (q, the asynchronous [64, 8] sums): the caller issues Q K^T behind it and waits for this one only."""
    M8: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, 8, 16])
    x = qb.load(A)
    sq = gl.inline_asm_elementwise("mul.rn.bf16x2 $0, $1, $1;", "=r,r", [x], dtype=x.dtype, is_pure=True, pack=2)
    sa = gl.convert_layout(sq, gl.DotOperandLayout(operand_index=0, parent=M8, k_width=2), assert_trivial=True)
    return x, warpgroup_mma(sa, ones_s.permute((1, 0)), gl.zeros([64, 8], gl.float32, M8), use_acc=False,
                            is_async=True)


@gluon.jit
def _fu_mufu(x, LOG: gl.constexpr, FAST: gl.constexpr):
    """``2^x`` (``LOG`` False) or ``log2 x`` (positive x) of fp32 values; with ``FAST`` one MUFU instruction each
    (``ex2.approx.ftz.f32``: ``_fu_exp`` without its multiply by log2 e; ``lg2.approx.ftz.f32`` instead of libdevice's
    ~30 instructions, r90's SASS): GL_RC_QSCALE's decay tile and row factors."""
    if FAST:
        if LOG:
            asm: gl.constexpr = "lg2.approx.ftz.f32 $0, $1;"
        else:
            asm: gl.constexpr = "ex2.approx.ftz.f32 $0, $1;"
        return gl.inline_asm_elementwise(asm, "=f,f", [x], dtype=gl.float32, is_pure=True, pack=1)
    elif LOG:
        return gl.log2(x)
    else:
        return gl.exp2(x)


@gluon.jit
def _q_side_scaled(qb, kb, gmb, ones_s, z, scale, rr, cc, M: gl.constexpr, A: gl.constexpr, AQ: gl.constexpr,
                   dt: gl.constexpr, FAST_EXP: gl.constexpr, QNORM_MMA: gl.constexpr):
    """GL_RC_QSCALE's q side of one chunk (slot views ``qb``, ``kb``, ``gmb``): (the raw q in left-operand layout ``A``,
    Aqk in left-operand layout ``AQ``, the row factors scale / ||q_r|| in the row layout of ``M``), Q K^T accumulated
    in ``M`` from ``z``; the norms by ``_q_raw_regs_mma`` (its dot issued ahead of Q K^T, only it waited for) with
    ``QNORM_MMA``, else by ``_q_raw_regs``."""
    if QNORM_MMA:
        qa, nn = _q_raw_regs_mma(qb, ones_s, A)
        qk = warpgroup_mma(qa, kb.permute((1, 0)), z, use_acc=False, is_async=True)
        nn = warpgroup_mma_wait(1, deps=[nn])
        ss = gl.max(nn, 1)
    else:
        qa, ss = _q_raw_regs(qb, A)
        qk = warpgroup_mma(qa, kb.permute((1, 0)), z, use_acc=False, is_async=True)
    rs = gl.convert_layout(gl.rsqrt(ss + 1e-6), gl.SliceLayout(1, M)) * scale
    return qa, _aqk_regs_scaled(qk, gmb, _fu_mufu(rs, True, FAST_EXP), rr, cc, M, AQ, dt, FAST_EXP), rs


@gluon.jit
def _aqk_regs_scaled(qk, gm, lrs, rr, cc, M: gl.constexpr, A: gl.constexpr, dt: gl.constexpr, FAST_EXP: gl.constexpr):
    """Aqk = tril(diag(rs) Q K^T e^(gamma_r - gamma_c)) rounded to ``dt`` in left-operand layout ``A``, where ``qk``
    (accumulator layout ``M``, asynchronous) is the raw q's Q K^T and ``lrs`` = log2 of the row factors rs (scale /
    ||q_r||, row layout of ``M``): one exponent per element, 2^(gamma_r log2 e + lrs_r - gamma_c log2 e). Only the
    causal mask: a row past the sequence end is never stored, and the valid rows' columns are all inside it. The mask
    sets a masked entry's exponent to -inf (2^-inf = 0, and Q K^T is finite): a select of the product after the dot
    let Triton 3.6 sink the bf16 rounding above it, selecting 16-bit halves (~30 more PRMT a chunk, CPU-compiled SASS)."""
    LOG2E: gl.constexpr = 1.4426950408889634
    gr = gm.load(gl.SliceLayout(1, M)) * LOG2E + lrs
    gc = gm.load(gl.SliceLayout(0, M)) * LOG2E
    x = gl.where(rr >= cc, gl.expand_dims(gr, 1) - gl.expand_dims(gc, 0), float("-inf"))
    e = _fu_mufu(x, False, FAST_EXP)
    qk = warpgroup_mma_wait(0, deps=[qk])
    return gl.convert_layout((qk * e).to(dt), A, assert_trivial=True)


@gluon.jit
def _aqk_regs(qk, gm, rr, cc, l0, L, M: gl.constexpr, A: gl.constexpr, dt: gl.constexpr, FAST_EXP: gl.constexpr):
    """Aqk = tril(Q K^T e^(gamma_r - gamma_c)) of a chunk (rows l0 + r past ``L`` zero), rounded to ``dt``, in left-
    operand layout ``A``, from the asynchronous Q K^T ``qk`` (accumulator layout ``M``) and the chunk-local gamma row
    ``gm`` (shared): the intra kernel's arithmetic. The decay tile is formed while the dot runs."""
    valid = (rr >= cc) & ((l0 + rr) < L)
    gr = gm.load(gl.SliceLayout(1, M))
    gc = gm.load(gl.SliceLayout(0, M))
    e = _fu_exp(gl.where(valid, gl.expand_dims(gr, 1) - gl.expand_dims(gc, 0), 0.0), FAST_EXP)
    qk = warpgroup_mma_wait(0, deps=[qk])
    return gl.convert_layout(gl.where(valid, qk * e, 0.0).to(dt), A, assert_trivial=True)


@gluon.jit
def _fu_merge(X, La, x_s, m_s, rr, cc, zero, B: gl.constexpr, A16: gl.constexpr, ACC: gl.constexpr):
    """One merge level of the inverse on the whole tile, both right operands through shared memory (``x_s``, ``m_s``:
    the merge dtype), in the v3 kernel's forms: with ``ACC`` X + X_h (-mask_B(L X_h)) accumulated onto X in the tensor
    cores (v3's accumulating mask-out merge), else X - X_h mask_B(L X_h) (v3's subtracting merge; masking the product
    instead of L gives the same bits, ``kernels._merge_level_mask_out``)."""
    lvl = ((rr // (2 * B)) == (cc // (2 * B))) & ((rr // B) != (cc // B))
    Xh = X.to(x_s.dtype)
    x_s.store(Xh)
    fence_async_shared()
    _cta_barrier()
    mx = warpgroup_mma(La, x_s, zero, use_acc=False, is_async=True)
    mx = warpgroup_mma_wait(0, deps=[mx])
    if ACC:
        m_s.store(gl.where(lvl, -mx, 0.0).to(m_s.dtype))
    else:
        m_s.store(gl.where(lvl, mx, 0.0).to(m_s.dtype))
    fence_async_shared()
    _cta_barrier()
    xa = gl.convert_layout(Xh, A16, assert_trivial=True)
    if ACC:
        X = warpgroup_mma(xa, m_s, X, is_async=True)
        X = warpgroup_mma_wait(0, deps=[X])
    else:
        d = warpgroup_mma(xa, m_s, zero, use_acc=False, is_async=True)
        X = X - warpgroup_mma_wait(0, deps=[d])
    return X


@gluon.jit
def _fu_merge16(X, Da, rr, cc, B: gl.constexpr, DA: gl.constexpr, DB: gl.constexpr, MV2: gl.constexpr):
    """One merge level on the four 16x16 diagonal blocks (``[4, 16, 16]``, one per warp) with mma.sync: the v3
    kernel's ``_merge16`` (X - X_h mask_B(D X_h)), every operand in registers."""
    lvl = ((rr // (2 * B)) == (cc // (2 * B))) & ((rr // B) != (cc // B))
    Xh = X.to(Da.dtype)
    z = gl.zeros([4, 16, 16], gl.float32, MV2)
    mx = mma_v2(Da, gl.convert_layout(Xh, DB), z)
    mx = gl.where(lvl, mx, 0.0).to(Da.dtype)
    return X - mma_v2(gl.convert_layout(Xh, DA), gl.convert_layout(mx, DB), z)


@gluon.jit
def _fu_diag16(Lm, dt: gl.constexpr):
    """The inverses of the four 16x16 diagonal blocks of ``I + Lm`` (merges b = 2, 4, 8 in ``dt``, L rounded to it
    once), as a [64, 64] fp32 tile in the aux partition's wgmma accumulator layout, block diagonal with exact zeros
    elsewhere: the v3 kernel's ``_diag16_inverse`` (round 19, INTRA_V3_DIAG16), here for the aux partition
    (``FUSED_DIAG16``). In the wgmma accumulator layout warp w holds rows 16w .. 16w + 15, so diagonal block w is its
    own data: the merges run per warp as batched mma.sync with no shared-memory staging or barrier, where the
    whole-tile merges stage each dot's right operand."""
    M64: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, 64, 16])
    MV2: gl.constexpr = gl.NVMMADistributedLayout(version=[2, 0], warps_per_cta=[4, 1, 1], instr_shape=[1, 16, 8])
    DA: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=MV2, k_width=2)
    DB: gl.constexpr = gl.DotOperandLayout(operand_index=1, parent=MV2, k_width=2)
    L4 = gl.reshape(Lm, [4, 16, 4, 16])
    rb = gl.arange(0, 4, layout=gl.SliceLayout(1, gl.SliceLayout(2, gl.SliceLayout(3, L4.type.layout))))
    cb = gl.arange(0, 4, layout=gl.SliceLayout(0, gl.SliceLayout(1, gl.SliceLayout(3, L4.type.layout))))
    sel = gl.expand_dims(gl.expand_dims(gl.expand_dims(rb, 1), 2), 3) == gl.expand_dims(
        gl.expand_dims(gl.expand_dims(cb, 0), 1), 3)
    D = gl.convert_layout(gl.sum(gl.where(sel, L4, 0.0), axis=2), MV2).to(dt).to(gl.float32)
    r = gl.expand_dims(gl.expand_dims(gl.arange(0, 16, layout=gl.SliceLayout(0, gl.SliceLayout(2, MV2))), 0), 2)
    c = gl.expand_dims(gl.expand_dims(gl.arange(0, 16, layout=gl.SliceLayout(0, gl.SliceLayout(1, MV2))), 0), 1)
    Da = gl.convert_layout(D.to(dt), DA)
    X = gl.where(r == c, 1.0, 0.0) - gl.where((r // 2) == (c // 2), D, 0.0)
    X = _fu_merge16(X, Da, r, c, 2, DA, DB, MV2)
    X = _fu_merge16(X, Da, r, c, 4, DA, DB, MV2)
    X = _fu_merge16(X, Da, r, c, 8, DA, DB, MV2)
    X4 = gl.where(sel, gl.expand_dims(gl.convert_layout(X, gl.SliceLayout(2, L4.type.layout)), 2), 0.0)
    return gl.convert_layout(gl.reshape(X4, [64, 64]), M64)


@gluon.jit
def _fu_inverse(Lm, x_s, m_s, rr, cc, zero, A16: gl.constexpr, NEWTON: gl.constexpr, DIAG16: gl.constexpr):
    """``(I + Lm)^-1`` of a strictly lower 64x64 fp32 tile in the wgmma accumulator layout: X_2 from the 2x2 diagonal
    blocks, then merges b = 2 .. 32 in ``x_s``'s dtype. Without ``NEWTON`` (fp16) the v3 kernel's accumulating
    mask-out merges (its two-head programs' form); with it (bf16, the positive-g fallback) v3's subtracting merges and
    its refinement step (its one-head programs' form), so that each path is arithmetic the v3 kernel's tests cover."""
    dt: gl.constexpr = x_s.dtype
    Lh = Lm.to(dt)
    La = gl.convert_layout(Lh, A16, assert_trivial=True)
    if DIAG16:  # merges b = 2, 4, 8 per warp on the 16x16 diagonal blocks (mma.sync, registers only)
        X = _fu_diag16(Lm, dt)
    else:
        X = gl.where(rr == cc, 1.0, 0.0) - gl.where((rr // 2) == (cc // 2), Lm, 0.0)
        X = _fu_merge(X, La, x_s, m_s, rr, cc, zero, 2, A16, not NEWTON)
        X = _fu_merge(X, La, x_s, m_s, rr, cc, zero, 4, A16, not NEWTON)
        X = _fu_merge(X, La, x_s, m_s, rr, cc, zero, 8, A16, not NEWTON)
    X = _fu_merge(X, La, x_s, m_s, rr, cc, zero, 16, A16, not NEWTON)
    X = _fu_merge(X, La, x_s, m_s, rr, cc, zero, 32, A16, not NEWTON)
    if NEWTON:  # R = I - (I + L) Xb with L = hi + lo (bf16 each), then A = Xb + Xb R
        Xb = X.to(dt)
        x_s.store(Xb)
        fence_async_shared()
        _cta_barrier()
        lo = gl.convert_layout((Lm - Lh.to(gl.float32)).to(dt), A16, assert_trivial=True)
        p = warpgroup_mma(La, x_s, zero, use_acc=False, is_async=True)
        p = warpgroup_mma(lo, x_s, p, is_async=True)
        p = warpgroup_mma_wait(0, deps=[p])
        m_s.store(gl.where(rr > cc, -(Xb.to(gl.float32) + p), 0.0).to(dt))
        fence_async_shared()
        _cta_barrier()
        xa = gl.convert_layout(Xb, A16, assert_trivial=True)
        X = warpgroup_mma(xa, m_s, Xb.to(gl.float32), is_async=True)
        X = warpgroup_mma_wait(0, deps=[X])
    return X


@gluon.jit
def _fu_aux(k_s, a_s, gb_s, f_s, gm_s, xh_s, mh_s, xb_s, mb_s, ready, iready, cu, T, HV, N_ITEMS, NV,
            G: gl.constexpr, IS_VARLEN: gl.constexpr, BK: gl.constexpr, STAGES: gl.constexpr,
            FAST_EXP: gl.constexpr, DIAG16: gl.constexpr):
    """Aux partition (4 warps): each chunk's k normalised in place, its gate rows (factor rows, gamma) and the inverse
    A into the chunk's ring slot (the block comment above)."""
    M64: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, 64, 16])
    ROW: gl.constexpr = gl.SliceLayout(1, M64)
    COL: gl.constexpr = gl.SliceLayout(0, M64)
    A16: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=M64, k_width=2)
    TK: gl.constexpr = BK // 8
    BLK: gl.constexpr = gl.BlockedLayout([1, 8], [32 // TK, TK], [4, 1], [1, 0])
    SCAN: gl.constexpr = gl.BlockedLayout([1], [32], [4], [0])
    dt: gl.constexpr = a_s.dtype
    zero = gl.zeros([64, 64], gl.float32, M64)
    r = gl.arange(0, 64, layout=ROW)
    rr = gl.expand_dims(r, 1)
    cc = gl.expand_dims(gl.arange(0, 64, layout=COL), 0)
    it = 0
    for item in range(gl.program_id(0), N_ITEMS, gl.num_programs(0)):
        i_v, n, hv, h, bos, b_idx, tg0, L = _rc_item(item, NV, cu, T, HV, G, IS_VARLEN)
        for c in range(gl.cdiv(L, 64)):
            slot = it % STAGES
            mbarrier.wait(ready.index(slot), (it // STAGES) & 1)
            kb = k_s.index(slot)
            _fu_l2norm(kb, BLK)
            fence_async_shared()
            _cta_barrier()
            kk = warpgroup_mma(kb, kb.permute((1, 0)), zero, use_acc=False, is_async=True)
            # the gate rows while the dots run (g, beta: 0 past the sequence end, so gamma stays at gamma_last there)
            gr = gb_s.index(2 * slot).load(SCAN)
            bt = gb_s.index(2 * slot + 1).load(ROW)
            gam = gl.convert_layout(gl.associative_scan(gr, 0, _add_f32), ROW)  # (no scan on a wgmma slice layout)
            nv = gl.minimum(L - c * 64, 64)
            glast = gl.sum(gl.where(r == nv - 1, gam, 0.0), 0)
            eg = gl.exp(gam)
            f_s.index(slot * 5).store(bt)
            f_s.index(slot * 5 + 1).store(bt * eg)
            f_s.index(slot * 5 + 2).store(eg)
            f_s.index(slot * 5 + 3).store(gl.where(r < nv, gl.exp(glast - gam), 0.0))
            f_s.index(slot * 5 + 4).store(gl.exp(glast + gam * 0.0))
            gm_s.index(slot).store(gam)  # (for the output partition's Aqk)
            gc = gl.expand_dims(gl.convert_layout(gam, gl.SliceLayout(0, M64)), 0)
            e = _fu_exp(gl.where(rr >= cc, gl.expand_dims(gam, 1) - gc, 0.0), FAST_EXP)
            g_pos = gl.max(gr, 0) > 0.0
            kk = warpgroup_mma_wait(0, deps=[kk])
            Lm = gl.where(rr > cc, gl.expand_dims(bt, 1) * e * kk, 0.0)
            if g_pos:  # a decay factor above 1: fp16's range no longer bounds the merges (v3's fallback)
                X = _fu_inverse(Lm, xb_s, mb_s, rr, cc, zero, A16, True, DIAG16)
            else:
                X = _fu_inverse(Lm, xh_s, mh_s, rr, cc, zero, A16, False, DIAG16)
            a_s.index(slot).store(X.to(dt))
            fence_async_shared()
            _cta_barrier()  # every aux warp's stores (k, A, the gate rows) precede the arrive
            mbarrier.arrive(iready.index(slot), count=1)
            it += 1


@gluon.jit
def _fu_cursor(item, c, N_ITEMS, NV, cu, T, HV, g, beta, s_gb, s_gt, s_gh, s_bb, s_bt, s_bh, fr,
               G: gl.constexpr, IS_VARLEN: gl.constexpr, BETA_SIGMOID: gl.constexpr, NEG_EIGVAL: gl.constexpr):
    """The load cursor at chunk ``c`` of work item ``item`` or, when that item has no chunk ``c``, at the first chunk of
    the CTA's next item with one (``item >= N_ITEMS``: the CTA's loads are done): (item, c, L, tg0, h, hv, i_v) and
    the chunk's g and beta rows (fp32, 0 past the sequence end), loaded here so that their latency falls before the
    slot they go into is free."""
    c = item * 0 + c  # (a tensor: the loop below carries it)
    i_v, n, hv, h, bos, b_idx, tg0, L = _rc_item(gl.minimum(item, N_ITEMS - 1), NV, cu, T, HV, G, IS_VARLEN)
    while (item < N_ITEMS) & (c * 64 >= L):
        item += gl.num_programs(0)
        c = c * 0
        i_v, n, hv, h, bos, b_idx, tg0, L = _rc_item(gl.minimum(item, N_ITEMS - 1), NV, cu, T, HV, G, IS_VARLEN)
    m = ((c * 64 + fr) < L) & (item < N_ITEMS)
    t = (bos + c * 64 + fr).to(gl.int64)
    gv = gl.load(g + b_idx.to(gl.int64) * s_gb + hv * s_gh + t * s_gt, mask=m, other=0.0).to(gl.float32)
    bv = gl.load(beta + b_idx.to(gl.int64) * s_bb + hv * s_bh + t * s_bt, mask=m, other=0.0).to(gl.float32)
    if BETA_SIGMOID:
        bv = 1.0 / (1.0 + gl.exp(-bv))
        if NEG_EIGVAL:
            bv = bv * 2.0
        bv = gl.where(m, bv, 0.0)
    return item, c, L, tg0, h, hv, i_v, gv, bv


@gluon.jit
def _fu_issue(kdesc, qdesc, vdesc, k_s, q_s, v_s, gb_s, ready, lit, tg0, c, h, hv, i_v, gv, bv, K, V,
              BK: gl.constexpr, BV: gl.constexpr, STAGES: gl.constexpr):
    """Chunk ``lit`` of the CTA's sequence into its slot: the gate rows by the partition's threads, then (after a
    partition barrier, so that every thread's stores precede the one-thread arrive) the k, q, v tiles by TMA."""
    slot = lit % STAGES
    gb_s.index(2 * slot).store(gv)
    gb_s.index(2 * slot + 1).store(bv)
    _cta_barrier()
    bar = ready.index(slot)
    mbarrier.expect(bar, (2 * 64 * BK + 64 * BV) * 2)
    _tma_load(kdesc, [tg0 + c * 64, h * K], bar, k_s.index(slot))
    _tma_load(qdesc, [tg0 + c * 64, h * K], bar, q_s.index(slot))
    _tma_load(vdesc, [tg0 + c * 64, hv * V + i_v * BV], bar, v_s.index(slot))


@gluon.jit
def _fu_output(q_s, sb_s, u_s, f_s, gm_s, k_s, v_s, gb_s, ready, iready, empty, su_ready, su_empty, o, qd, kd, vd, g,
               beta, cu, T, HV, K, V, N_ITEMS, NV, ROWS, QW, VW, s_qr, s_kr, s_vr, s_gb, s_gt, s_gh, s_bb, s_bt, s_bh,
               s_ob, s_ot, s_oh, scale,
               G: gl.constexpr, IS_VARLEN: gl.constexpr, BK: gl.constexpr, BV: gl.constexpr, STAGES: gl.constexpr,
               BETA_SIGMOID: gl.constexpr, NEG_EIGVAL: gl.constexpr, FAST_EXP: gl.constexpr):
    """Output and load partition (4 warps). Per chunk: q normalised in place, Q K^T and Aqk (in registers: the left
    operand of Aqk U), formed while the chain works on the chunk, then gl_rc's output step; and the loads. A slot is
    refilled with chunk it + STAGES as soon as the chain and this partition are done with chunk it (this partition,
    which reads S_c and U_c after the chain has made them, is the later of the two): so the loads need no warps of
    their own, which leaves the CTA three warp groups and their registers for the chain and the aux partition."""
    MMA: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, BV, 16])
    ROW: gl.constexpr = gl.SliceLayout(1, MMA)
    COL: gl.constexpr = gl.SliceLayout(0, MMA)
    A64: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=MMA, k_width=2)
    TK: gl.constexpr = BK // 8
    BLK: gl.constexpr = gl.BlockedLayout([1, 8], [32 // TK, TK], [4, 1], [1, 0])
    dt: gl.constexpr = q_s.dtype
    FL: gl.constexpr = gl.BlockedLayout([1], [32], [4], [0])
    SH_K: gl.constexpr = gl.NVMMASharedLayout.get_default_for([64, BK], gl.bfloat16)
    SH_V: gl.constexpr = gl.NVMMASharedLayout.get_default_for([64, BV], gl.bfloat16)
    kdesc = tma.make_tensor_descriptor(kd, [ROWS, QW], [s_kr, 1], [64, BK], SH_K)
    qdesc = tma.make_tensor_descriptor(qd, [ROWS, QW], [s_qr, 1], [64, BK], SH_K)
    vdesc = tma.make_tensor_descriptor(vd, [ROWS, VW], [s_vr, 1], [64, BV], SH_V)
    fr = gl.arange(0, 64, layout=FL)
    zero = gl.zeros([64, BV], gl.float32, MMA)
    ro = gl.arange(0, 64, layout=ROW)
    rr = gl.expand_dims(ro, 1)
    cc = gl.expand_dims(gl.arange(0, 64, layout=COL), 0)
    # the first STAGES chunks of the CTA's sequence
    li, lc, lL, ltg, lh, lhv, liv, gv, bv = _fu_cursor(gl.program_id(0), 0, N_ITEMS, NV, cu, T, HV, g, beta, s_gb,
                                                      s_gt, s_gh, s_bb, s_bt, s_bh, fr, G, IS_VARLEN, BETA_SIGMOID,
                                                      NEG_EIGVAL)
    lit = 0
    for _s in gl.static_range(STAGES):
        if li < N_ITEMS:
            _fu_issue(kdesc, qdesc, vdesc, k_s, q_s, v_s, gb_s, ready, lit, ltg, lc, lh, lhv, liv, gv, bv, K, V, BK,
                      BV, STAGES)
            lit += 1
            li, lc, lL, ltg, lh, lhv, liv, gv, bv = _fu_cursor(li, lc + 1, N_ITEMS, NV, cu, T, HV, g, beta, s_gb,
                                                              s_gt, s_gh, s_bb, s_bt, s_bh, fr, G, IS_VARLEN,
                                                              BETA_SIGMOID, NEG_EIGVAL)
    it = 0
    for item in range(gl.program_id(0), N_ITEMS, gl.num_programs(0)):
        bos, L, cs, mc, o_base, _r, _c = _rc_out_item(item, NV, cu, T, HV, V, o, s_ob, s_oh, COL, G, IS_VARLEN, BV)
        for c in range(gl.cdiv(L, 64)):
            l0 = c * 64
            slot = it % STAGES
            b = it % 2
            mbarrier.wait(iready.index(slot), (it // STAGES) & 1)  # k normalised, the gate rows
            mbarrier.wait(ready.index(slot), (it // STAGES) & 1)  # the q tile (TMA; complete by now: see _rc_chain)
            qb = q_s.index(slot)
            _fu_l2norm(qb, BLK)
            fence_async_shared()
            _cta_barrier()
            qk = warpgroup_mma(qb, k_s.index(slot).permute((1, 0)), zero, use_acc=False, is_async=True)
            gr = gm_s.index(slot).load(ROW)
            gc = gm_s.index(slot).load(COL)
            e = _fu_exp(gl.where(rr >= cc, gl.expand_dims(gr, 1) - gl.expand_dims(gc, 0), 0.0), FAST_EXP)
            eg = f_s.index(slot * 5 + 2).load(ROW)
            qk = warpgroup_mma_wait(0, deps=[qk])
            aqk = gl.convert_layout(gl.where(rr >= cc, qk * e, 0.0).to(dt), A64, assert_trivial=True)
            mbarrier.wait(su_ready.index(b), (it // 2) & 1)
            qs = warpgroup_mma(qb, sb_s.index(b).permute((1, 0)), zero, use_acc=False, is_async=True)
            ot = warpgroup_mma(aqk, u_s.index(b).permute((1, 0)), zero, use_acc=False, is_async=True)
            qs, ot = warpgroup_mma_wait(0, deps=[qs, ot])
            _cta_barrier()  # every warp's wgmma reads of S_c, U_c and the slot are complete
            mbarrier.arrive(su_empty.index(b), count=1)
            if li < N_ITEMS:  # chunk it + STAGES into this slot once the chain is done with chunk it
                mbarrier.wait(empty.index(slot), (it // STAGES) & 1)
                _fu_issue(kdesc, qdesc, vdesc, k_s, q_s, v_s, gb_s, ready, lit, ltg, lc, lh, lhv, liv, gv, bv, K, V,
                          BK, BV, STAGES)
                lit += 1
                li, lc, lL, ltg, lh, lhv, liv, gv, bv = _fu_cursor(li, lc + 1, N_ITEMS, NV, cu, T, HV, g, beta,
                                                                  s_gb, s_gt, s_gh, s_bb, s_bt, s_bh, fr, G,
                                                                  IS_VARLEN, BETA_SIGMOID, NEG_EIGVAL)
            _rc_out_store(qs, ot, eg, scale, o_base, bos, l0, L, ro, cs, mc, s_ot)
            it += 1


@gluon.jit(do_not_specialize=["T"])
def atrex_sm90_gdn_fused_rc(
    qd, kd, vd, g, beta, h0, o, ht, cu, scale,
    T, HV, K, V,
    s_ob, s_ot, s_oh,
    s_h0n, s_h0h, s_h0k, s_h0v,
    s_gb, s_gt, s_gh, s_bb, s_bt, s_bh,
    ROWS, QW, VW, s_qr, s_kr, s_vr, N_NH,
    IS_VARLEN: gl.constexpr, G: gl.constexpr, BK: gl.constexpr, BV: gl.constexpr,
    USE_H0: gl.constexpr, STORE_HT: gl.constexpr, STATE_V_FIRST: gl.constexpr,
    STAGES: gl.constexpr, OUT_REGS: gl.constexpr, AUX_REGS: gl.constexpr,
    BETA_SIGMOID: gl.constexpr = False, NEG_EIGVAL: gl.constexpr = False, FAST_EXP: gl.constexpr = True,
    DIAG16: gl.constexpr = False, REINTERPRET: gl.constexpr = 0,
):
    """The whole chunked forward of calls with in-kernel L2 norm in one persistent launch (the block comment above):
    gl_rc's items, grid and chain partition; the intra operands formed in shared memory by the aux partition from
    the raw q, k (TMA, ``[B*T, H*K]`` views), g and beta; the loads issued by the output partition. K == BK (64 or
    128), BV == 64, num_warps 4 (the chain); three warp groups in all."""
    SH_K: gl.constexpr = gl.NVMMASharedLayout.get_default_for([64, BK], gl.bfloat16)
    SH_A: gl.constexpr = gl.NVMMASharedLayout.get_default_for([64, 64], gl.bfloat16)
    SH_V: gl.constexpr = gl.NVMMASharedLayout.get_default_for([64, BV], gl.bfloat16)
    SH_S: gl.constexpr = gl.NVMMASharedLayout.get_default_for([BV, BK], gl.bfloat16)
    SH_U: gl.constexpr = gl.NVMMASharedLayout.get_default_for([BV, 64], gl.bfloat16)
    SH_H: gl.constexpr = gl.NVMMASharedLayout.get_default_for([64, 64], gl.float16)
    ROWL: gl.constexpr = gl.SwizzledSharedLayout(1, 1, 1, [0])
    dt: gl.constexpr = o.dtype.element_ty
    gl.static_assert(BV == 64)
    NV = gl.cdiv(V, BV)
    N_ITEMS = NV * N_NH

    k_s = gl.allocate_shared_memory(dt, [STAGES, 64, BK], SH_K)
    q_s = gl.allocate_shared_memory(dt, [STAGES, 64, BK], SH_K)
    a_s = gl.allocate_shared_memory(dt, [STAGES, 64, 64], SH_A)
    v_s = gl.allocate_shared_memory(dt, [STAGES, 64, BV], SH_V)
    sb_s = gl.allocate_shared_memory(dt, [2, BV, BK], SH_S)
    u_s = gl.allocate_shared_memory(dt, [2, BV, 64], SH_U)
    f_s = gl.allocate_shared_memory(gl.float32, [STAGES * 5, 64], ROWL)
    gb_s = gl.allocate_shared_memory(gl.float32, [STAGES * 2, 64], ROWL)
    gm_s = gl.allocate_shared_memory(gl.float32, [STAGES, 64], ROWL)
    # the inverse's right operands: fp16 (tiles with every g <= 0) and bf16 (the fallback), the latter the same bytes
    # (REINTERPRET: the call's name in this Triton, 1 "_reinterpret" (3.6), 2 "reinterpret" (3.9); 0: separate
    # buffers, 16 KB more, which leaves no room for 3 load slots at K = 128)
    xh_s = gl.allocate_shared_memory(gl.float16, [64, 64], SH_H)
    mh_s = gl.allocate_shared_memory(gl.float16, [64, 64], SH_H)
    if REINTERPRET == 1:
        xb_s = xh_s._reinterpret(gl.bfloat16, [64, 64], SH_A)
        mb_s = mh_s._reinterpret(gl.bfloat16, [64, 64], SH_A)
    elif REINTERPRET == 2:
        xb_s = xh_s.reinterpret(gl.bfloat16, [64, 64], SH_A)
        mb_s = mh_s.reinterpret(gl.bfloat16, [64, 64], SH_A)
    else:
        xb_s = gl.allocate_shared_memory(gl.bfloat16, [64, 64], SH_A)
        mb_s = gl.allocate_shared_memory(gl.bfloat16, [64, 64], SH_A)
    ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    iready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    su_ready = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
    su_empty = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(STAGES):
        mbarrier.init(ready.index(i), count=1)
        mbarrier.init(iready.index(i), count=1)
        mbarrier.init(empty.index(i), count=1)  # the chain's arrive; the output partition waits on it
    for i in gl.static_range(2):
        mbarrier.init(su_ready.index(i), count=1)
        mbarrier.init(su_empty.index(i), count=1)
    fence_async_shared()
    _cta_barrier()

    gl.warp_specialize([
        (_rc_chain, (k_s, a_s, v_s, f_s, sb_s, u_s, iready, empty, su_ready, su_empty, ready, h0, ht, cu, T, HV, K,
                     V, N_ITEMS, NV, 0, s_h0n, s_h0h, s_h0k, s_h0v, G, IS_VARLEN, BK, BV, USE_H0, STORE_HT,
                     STATE_V_FIRST, STAGES, True)),
        (_fu_output, (q_s, sb_s, u_s, f_s, gm_s, k_s, v_s, gb_s, ready, iready, empty, su_ready, su_empty, o, qd, kd,
                      vd, g, beta, cu, T, HV, K, V, N_ITEMS, NV, ROWS, QW, VW, s_qr, s_kr, s_vr, s_gb, s_gt, s_gh,
                      s_bb, s_bt, s_bh, s_ob, s_ot, s_oh, scale, G, IS_VARLEN, BK, BV, STAGES, BETA_SIGMOID,
                      NEG_EIGVAL, FAST_EXP)),
        (_fu_aux, (k_s, a_s, gb_s, f_s, gm_s, xh_s, mh_s, xb_s, mb_s, ready, iready, cu, T, HV, N_ITEMS, NV,
                   G, IS_VARLEN, BK, STAGES, FAST_EXP, DIAG16)),
    ], [4, 4], [OUT_REGS, AUX_REGS])
