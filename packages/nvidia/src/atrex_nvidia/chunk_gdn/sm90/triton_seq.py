"""Varlen bookkeeping, gate rows and the sequence-parallel composition of the SM90 chunked GDN forward.

* ``atrex_sm90_gdn_chunk_offsets``: ``cu_seqlens`` clamped into safe offsets that every later kernel reads, and
  their chunk prefix sum, on the device (no host read, so a varlen call can be captured in a CUDA graph).
* ``atrex_sm90_gdn_slot_seq``: the intra grid's slot map, chunk slot -> sequence.
* ``atrex_sm90_gdn_gates``: the per-row gate factors of every chunk, for the intra kernel's ``GATES`` form, and
  fla's in-kernel gate transform (``use_gate_in_kernel``).
* ``atrex_sm90_gdn_segment_scan``: composes the per-segment state maps of the sequence-parallel state pass.
"""

import triton
import triton.language as tl

from .triton_common import _chunk_of_slot, _gdn_gate, _load_beta, _pdl_enter, _search_chunk_offsets


@triton.jit
def _chunk_counts(cu, start, N, BLOCK: tl.constexpr):
    """Sequences [start, start + BLOCK) of ``cu``: their indices, the in-range mask, and their chunk counts
    ceil((cu[n + 1] - cu[n]) / 64) (0 out of range), int32."""
    idx = start + tl.arange(0, BLOCK)
    m = idx < N
    a = tl.load(cu + idx, mask=m, other=0).to(tl.int32)
    b = tl.load(cu + idx + 1, mask=m, other=0).to(tl.int32)
    return idx, m, tl.where(m, (b - a + 63) // 64, 0)


@triton.jit
def _max2(a, b):
    return tl.maximum(a, b)


@triton.jit
def atrex_sm90_gdn_chunk_offsets(cu, cus, co, N, T, BLOCK: tl.constexpr, PDL: tl.constexpr = False):
    """``cus`` = ``cu`` made safe for every later kernel: its running maximum clamped into [0, T] (equal to ``cu``
    for valid offsets; bad values give empty or shortened sequences, never an access past the tokens). Then
    co[0] = 0, co[n + 1] = co[n] + ceil((cus[n + 1] - cus[n]) / 64), int32, for n < N. One program."""
    _pdl_enter(PDL)
    run = tl.zeros([], dtype=tl.int32)
    for start in range(0, N + 1, BLOCK):
        idx = start + tl.arange(0, BLOCK)
        m = idx < N + 1
        x = tl.load(cu + idx, mask=m, other=0)
        x = tl.minimum(tl.maximum(x, 0), T).to(tl.int32)
        x = tl.maximum(tl.associative_scan(x, 0, _max2), run)
        tl.store(cus + idx, x, mask=m)
        run = tl.max(tl.where(m, x, 0), 0)
    tl.debug_barrier()  # the counts below read entries other threads of this program wrote
    carry = tl.zeros([], dtype=tl.int32)
    tl.store(co, carry)
    for start in range(0, N, BLOCK):
        idx, m, nch = _chunk_counts(cus, start, N, BLOCK)
        cs = tl.cumsum(nch, 0) + carry
        tl.store(co + idx + 1, cs, mask=m)
        carry = carry + tl.sum(nch, 0)


@triton.jit
def atrex_sm90_gdn_slot_seq(co, cu, N, n_slots, n_search, BLOCK: tl.constexpr, PDL: tl.constexpr = False):
    """The intra grid's slot map: ``co[N + 1 + s]`` = the sequence of chunk slot ``s`` (the largest n with
    ``co[n] <= s``, which skips empty sequences), or ``N`` for a slot at or past ``co[N]`` (no chunk).

    Runs after ``atrex_sm90_gdn_chunk_offsets``, so that each intra program finds its sequence with one load
    instead of a binary search of dependent loads. ``cu`` is not read."""
    _pdl_enter(PDL)
    s = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    n = _search_chunk_offsets(co, s, N, n_search)
    live = s < tl.load(co + N)
    tl.store(co + N + 1 + s, tl.where(live, n, N), mask=s < n_slots)


@triton.jit
def atrex_sm90_gdn_gates(
    g, beta, fac, co, cu,
    T, N, HV, n_search,
    s_gb, s_gt, s_gh, s_bb, s_bt, s_bh,
    TOTAL_T, A_log, dt_bias, g_out,
    IS_VARLEN: tl.constexpr, BH: tl.constexpr, BETA_SIGMOID: tl.constexpr, NEG_EIGVAL: tl.constexpr,
    PDL: tl.constexpr = False, GATE_IN_KERNEL: tl.constexpr = False, HAS_DT_BIAS: tl.constexpr = False,
    STORE_FAC: tl.constexpr = True,
):
    """The gate rows of every chunk: one program per (chunk slot, block of BH value heads).

    ``STORE_FAC``: for the intra kernel's ``GATES`` form, the factor planes 0-4 of ``fac [5, HV, TOTAL_T]``: the
    chunk-local cumsum gamma, beta, beta e^gamma, e^gamma and e^(gamma_last - gamma), the values the intra kernel
    otherwise forms itself. The intra program then loads gamma and beta beside its q / k tiles instead of waiting
    for the g scan before it issues them. Varlen slots are read from the slot map.

    ``GATE_IN_KERNEL``: g is fla's raw gate input; each row becomes ``-e^A_log softplus(g + dt_bias)``
    (``_gdn_gate``, fp32) before the cumsum, and is stored into ``g_out`` (fp32 ``[B*T, HV]``), which the later
    kernels of the call read as their g. Without ``STORE_FAC`` only that transform runs (fixed-length slots over
    every batch row; chunk bounds do not matter to it). ``A_log``, ``dt_bias`` and ``g_out`` are not read
    otherwise."""
    _pdl_enter(PDL)
    slot = tl.program_id(0)
    heads = tl.program_id(1) * BH + tl.arange(0, BH)
    mh = heads < HV
    if IS_VARLEN:
        live = tl.load(co + N + 1 + slot) < N
        if not live:
            return
    c, bos, eos, b_idx, tg0 = _chunk_of_slot(slot, co, cu, N, T, n_search, IS_VARLEN, True)
    r64 = tl.arange(0, 64)
    t0 = bos + c * 64
    rows = t0 + r64
    mrow = rows < eos
    m2 = mrow[:, None] & mh[None, :]
    rows64 = rows.to(tl.int64)
    bi64 = b_idx.to(tl.int64)
    rg = (tg0 + (rows - bos)).to(tl.int64)
    gf = tl.load(g + bi64 * s_gb + rows64[:, None] * s_gt + heads[None, :] * s_gh, mask=m2, other=0.0).to(tl.float32)
    if GATE_IN_KERNEL:
        gf = tl.where(m2, _gdn_gate(gf, A_log, dt_bias, heads, mh, HAS_DT_BIAS), 0.0)
        tl.store(g_out + rg[:, None] * HV + heads[None, :], gf, mask=m2)
    if STORE_FAC:
        gc = tl.cumsum(gf, 0)
        bf = _load_beta(beta + bi64 * s_bb + heads[None, :] * s_bh, rows64[:, None], m2, s_bt, BETA_SIGMOID,
                        NEG_EIGVAL)
        plane = (tl.program_id(1) * 0 + HV).to(tl.int64) * TOTAL_T  # HV == 1 is specialised to a constexpr int
        f_base = fac + heads.to(tl.int64)[None, :] * TOTAL_T + rg[:, None]
        nvalid = tl.minimum(eos - t0, 64)
        glast = tl.sum(tl.where(r64[:, None] == nvalid - 1, gc, 0.0), 0)
        eg = tl.exp(gc)
        tl.store(f_base, gc, mask=m2)
        tl.store(f_base + plane, bf, mask=m2)
        tl.store(f_base + 2 * plane, bf * eg, mask=m2)
        tl.store(f_base + 3 * plane, eg, mask=m2)
        tl.store(f_base + 4 * plane, tl.where(m2, tl.exp(glast[None, :] - gc), 0.0), mask=m2)


@triton.jit
def atrex_sm90_gdn_segment_scan(R, h0, Hs, ht, NSEG, NA, HV, K, V,
                                s_h0n, s_h0h, s_h0k, s_h0v, s_htn, s_hth, s_htk, s_htv,
                                BK: tl.constexpr, BVS: tl.constexpr,
                                USE_H0: tl.constexpr, STORE_HT: tl.constexpr):
    """The sequence-parallel state pass's composition: program (i_v, b * HV + hv) takes columns [i_v BVS, + BVS)
    of batch row b, value head hv.

    With S_0 the initial state (``h0`` through its strides, or zero), S_{s+1} = M_s S_s + R_s for the segments
    s < NA, where ``R [B, NA, HV, K, V + K]`` holds R_s in its first V columns and M_s in its last K (written by
    the Gluon segment pass). Writes S_s for s < NSEG into ``Hs [B, NSEG, HV, K, V]`` (the segments' initial
    states) and, with ``STORE_HT`` (NA == NSEG), the final state S_NSEG into ``ht`` through its strides.
    fp32 throughout: S stays in registers and each step is one K-deep tf32x3 product (three tf32 tensor-core
    passes) whose M_s and R_s loads do not depend on the previous step, so the loop pipelines them."""
    i_v = tl.program_id(0)
    i_bh = tl.program_id(1)
    b = i_bh // HV
    hv = i_bh % HV
    VP = V + K
    rk = tl.arange(0, BK)
    cv = i_v * BVS + tl.arange(0, BVS)
    m = (rk < K)[:, None] & (cv < V)[None, :]
    mm = (rk < K)[:, None] & (rk < K)[None, :]
    if USE_H0:
        p0 = h0 + b.to(tl.int64) * s_h0n + hv * s_h0h + rk[:, None] * s_h0k + cv[None, :] * s_h0v
        acc = tl.load(p0, mask=m, other=0.0).to(tl.float32)
    else:
        acc = tl.zeros([BK, BVS], dtype=tl.float32)
    hs = Hs + (b.to(tl.int64) * NSEG * HV + hv) * K * V + rk[:, None] * V + cv[None, :]
    tl.store(hs, acc, mask=m)
    r = R + (b.to(tl.int64) * NA * HV + hv) * K * VP
    for s in range(NA):
        mt = tl.load(r + rk[:, None] * VP + V + rk[None, :], mask=mm, other=0.0)
        rs = tl.load(r + rk[:, None] * VP + cv[None, :], mask=m, other=0.0)
        acc = tl.dot(mt, acc, rs, input_precision="tf32x3")
        r += HV * K * VP
        hs += HV * K * V
        if s + 1 < NSEG:
            tl.store(hs, acc, mask=m)
    if STORE_HT:
        p_t = ht + b.to(tl.int64) * s_htn + hv * s_hth + rk[:, None] * s_htk + cv[None, :] * s_htv
        tl.store(p_t, acc, mask=m)
