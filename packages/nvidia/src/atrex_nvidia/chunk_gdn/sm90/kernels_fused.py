"""The fused chunked Gated-DeltaNet forward (round 18, ``launch.FUSED``): one Triton kernel, one program per
(V block, sequence x value head), that forms each chunk's intra-chunk operands itself instead of reading them from
the intra kernel's workspaces.

Why. The two-kernel data flow (intra v3, then a state kernel) writes the normalised q / k copies, A, Aqk and five
factor planes to HBM and reads them back: at varlen 16x1024 (H = HV = 32) that traffic alone is ~0.34 ms on the
H200 (BENCH_H200.md, round 13), against the 3x goal of ~0.35 ms for the whole call. A program of this kernel reads
q, k, v, g and beta once and writes o (and the final state); nothing else touches HBM. The price is that the
intra-chunk work (L2 norms, Q K^T, K K^T, the decay tile, the UT inverse) sits on the program's sequential chain,
once per V block. Published Hopper kernels that fuse the whole chunk step (FlashInfer's sm90 delta-rule kernel)
are fastest exactly where there are many (sequence, head) pairs, the varlen case.

Math: the same as ``kernels.atrex_sm90_gdn_intra_chunk_v3`` followed by ``kernels._step_products`` (state v2 / tma),
with the same roundings: q, k normalised in fp32 and rounded to the input dtype, A and Aqk rounded to the input dtype,
the factors beta, beta e^gamma, e^gamma, e^(gamma_last - gamma), e^gamma_last in fp32 from the chunk-local cumsum
gamma. So with the same knobs the fused call computes the two-kernel call's values (bit for bit under the Triton
interpreter when the two-kernel state pass has the same V-block width, since there every dot is a float32 numpy
product; op_test/nvidia/chunk_gdn/_gdn_cases.fused_check).

With ``PIPE`` the program forms chunk c + 1's operands (loads, norms, dots, inverse) before chunk c's state
products, carried in registers across the loop step: the two dependency chains, one through the state and one that
is independent of it, are then in one basic block for the scheduler to interleave. Without it each step forms its
own chunk's operands first.
"""

import triton
import triton.language as tl

from .kernels import (
    _exp_tile,
    _load_beta,
    _load_qk_tile,
    _state_program,
    _step_products,
    _store_state,
    _v3_tile_inverse,
)


@triton.jit
def _l2norm_rows(x, USE_L2NORM: tl.constexpr):
    """``kernels._load_qk_tile``'s normalisation of a loaded tile (same operations, same bits). A copy: with
    ``_load_qk_tile`` calling a shared helper instead, ptxas allocates the measured two-head v3 intra binary differently
    (Triton 3.6 SASS at T=8192/16/32: same 6992 instructions, 1013 lines changed), which would need a new measurement."""
    if USE_L2NORM:
        xf = x.to(tl.float32)
        inv = tl.rsqrt(tl.sum(xf * xf, 1) + 1e-6)
        x = (xf * inv[:, None]).to(x.dtype)
    return x


@triton.jit
def _qk_tile(base, desc, row, col, rows64, mrow, offs_k, mk, s_t, USE_L2NORM: tl.constexpr, TMA: tl.constexpr):
    """One q or k tile [64, BK] (optionally L2-normalised): by TMA (rows past the sequence zeroed after the load: the
    box reads the next sequence's rows there) or by masked pointer loads."""
    if TMA:
        x = desc.load([row, col])
        return _l2norm_rows(tl.where(mrow[:, None], x, tl.zeros_like(x)), USE_L2NORM)
    else:
        return _load_qk_tile(base, rows64, mrow, offs_k, mk, s_t, USE_L2NORM)


@triton.jit
def _fused_chunk(q_base, k_base, v_base, g_base, b_base, qd, kd, vd, row0, qcol, vcol, bos, L, l0, s_qt, s_kt, s_vt,
                 s_gt, s_bt, offs_k, mk, offs_v, mv, r64, rr, cc, causal, dt: tl.constexpr, USE_L2NORM: tl.constexpr,
                 BETA_SIGMOID: tl.constexpr, NEG_EIGVAL: tl.constexpr, NEWTON: tl.constexpr, INV_FP16: tl.constexpr,
                 FP16_FALLBACK: tl.constexpr, MASK_OUT: tl.constexpr, ACC_MERGE: tl.constexpr,
                 FAST_EXP: tl.constexpr, LATE_Q: tl.constexpr, TMA: tl.constexpr, SYNC: tl.constexpr):
    """The operands of the chunk starting at token ``l0`` of the sequence (rows ``l0 + r64 >= L`` masked; a chunk
    wholly past the end is all zero): (k, q [64, BK] and v [64, BV] in the input dtype, A, Aqk [64, 64] in the input
    dtype, beta, beta e^gamma, e^gamma, e^(gamma_last - gamma) [64] fp32, e^gamma_last). The v tile stays in the input
    dtype until the step converts it (fewer registers while it is carried)."""
    rl = l0 + r64
    mrow = rl < L
    rows64 = (bos + rl).to(tl.int64)
    gf = tl.load(g_base + rows64 * s_gt, mask=mrow, other=0.0).to(tl.float32)
    gc = tl.cumsum(gf, 0)
    bf = _load_beta(b_base, rows64, mrow, s_bt, BETA_SIGMOID, NEG_EIGVAL)
    kf = _qk_tile(k_base, kd, row0 + l0, qcol, rows64, mrow, offs_k, mk, s_kt, USE_L2NORM, TMA)
    e0 = _exp_tile(tl.where(causal, gc[:, None] - gc[None, :], 0.0), FAST_EXP)
    kk = tl.dot(kf, tl.trans(kf))
    Lm = tl.where(rr > cc, bf[:, None] * e0 * kk, 0.0)
    if LATE_Q:
        # q, its product and v after the inverse: only S, k and the inverse's tiles are live during it
        a_t = _v3_tile_inverse(Lm, gf, rr, cc, NEWTON, INV_FP16, FP16_FALLBACK, MASK_OUT, ACC_MERGE).to(dt)
        if SYNC:
            tl.debug_barrier()
        qf = _qk_tile(q_base, qd, row0 + l0, qcol, rows64, mrow, offs_k, mk, s_qt, USE_L2NORM, TMA)
        qk = tl.dot(qf, tl.trans(kf))
        aq_t = tl.where(causal, qk * e0, 0.0).to(dt)
    else:
        qf = _qk_tile(q_base, qd, row0 + l0, qcol, rows64, mrow, offs_k, mk, s_qt, USE_L2NORM, TMA)
        qk = tl.dot(qf, tl.trans(kf))
        aq_t = tl.where(causal, qk * e0, 0.0).to(dt)
        a_t = _v3_tile_inverse(Lm, gf, rr, cc, NEWTON, INV_FP16, FP16_FALLBACK, MASK_OUT, ACC_MERGE).to(dt)
    if TMA:
        vt = vd.load([row0 + l0, vcol])
        vt = tl.where(mrow[:, None] & mv[None, :], vt, tl.zeros_like(vt))
    else:
        vt = tl.load(v_base + rows64[:, None] * s_vt + offs_v[None, :], mask=mrow[:, None] & mv[None, :], other=0.0)
    # the factor rows, as the intra kernel stores them (kernels._store_row_factors) and the state kernels load them
    nvalid = tl.minimum(L - l0, 64)
    glast = tl.sum(tl.where(r64 == nvalid - 1, gc, 0.0), 0)
    eg = tl.where(mrow, tl.exp(gc), 0.0)
    be = bf * eg
    dk = tl.where(mrow, tl.exp(glast - gc), 0.0)
    egl = tl.where(nvalid > 0, tl.exp(glast), 1.0)
    return kf, qf, vt, a_t, aq_t, bf, be, eg, dk, egl


@triton.jit
def atrex_sm90_gdn_fused(
    q, k, v, g, beta, h0, o, ht, cu, scale,
    T, HV, K, V,
    s_qb, s_qt, s_qh, s_kb, s_kt, s_kh, s_vb, s_vt, s_vh, s_gb, s_gt, s_gh, s_bb, s_bt, s_bh, s_ob, s_ot, s_oh,
    s_h0n, s_h0h, s_h0k, s_h0v,
    ROWS, QW, VW, s_qr, s_kr, s_vr, s_or,
    IS_VARLEN: tl.constexpr, G: tl.constexpr, BK: tl.constexpr, BV: tl.constexpr,
    USE_L2NORM: tl.constexpr, BETA_SIGMOID: tl.constexpr, NEG_EIGVAL: tl.constexpr,
    USE_H0: tl.constexpr, STORE_HT: tl.constexpr, STATE_V_FIRST: tl.constexpr,
    NEWTON: tl.constexpr = True, INV_FP16: tl.constexpr = False, FP16_FALLBACK: tl.constexpr = 2,
    MASK_OUT: tl.constexpr = False, ACC_MERGE: tl.constexpr = False, FAST_EXP: tl.constexpr = False,
    SPLIT_XU: tl.constexpr = False, PIPE: tl.constexpr = False, LATE_Q: tl.constexpr = False,
    DEVICE_DESC: tl.constexpr = False, SYNC: tl.constexpr = False,
):
    """Program (V block ``program_id(0)``, sequence x value head ``program_id(1)``): walks the sequence's chunks in
    order with the fp32 state block ``S [BK, BV]`` in registers; per chunk it forms the intra-chunk operands
    (``_fused_chunk``: v3's math) and takes the state kernels' step (``_step_products``). Reads q, k, v, g, beta (and
    h0); writes o and, with ``STORE_HT``, the final state. The knobs after ``STATE_V_FIRST`` mean what they mean for
    the v3 intra kernel and the state kernels; ``PIPE`` and ``LATE_Q``: see ``_fused_chunk`` and the module docstring.

    With ``DEVICE_DESC`` (TMA) the q, k and v tiles come through descriptors built in the kernel (the launcher
    provides their scratch) over q / k as ``[ROWS, QW]`` (= ``[B*T, H*K]``, ``K == BK``, row strides ``s_qr``,
    ``s_kr``) and v / o as ``[ROWS, VW]`` (``[B*T, HV*V]``, ``V % BV == 0``; ``s_vr``, ``s_or``), and the output of
    every whole chunk leaves by a TMA store (a chunk that ends the sequence early stores through masked pointers: a box
    store would overwrite the next sequence's rows). Without it every tile is a [64, BK] / [64, BV] tensor of pointers,
    whose per-element address registers ptxas keeps across the loop (spilled: Triton 3.6 SASS, round 18).

    With ``SYNC`` a CTA barrier separates the inverse from what follows it, the intra operands from the state step and
    the step from the next chunk. Without them the H200 (Triton 3.6, r66 / r68) gave wrong rows, NaNs or illegal
    addresses that changed from run to run in some configurations (32- and 16-column blocks, 8 warps, PIPE, q before
    the inverse): typically rows 16-31 of a chunk, the second warp's rows of a wgmma tile, which points at a
    shared-memory race between the two parts' dot operands; the interpreter, which runs one thread, equals the
    two-kernel call bit for bit either way."""
    i_v = tl.program_id(0)
    hv, h, bos, eos, b_idx, tg0, L, NT, offs_k, offs_v, mk, mv, r64, n64, S = _state_program(
        i_v, tl.program_id(1), h0, cu, T, HV, K, V, s_h0n, s_h0h, s_h0k, s_h0v, IS_VARLEN, G, BK, BV, USE_H0)
    rr = r64[:, None]
    cc = r64[None, :]
    causal = rr >= cc
    bi64 = b_idx.to(tl.int64)
    q_base = q + bi64 * s_qb + h * s_qh
    k_base = k + bi64 * s_kb + h * s_kh
    v_base = v + bi64 * s_vb + hv * s_vh
    g_base = g + bi64 * s_gb + hv * s_gh
    b_base = beta + bi64 * s_bb + hv * s_bh
    o_base = o + bi64 * s_ob + hv * s_oh
    dt: tl.constexpr = q.dtype.element_ty
    row0 = b_idx * T + bos  # the sequence's first row in the [B*T, *] views
    qcol = h * K
    vcol = hv * V + i_v * BV
    if DEVICE_DESC:
        qd = tl.make_tensor_descriptor(q, [ROWS, QW], [s_qr, 1], [64, BK])
        kd = tl.make_tensor_descriptor(k, [ROWS, QW], [s_kr, 1], [64, BK])
        vd = tl.make_tensor_descriptor(v, [ROWS, VW], [s_vr, 1], [64, BV])
        od = tl.make_tensor_descriptor(o, [ROWS, VW], [s_or, 1], [64, BV])
    else:
        qd = q
        kd = k
        vd = v
        od = o

    if PIPE:
        kt_n, qt_n, vt_n, a_n, aq_n, bt_n, be_n, eg_n, dk_n, egl_n = _fused_chunk(
            q_base, k_base, v_base, g_base, b_base, qd, kd, vd, row0, qcol, vcol, bos, L, 0, s_qt, s_kt, s_vt, s_gt,
            s_bt, offs_k, mk, offs_v, mv, r64, rr, cc, causal, dt, USE_L2NORM, BETA_SIGMOID, NEG_EIGVAL, NEWTON,
            INV_FP16, FP16_FALLBACK, MASK_OUT, ACC_MERGE, FAST_EXP, LATE_Q, DEVICE_DESC, SYNC)
    for c in range(NT):
        l0 = c * 64
        if PIPE:
            kt, qt, vt, a_t, aq_t, bt, be, eg, dk, egl = kt_n, qt_n, vt_n, a_n, aq_n, bt_n, be_n, eg_n, dk_n, egl_n
            # the next chunk's operands (all zero past the last chunk) before this chunk's state products
            kt_n, qt_n, vt_n, a_n, aq_n, bt_n, be_n, eg_n, dk_n, egl_n = _fused_chunk(
                q_base, k_base, v_base, g_base, b_base, qd, kd, vd, row0, qcol, vcol, bos, L, l0 + 64, s_qt, s_kt,
                s_vt, s_gt, s_bt, offs_k, mk, offs_v, mv, r64, rr, cc, causal, dt, USE_L2NORM, BETA_SIGMOID,
                NEG_EIGVAL, NEWTON, INV_FP16, FP16_FALLBACK, MASK_OUT, ACC_MERGE, FAST_EXP, LATE_Q, DEVICE_DESC, SYNC)
        else:
            kt, qt, vt, a_t, aq_t, bt, be, eg, dk, egl = _fused_chunk(
                q_base, k_base, v_base, g_base, b_base, qd, kd, vd, row0, qcol, vcol, bos, L, l0, s_qt, s_kt, s_vt,
                s_gt, s_bt, offs_k, mk, offs_v, mv, r64, rr, cc, causal, dt, USE_L2NORM, BETA_SIGMOID, NEG_EIGVAL,
                NEWTON, INV_FP16, FP16_FALLBACK, MASK_OUT, ACC_MERGE, FAST_EXP, LATE_Q, DEVICE_DESC, SYNC)
        if SYNC:
            tl.debug_barrier()
        O, S = _step_products(kt, qt, vt.to(tl.float32), a_t, aq_t, S, bt, be, eg, dk, egl, dt, SPLIT_XU)
        if SYNC:
            tl.debug_barrier()
        Od = (O * scale).to(o.dtype.element_ty)
        if DEVICE_DESC and l0 + 64 <= L:
            od.store([row0 + l0, vcol], Od)
        else:
            rows64 = (bos + l0 + r64).to(tl.int64)
            tl.store(o_base + rows64[:, None] * s_ot + offs_v[None, :], Od, mask=((l0 + r64) < L)[:, None] & mv[None, :])

    if STORE_HT:
        _store_state(ht, S, n64, hv, HV, K, V, offs_k, offs_v, mk, mv, STATE_V_FIRST)
