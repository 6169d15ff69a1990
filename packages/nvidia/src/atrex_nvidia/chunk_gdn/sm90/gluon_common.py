"""Gluon helpers shared by the SM90 chunked Gated-DeltaNet state passes (``gluon_ws``, ``gluon_rc``).

Every state pass carries an fp32 state block ``S [BK, BV]`` per (V block, sequence x value head) across the 64-row
chunks of its sequence. Per chunk, with the per-row factors beta, beta e^gamma, e^gamma, e^(gamma_last - gamma) that
the intra kernel writes into its factor planes:

    X  = beta V - (beta e^gamma) (K S)          U = A X
    O  = scale (e^gamma (Q S) + Aqk U)          S = e^gamma_last S + K^T (U e^(gamma_last - gamma))

Only ``K S``, ``U = A X`` and the state update form a dependent chain; ``Q S``, ``Aqk U`` and the output epilogue do
not, so the kernels run them on other warps (``gl.warp_specialize``): a chain partition, output partitions and a
one-warp TMA loader, linked by mbarriers over a ring of load slots and a double-buffered S_c / U_c hand-off.

Gluon has no interpreter: these kernels are checked by compiling them for sm90 on a CPU and by the GPU target tests.
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

# Triton 3.6 and 3.9 name these differently:
# a barrier of the CTA (inside a warp partition: of that partition's warps)
_cta_barrier = getattr(gl, "thread_barrier", None) or gl.barrier
# TMA global -> shared (descriptor, coordinates, mbarrier, destination)
_tma_load = getattr(tma, "async_load", None) or tma.async_copy_global_to_shared
# TMA shared -> global (descriptor, coordinates, source)
_tma_store = getattr(tma, "async_store", None) or tma.async_copy_shared_to_global
# cp.async global -> shared (destination, pointers, mask)
_cp_async = getattr(async_copy, "async_load", None) or async_copy.async_copy_global_to_shared


@gluon.jit
def _pdl_enter(PDL: gl.constexpr):
    """With programmatic dependent launch: wait for the previous kernel, then let the next one launch. Run by every
    warp before the partitions split, so that no partition reads what the previous kernel writes before it is done."""
    if PDL:
        gl.inline_asm_elementwise("griddepcontrol.wait; // $0", "=r", [], dtype=gl.int32, is_pure=False, pack=1)
        gl.inline_asm_elementwise("griddepcontrol.launch_dependents; // $0", "=r", [], dtype=gl.int32, is_pure=False,
                                  pack=1)


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
def _sequence(cu, T, HV, G: gl.constexpr, IS_VARLEN: gl.constexpr):
    """``_seq_head`` of program axis 1 (sequence x value head)."""
    return _seq_head(gl.program_id(1), cu, T, HV, G, IS_VARLEN)


@gluon.jit
def _initial_state(h0, n64, hv, s_h0n, s_h0h, s_h0k, s_h0v, rs, cs, ms, BK: gl.constexpr, BV: gl.constexpr,
                   USE_H0: gl.constexpr, MMA: gl.constexpr):
    """The fp32 state block [BK, BV] in the wgmma accumulator layout: from ``h0`` (either layout, through its
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


@gluon.jit
def _ring_tiles(dt: gl.constexpr, BK: gl.constexpr, BV: gl.constexpr, STAGES: gl.constexpr,
                NO_AQK: gl.constexpr = False):
    """The load ring: STAGES slots of the k, q ([64, BK]), A, Aqk ([64, 64]) and v ([64, BV]) tiles, in the NVMMA
    layouts TMA writes and wgmma reads. ``NO_AQK`` (a kernel that loads no Aqk tile): the Aqk ring is the A ring's
    handle, never read, which leaves the shared memory to other buffers."""
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
    """(ready, empty, su_ready, su_empty), initialised: ready[s] (the loads of slot s landed), empty[s] (count
    ``CONSUMERS``: every consumer partition is done with slot s), su_ready[b] / su_empty[b] (the double-buffered
    S_c / U_c hand-off from the chain to the output partition)."""
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
    """The five TMA descriptors, built in the kernel by the loader partition: k and q ``[B*T, H*K]`` boxes
    [64, BK], v ``[B*T, HV*V]`` boxes [64, BV], A and Aqk ``[HV*TOTAL_T, 64]`` boxes [64, 64]."""
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
    ``slot`` by TMA; ``bar`` expects their bytes. ``NO_AQK``: no Aqk tile. ``V2`` (two-chain kernel): also the next
    BV columns of v into ``v1_s``. ``NO_Q`` (the segment kernel, which forms no output): no q tile."""
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


# ---------------------------------------------------------------------------------------------------------------
# The q side of an output partition where the slot holds the raw q and no Aqk tile: Q K^T by wgmma with the raw q in
# registers, the L2 norm and ``scale`` applied as row factors 1 / ||q_r|| scale (folded into e^gamma and into the decay
# tile's exponent), so that no element of q is normalised, rounded or rescaled.
# ---------------------------------------------------------------------------------------------------------------


@gluon.jit
def _ones_tile(dt: gl.constexpr, BK: gl.constexpr, ON: gl.constexpr, other):
    """The ones tile of ``_q_raw_regs_mma``, [8, BK] with K contiguous, allocated where ``ON`` (else ``other``, never
    read). The dot reads it permuted (K-major), as Q K^T reads its k tile: an N-major [BK, 8] tile gives wrong sums at
    K = 128."""
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
def _q_raw_regs(qb, A: gl.constexpr):
    """(The raw [64, BK] q tile of slot view ``qb`` in wgmma left-operand layout ``A``, its rows' squared L2 norms in
    fp32.)"""
    x = qb.load(A)
    xf = x.to(gl.float32)
    return x, gl.sum(xf * xf, 1)


@gluon.jit
def _q_raw_regs_mma(qb, ones_s, A: gl.constexpr):
    """``_q_raw_regs`` with the squared norms by the tensor cores (bf16 only): the squares rounded to bf16
    (``mul.rn.bf16x2``), summed in fp32 by a 64x8xBK wgmma against the ones tile ``ones_s`` (every column of the result
    is the row sum), instead of 64 unpacks and 64 fused multiply-adds a thread. The roundings (at most 2^-9 each, all
    terms positive) move a row's norm by at most 2^-10 relative. Returns (q, the asynchronous [64, 8] sums)."""
    M8: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, 8, 16])
    x = qb.load(A)
    sq = gl.inline_asm_elementwise("mul.rn.bf16x2 $0, $1, $1;", "=r,r", [x], dtype=x.dtype, is_pure=True, pack=2)
    sa = gl.convert_layout(sq, gl.DotOperandLayout(operand_index=0, parent=M8, k_width=2), assert_trivial=True)
    return x, warpgroup_mma(sa, ones_s.permute((1, 0)), gl.zeros([64, 8], gl.float32, M8), use_acc=False,
                            is_async=True)


@gluon.jit
def _mufu(x, LOG: gl.constexpr):
    """``2^x`` (``LOG`` False) or ``log2 x`` (positive x) of fp32 values, one MUFU instruction each
    (``ex2.approx.ftz.f32``, ``lg2.approx.ftz.f32``; libdevice's log2 takes ~30 instructions)."""
    if LOG:
        asm: gl.constexpr = "lg2.approx.ftz.f32 $0, $1;"
    else:
        asm: gl.constexpr = "ex2.approx.ftz.f32 $0, $1;"
    return gl.inline_asm_elementwise(asm, "=f,f", [x], dtype=gl.float32, is_pure=True, pack=1)


@gluon.jit
def _aqk_regs_scaled(qk, gm, lrs, rr, cc, M: gl.constexpr, A: gl.constexpr, dt: gl.constexpr):
    """Aqk = tril(diag(rs) Q K^T e^(gamma_r - gamma_c)) rounded to ``dt`` in left-operand layout ``A``, where ``qk``
    (accumulator layout ``M``, asynchronous) is the raw q's Q K^T, ``gm`` the chunk-local gamma row (shared) and
    ``lrs`` = log2 of the row factors rs: one exponent per element, 2^(gamma_r log2 e + lrs_r - gamma_c log2 e). Only
    the causal mask: a row past the sequence end is never stored. The mask sets a masked exponent to -inf (2^-inf =
    0, Q K^T is finite): a select of the product instead lets the compiler sink the bf16 rounding above it and select
    16-bit halves (~30 more byte permutes a chunk)."""
    LOG2E: gl.constexpr = 1.4426950408889634
    gr = gm.load(gl.SliceLayout(1, M)) * LOG2E + lrs
    gc = gm.load(gl.SliceLayout(0, M)) * LOG2E
    x = gl.where(rr >= cc, gl.expand_dims(gr, 1) - gl.expand_dims(gc, 0), float("-inf"))
    e = _mufu(x, False)
    qk = warpgroup_mma_wait(0, deps=[qk])
    return gl.convert_layout((qk * e).to(dt), A, assert_trivial=True)


@gluon.jit
def _q_side_scaled(qb, kb, gmb, ones_s, z, scale, rr, cc, M: gl.constexpr, A: gl.constexpr, AQ: gl.constexpr,
                   dt: gl.constexpr, QNORM_MMA: gl.constexpr):
    """The q side of one chunk (slot views ``qb``, ``kb``, ``gmb``): (the raw q in left-operand layout ``A``, Aqk in
    left-operand layout ``AQ``, the row factors scale / ||q_r|| in the row layout of ``M``), Q K^T accumulated in
    ``M`` from ``z``. The norms by ``_q_raw_regs_mma`` (its dot issued ahead of Q K^T, only it waited for) with
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
    return qa, _aqk_regs_scaled(qk, gmb, _mufu(rs, True), rr, cc, M, AQ, dt), rs
