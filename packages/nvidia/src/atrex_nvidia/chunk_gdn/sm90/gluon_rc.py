"""Persistent register-chain Gluon state passes of the SM90 chunked Gated-DeltaNet forward (math: ``gluon_common``),
for calls with many (sequence, head) programs.

The chain carries its state transposed, S^T [BV, BK] with BV = 64 (the wgmma M), so that every chain dot takes its
left operand from registers instead of a shared-memory round trip with a fence and a barrier before each dot:

    P^T = S^T K^T      (left: S^T, bf16 registers;  right: the k tile, permuted)
    X^T = beta V^T - (beta e^gamma) P^T                (factors along columns)
    U^T = X^T A^T      (left: X^T, registers;        right: the A tile, permuted)
    S^T = e^gamma_last S^T + (U^T dk) K                (left: U^T dk, registers; right: the k tile)

The accumulator -> left-operand conversions move no data (``assert_trivial``). The chain stores S_c^T and U_c^T for
the output partition after issuing the dot that reads the same registers, off its critical path. The kernels are
persistent: a 1-D grid of CTAs, each looping over work items with one chunk counter for every ring, so that the
loader fetches the next item's first chunks while the chain finishes the current one.

``atrex_sm90_gdn_state_output_gl_rc``: one chain per CTA, work item = (V block, sequence x value head).
``atrex_sm90_gdn_state_output_gl_rc2``: a whole value head (V = 2 x 64) per work item, two chains side by side on the
same k, q, A tiles (loaded once) and one output partition for both.
"""

from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.ampere import async_copy
from triton.experimental.gluon.language.nvidia.hopper import (
    fence_async_shared,
    mbarrier,
    tma,
    warpgroup_mma,
    warpgroup_mma_wait,
)

from .gluon_common import (
    _cp_async,
    _cta_barrier,
    _descriptors,
    _fill_ones,
    _load_chunk,
    _ones_tile,
    _pdl_enter,
    _q_side_scaled,
    _ring_barriers,
    _ring_tiles,
    _seq_head,
    _tma_store,
)

# Registers per thread of each gl_rc2 chain partition: the CTA's four warp groups share 512 x 128.
CHAIN_REGS = gl.constexpr(168)


@gluon.jit
def _rc_item(item, NV, cu, T, HV, G: gl.constexpr, IS_VARLEN: gl.constexpr):
    """(i_v, n, hv, h, bos, b_idx, tg0, L) of work item ``item`` = (sequence x value head) * NV + V block."""
    i_v = item % NV
    n, hv, h, bos, b_idx, tg0, L = _seq_head(item // NV, cu, T, HV, G, IS_VARLEN)
    return i_v, n, hv, h, bos, b_idx, tg0, L


@gluon.jit
def _h0_prefetch(h0, item, N_ITEMS, NV, cu, T, HV, V, s_h0n, s_h0h, s_h0k, s_h0v, G: gl.constexpr,
                 IS_VARLEN: gl.constexpr, BK: gl.constexpr, BW: gl.constexpr, H0_KC: gl.constexpr,
                 NW: gl.constexpr):
    """Prefetch into L2 (a hint: nothing waits for it) the initial-state block of work item ``item`` (nothing when
    ``item >= N_ITEMS``): its BW value columns from V block ``item % NV`` times its BK key rows, one address every 32
    elements (a 128-byte line of an fp32 state), BW * BK / 32 addresses over the ``NW`` warps that call it.
    ``H0_KC``: h0's k stride is 1 (BW rows of BK contiguous values), else its v stride is (BK rows of BW). Addresses
    past V are clamped to the last column (inside the tensor)."""
    if item < N_ITEMS:
        i_v, n, hv, h, bos, b_idx, tg0, L = _rc_item(item, NV, cu, T, HV, G, IS_VARLEN)
        base = h0 + n.to(gl.int64) * s_h0n + hv.to(gl.int64) * s_h0h
        FL: gl.constexpr = gl.BlockedLayout([1], [32], [NW], [0])
        # (the thread's index through an opaque 0 that depends on the item: otherwise the compiler hoists the
        # addresses' column parts out of the item loop and keeps them on the stack)
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
            gl.inline_asm_elementwise("prefetch.global.L2 [$1];\n\tmov.u32 $0, 0;", "=r,l", [p],
                                      dtype=gl.int32, is_pure=False, pack=1)


@gluon.jit
def _rc_loader(kd, qd, vd, ad, aqd, fac, k_s, q_s, a_s, aq_s, v_s, v1_s, f_s, gm_s, ready, empty, cu, T, HV, K, V,
               N_ITEMS, NV, ROWS, QW, VW, s_qr, s_kr, s_vr, TOTAL_T, h0, s_h0n, s_h0h, s_h0k, s_h0v,
               G: gl.constexpr, IS_VARLEN: gl.constexpr, BK: gl.constexpr, BV: gl.constexpr, STAGES: gl.constexpr,
               QSIDE: gl.constexpr, V2: gl.constexpr, H0PF: gl.constexpr, H0_KC: gl.constexpr):
    """Loader partition (1 warp): every chunk of every item of this CTA into ring slot (chunk counter) % STAGES: the
    tiles by TMA, and the chunk's factor planes 1-4 (beta, beta e^gamma, e^gamma, e^(gamma_last - gamma); 0 past the
    sequence end) and e^gamma_last (in all 64 entries of a fifth row) by cp.async, whose completion the slot's ready
    barrier also waits for (TMA cannot fetch the factors: a plane's row stride, TOTAL_T fp32, need not be a multiple of
    16 bytes). ``QSIDE``: no Aqk tile; the chunk-local gamma (plane 0; 0 past the sequence end) into ``gm_s``
    instead. ``V2`` (gl_rc2): also the second 64 v columns into ``v1_s``. ``H0PF`` 1: at the start of each item after
    the CTA's first, the item's initial-state block is prefetched into L2, STAGES chunks before the chains load it."""
    FL: gl.constexpr = gl.BlockedLayout([2], [32], [1], [0])
    fr = gl.arange(0, 64, layout=FL)
    plane = (HV + fr * 0).to(gl.int64) * TOTAL_T
    descs = _descriptors(kd, qd, vd, ad, aqd, ROWS, QW, VW, s_qr, s_kr, s_vr, HV, TOTAL_T, BK, BV)
    it = 0
    for item in range(gl.program_id(0), N_ITEMS, gl.num_programs(0)):
        i_v, n, hv, h, bos, b_idx, tg0, L = _rc_item(item, NV, cu, T, HV, G, IS_VARLEN)
        if H0PF == 1:
            if item != gl.program_id(0):  # (the CTA's first item: prefetched at the kernel's start)
                _h0_prefetch(h0, item, N_ITEMS, NV, cu, T, HV, V, s_h0n, s_h0h, s_h0k, s_h0v, G, IS_VARLEN, BK,
                             (2 if V2 else 1) * BV, H0_KC, 1)
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
            for j in gl.static_range(4):  # planes 1-4
                _cp_async(f_s.index(slot * 5 + j), f_base + (j + 1) * plane + l0 + fr, mask=fm)
            _cp_async(f_s.index(slot * 5 + 4), f_base + 3 * plane + gl.minimum(L, l0 + 64) - 1 + fr * 0)
            if QSIDE:
                _cp_async(gm_s.index(slot), f_base + l0 + fr, mask=fm)
            # each lane's arrive raises the pending count now and lowers it when its copies have landed: the phase
            # cannot complete before them (it must come before the expect's own arrive)
            async_copy.mbarrier_arrive(bar)
            _load_chunk(descs, bar, slot, k_s, q_s, a_s, aq_s, v_s, tg0, arow, l0, qcol, vcol, BK, BV, QSIDE, v1_s, V2)
            it += 1


@gluon.jit
def _rc_out_item(item, NV, cu, T, HV, V, o, s_ob, s_oh, COL: gl.constexpr, G: gl.constexpr, IS_VARLEN: gl.constexpr,
                 BV: gl.constexpr):
    """What an output partition needs of work item ``item``: (bos, L, its V columns, their mask, its output base, and
    for a TMA store its first row and column in the ``[B*T, HV*V]`` view of the output)."""
    i_v, n, hv, h, bos, b_idx, tg0, L = _rc_item(item, NV, cu, T, HV, G, IS_VARLEN)
    cs = i_v * BV + gl.arange(0, BV, layout=COL)
    return bos, L, cs, gl.expand_dims(cs < V, 0), o + b_idx.to(gl.int64) * s_ob + hv * s_oh, tg0, hv * V + i_v * BV


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
    waited for the previous one), else by the masked store at ``o_base`` (rows past ``L`` skipped: TMA would write
    the next sequence's rows)."""
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
def _rc_output(q_s, aq_s, k_s, gm_s, sb_s, u_s, f_s, o_s, ready, empty, su_ready, su_empty, o, cu, T, HV, V,
               N_ITEMS, NV, ROWS, s_ob, s_ot, s_oh, scale, ones_s,
               G: gl.constexpr, IS_VARLEN: gl.constexpr, BV: gl.constexpr, STAGES: gl.constexpr,
               QSIDE: gl.constexpr, OUT_TMA: gl.constexpr, QNORM_MMA: gl.constexpr):
    """Output partition (4 warps): O = scale (e^gamma (Q S_c) + Aqk U_c) from the chain's transposed S_c^T, U_c^T.
    With ``QSIDE`` the slot holds the raw q and no Aqk: the raw q goes to both dots, Aqk = tril(Q K^T e^(gamma_r -
    gamma_c)) is formed in registers while the chain works on the chunk, the L2 norm and ``scale`` are row factors
    (``_q_side_scaled``; ``QNORM_MMA``: the norms by the tensor cores), and the load slot is released once Aqk is
    formed. ``OUT_TMA``: each whole chunk's tile is stored through ``o_s`` by TMA."""
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
    for item in range(gl.program_id(0), N_ITEMS, gl.num_programs(0)):
        bos, L, cs, mc, o_base, orow, ocol = _rc_out_item(item, NV, cu, T, HV, V, o, s_ob, s_oh, COL, G, IS_VARLEN,
                                                          BV)
        for c in range(gl.cdiv(L, 64)):
            l0 = c * 64
            slot = it % STAGES
            b = it % 2
            mbarrier.wait(ready.index(slot), (it // STAGES) & 1)
            eg = f_s.index(slot * 5 + 2).load(ROW)
            if QSIDE:
                qa, aqk, rs = _q_side_scaled(q_s.index(slot), k_s.index(slot), gm_s.index(slot), ones_s, zero, scale,
                                             rr, cc, MMA, A64, A64, dt, QNORM_MMA)
                eg = eg * rs
                _cta_barrier()  # (every warp's Q K^T has read k and its gamma rows are loaded)
                mbarrier.arrive(empty.index(slot), count=1)
                mbarrier.wait(su_ready.index(b), (it // 2) & 1)
                qs = warpgroup_mma(qa, sb_s.index(b).permute((1, 0)), zero, use_acc=False, is_async=True)
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
            if QSIDE:  # (the slot was released above; scale is in eg and Aqk)
                _rc_tile_out(qs * gl.expand_dims(eg, 1) + ot, o_s, od, o_base, bos, l0, L, ro, cs, mc, s_ot, orow, ocol,
                             OUT_TMA)
            else:
                mbarrier.arrive(empty.index(slot), count=1)
                _rc_tile_out((qs * gl.expand_dims(eg, 1) + ot) * scale, o_s, od, o_base, bos, l0, L, ro, cs, mc, s_ot,
                             orow, ocol, OUT_TMA)
            it += 1
    if OUT_TMA:
        tma.store_wait(0)


@gluon.jit
def _rc_chain(k_s, a_s, v_s, f_s, sb_s, u_s, ready, empty, su_ready, su_empty, h0, ht, cu, T, HV, K, V, N_ITEMS, NV,
              s_h0n, s_h0h, s_h0k, s_h0v,
              G: gl.constexpr, IS_VARLEN: gl.constexpr, BK: gl.constexpr, BV: gl.constexpr,
              USE_H0: gl.constexpr, STORE_HT: gl.constexpr, STATE_V_FIRST: gl.constexpr, STAGES: gl.constexpr,
              LATE_FAC: gl.constexpr, IV_OFF: gl.constexpr):
    """Chain partition (4 warps): the transposed recurrence with register left operands; loads each item's initial
    state and stores its final state. ``LATE_FAC`` (gl_rc2): the v tile and the X factors are loaded after the P^T
    wait instead of while P^T runs, the same arithmetic with ~32 fewer registers live at the step's peak, so that a
    chain fits 168 registers without reloads. ``IV_OFF`` (gl_rc2, whose items are whole heads, NV = 1): this chain's
    V block."""
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
    for item in range(gl.program_id(0), N_ITEMS, gl.num_programs(0)):
        i_v, n, hv, h, bos, b_idx, tg0, L = _rc_item(item, NV, cu, T, HV, G, IS_VARLEN)
        n64 = n.to(gl.int64)
        cv = (i_v + IV_OFF) * BV + rv
        ms = gl.expand_dims(cv < V, 1) & gl.expand_dims(ck < K, 0)
        if USE_H0:  # S^T[v, k] = h0[n, hv, k, v] (strides swap the layouts)
            p_h0 = h0 + n64 * s_h0n + hv * s_h0h + gl.expand_dims(cv * s_h0v, 1) + gl.expand_dims(ck * s_h0k, 0)
            S = gl.load(p_h0, mask=ms, other=0.0).to(gl.float32)
        else:
            S = gl.zeros([BV, BK], gl.float32, MS)
        for _c in range(gl.cdiv(L, 64)):
            slot = it % STAGES
            b = it % 2
            s16 = S.to(dt)
            sa = gl.convert_layout(s16, gl.DotOperandLayout(operand_index=0, parent=M64, k_width=2),
                                   assert_trivial=True)
            mbarrier.wait(ready.index(slot), (it // STAGES) & 1)
            kb = k_s.index(slot)
            pt = warpgroup_mma(sa, kb.permute((1, 0)), zero, use_acc=False, is_async=True)
            # off the chain while P^T runs: S_c^T for the output partition, V^T of this chunk
            mbarrier.wait(su_empty.index(b), ((it // 2) & 1) ^ 1)  # the output partition is done with chunk it - 2
            sb_s.index(b).store(s16)
            # the column factors are read from the slot where they are used: a column vector of the transposed tiles
            # takes 16 registers per thread, and holding them from the step's start spills
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
        if STORE_HT:  # (S^T: v along rows, k along columns)
            # the store's indices and mask recomputed from an opaque 0 that depends on the loop: kept from the item's
            # start, the compiler hoists their column parts out of the item loop and spills them
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
    TOTAL_T, ROWS, QW, VW, s_qr, s_kr, s_vr, N_NH,
    IS_VARLEN: gl.constexpr, G: gl.constexpr, BK: gl.constexpr, BV: gl.constexpr,
    USE_H0: gl.constexpr, STORE_HT: gl.constexpr, STATE_V_FIRST: gl.constexpr, STAGES: gl.constexpr,
    OUT_REGS: gl.constexpr, QSIDE: gl.constexpr = False, OUT_TMA: gl.constexpr = False,
    QNORM_MMA: gl.constexpr = False, PDL: gl.constexpr = False, H0PF: gl.constexpr = 0, H0_KC: gl.constexpr = True,
):
    """``atrex_sm90_gdn_state_output_gl_ws``'s arguments on a 1-D grid: work item i is (V block i % NV, sequence x
    value head i // NV), NV = cdiv(V, BV), ``N_NH`` (sequence x value head) pairs; CTA p runs items p, p + grid, ...
    Partitions: chain (default, 4 warps), output (4 warps, OUT_REGS registers), loader (1 warp). K == BK (64 or 128),
    BV == 64, num_warps 4. ``QSIDE``: ``qd`` is the raw q and ``aqd`` is not read; the output partition forms the q
    norms and Aqk itself. ``OUT_TMA``: whole chunks of the output are stored by TMA, which needs the output
    ``[B, T, HV, V]`` describable as ``[B*T, HV*V]`` with row stride ``s_ot``. ``QNORM_MMA`` (bf16, with QSIDE): the q
    norms by the tensor cores. ``PDL``: programmatic dependent launch. ``H0PF`` (0 or 1, with ``USE_H0``): each item's
    initial-state block is prefetched into L2 (the CTA's first at the kernel's start, before the PDL wait: h0 and cu are
    the call's inputs); ``H0_KC``: h0's k stride is 1."""
    SH_S: gl.constexpr = gl.NVMMASharedLayout.get_default_for([BV, BK], gl.bfloat16)
    SH_U: gl.constexpr = gl.NVMMASharedLayout.get_default_for([BV, 64], gl.bfloat16)
    dt: gl.constexpr = o.dtype.element_ty
    gl.static_assert(BV == 64)
    gl.static_assert(H0PF == 0 or H0PF == 1)
    NV = gl.cdiv(V, BV)
    N_ITEMS = NV * N_NH
    if H0PF != 0 and USE_H0:
        _h0_prefetch(h0, gl.program_id(0), N_ITEMS, NV, cu, T, HV, V, s_h0n, s_h0h, s_h0k, s_h0v, G, IS_VARLEN, BK,
                     BV, H0_KC, 4)
    _pdl_enter(PDL)

    k_s, q_s, a_s, aq_s, v_s = _ring_tiles(dt, BK, BV, STAGES, QSIDE and OUT_TMA)
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
        (_rc_chain, (k_s, a_s, v_s, f_s, sb_s, u_s, ready, empty, su_ready, su_empty, h0, ht, cu, T, HV, K, V,
                     N_ITEMS, NV, s_h0n, s_h0h, s_h0k, s_h0v, G, IS_VARLEN, BK, BV, USE_H0, STORE_HT, STATE_V_FIRST,
                     STAGES, False, 0)),
        (_rc_output, (q_s, aq_s, k_s, gm_s, sb_s, u_s, f_s, o_s, ready, empty, su_ready, su_empty, o, cu, T, HV, V,
                      N_ITEMS, NV, ROWS, s_ob, s_ot, s_oh, scale, ones_s, G, IS_VARLEN, BV, STAGES, QSIDE, OUT_TMA,
                      QNORM_MMA)),
        (_rc_loader, (kd, qd, vd, ad, aqd, fac, k_s, q_s, a_s, aq_s, v_s, None, f_s, gm_s, ready, empty, cu, T, HV, K,
                      V, N_ITEMS, NV, ROWS, QW, VW, s_qr, s_kr, s_vr, TOTAL_T, h0, s_h0n, s_h0h, s_h0k, s_h0v, G,
                      IS_VARLEN, BK, BV, STAGES, QSIDE, False, H0PF, H0_KC)),
    ], [4, 1], [OUT_REGS, 24])


# ---------------------------------------------------------------------------------------------------------------
# Two-chain state pass: gl_rc with a whole value head (V = 2 x 64) per work item. Two chain partitions (gl_rc's chain
# in its LATE_FAC form, one per 64-column V block, CHAIN_REGS registers each) step their independent recurrences side
# by side on the same k, q, A tiles, loaded once; one output partition forms Q K^T, the decay tile and Aqk once per
# chunk and both halves' outputs. gl_rc's single chain leaves the SM's tensor cores mostly idle; here two share it.
# Shared memory: 2 load stages (k, q, A, two v tiles: 56 KB each) and double-buffered hand-offs for both chains.
# ---------------------------------------------------------------------------------------------------------------


@gluon.jit
def _rc2_output(q_s, k_s, gm_s, sb0_s, u0_s, sb1_s, u1_s, f_s, o_s, ones_s, ready, empty, sr0, se0, sr1, se1, o, cu,
                T, HV, V, N_ITEMS, ROWS, s_ob, s_ot, s_oh, scale,
                G: gl.constexpr, IS_VARLEN: gl.constexpr, BV: gl.constexpr, STAGES: gl.constexpr,
                OUT_TMA: gl.constexpr, QNORM_MMA: gl.constexpr):
    """gl_rc2's output partition (4 warps): per chunk the raw q in registers, Q K^T and Aqk once (``_rc_output``'s
    QSIDE form; the load slot released then), then for each chain h in {0, 1} (its hand-off buffers): O_h =
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
    for item in range(gl.program_id(0), N_ITEMS, gl.num_programs(0)):
        bos, L, cs, mc, o_base, orow, ocol = _rc_out_item(item, 1, cu, T, HV, V, o, s_ob, s_oh, COL, G, IS_VARLEN, BV)
        for c in range(gl.cdiv(L, 64)):
            l0 = c * 64
            slot = it % STAGES
            b = it % 2
            mbarrier.wait(ready.index(slot), (it // STAGES) & 1)
            eg = f_s.index(slot * 5 + 2).load(ROW)
            qa, aqk, rs = _q_side_scaled(q_s.index(slot), k_s.index(slot), gm_s.index(slot), ones_s, zero, scale, rr,
                                         cc, MMA, A64, A64, dt, QNORM_MMA)
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
    TOTAL_T, ROWS, QW, VW, s_qr, s_kr, s_vr, N_NH,
    IS_VARLEN: gl.constexpr, G: gl.constexpr, BK: gl.constexpr, BV: gl.constexpr,
    USE_H0: gl.constexpr, STORE_HT: gl.constexpr, STATE_V_FIRST: gl.constexpr, STAGES: gl.constexpr,
    OUT_REGS: gl.constexpr, OUT_TMA: gl.constexpr = False, QNORM_MMA: gl.constexpr = False,
    PDL: gl.constexpr = False, H0PF: gl.constexpr = 0, H0_KC: gl.constexpr = True,
):
    """``atrex_sm90_gdn_state_output_gl_rc``'s arguments and options, always with its QSIDE (``qd`` is the raw q,
    ``aqd`` is not read), for V == 2 BV == 128: work item i is sequence x value head i, both V blocks; CTA p runs items
    p, p + grid, ... Partitions: chain 0 (default, 4 warps), chain 1 (4 warps, CHAIN_REGS), output (4 warps,
    OUT_REGS), loader (1 warp)."""
    SH_S: gl.constexpr = gl.NVMMASharedLayout.get_default_for([BV, BK], gl.bfloat16)
    SH_U: gl.constexpr = gl.NVMMASharedLayout.get_default_for([BV, 64], gl.bfloat16)
    SH_V: gl.constexpr = gl.NVMMASharedLayout.get_default_for([64, BV], gl.bfloat16)
    dt: gl.constexpr = o.dtype.element_ty
    gl.static_assert(BV == 64)
    gl.static_assert(H0PF == 0 or H0PF == 1)
    N_ITEMS = N_NH
    if H0PF != 0 and USE_H0:
        _h0_prefetch(h0, gl.program_id(0), N_ITEMS, 1, cu, T, HV, V, s_h0n, s_h0h, s_h0k, s_h0v, G, IS_VARLEN, BK,
                     2 * BV, H0_KC, 4)
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
        (_rc_chain, (k_s, a_s, v_s, f_s, sb0_s, u0_s, ready, empty, sr0, se0, h0, ht, cu, T, HV, K, V, N_ITEMS, 1,
                     s_h0n, s_h0h, s_h0k, s_h0v, G, IS_VARLEN, BK, BV, USE_H0, STORE_HT, STATE_V_FIRST, STAGES, True,
                     0)),
        (_rc_chain, (k_s, a_s, v1_s, f_s, sb1_s, u1_s, ready, empty, sr1, se1, h0, ht, cu, T, HV, K, V, N_ITEMS, 1,
                     s_h0n, s_h0h, s_h0k, s_h0v, G, IS_VARLEN, BK, BV, USE_H0, STORE_HT, STATE_V_FIRST, STAGES, True,
                     1)),
        (_rc2_output, (q_s, k_s, gm_s, sb0_s, u0_s, sb1_s, u1_s, f_s, o_s, ones_s, ready, empty, sr0, se0, sr1, se1, o,
                       cu, T, HV, V, N_ITEMS, ROWS, s_ob, s_ot, s_oh, scale, G, IS_VARLEN, BV, STAGES, OUT_TMA,
                       QNORM_MMA)),
        (_rc_loader, (kd, qd, vd, ad, aqd, fac, k_s, q_s, a_s, aq_s, v_s, v1_s, f_s, gm_s, ready, empty, cu, T, HV, K,
                      V, N_ITEMS, 1, ROWS, QW, VW, s_qr, s_kr, s_vr, TOTAL_T, h0, s_h0n, s_h0h, s_h0k, s_h0v, G,
                      IS_VARLEN, BK, BV, STAGES, True, True, H0PF, H0_KC)),
    ], [4, 4, 1], [CHAIN_REGS, OUT_REGS, 24])
