"""Intra-chunk kernels of the SM90 chunked Gated-DeltaNet forward (chunk size 64).

For each chunk and value head they form the chunk-local cumsum ``gamma`` of g, ``Aqk = (Q K^T) * Gamma * M``
(causal, decay-weighted) and the UT inverse ``A = (I + L)^-1`` of
``L = tril(beta_r e^(gamma_r - gamma_c) K K^T, -1)``, and write them token-indexed (``[HV, B*T, 64]``) so that
varlen chunks never overlap. The state/output kernels (``triton_state``) consume them.

* ``atrex_sm90_gdn_intra_chunk_v3``: one program per (chunk slot, value head, or pair of value heads); whole-tile
  64x64 tensor-core dots, the inverse by recursive block merges. Inputs in bf16 / fp16 with K, V multiples of 16
  and K <= 128.
* ``atrex_sm90_gdn_intra_chunk``: the generic kernel for every other call (K > 128, K or V not a multiple of 16,
  other dtypes): one program per (chunk slot, q/k head), 16x16 blocks with fp32 ieee dots for the inverse.

Masks are applied to exponents before ``exp`` (no ``0 * inf``); padded rows of a partial chunk have zero k, beta
and decay weight.
"""

import triton
import triton.language as tl

from .triton_common import _chunk_of_slot, _exp_tile, _load_beta, _load_qk_tile, _pdl_enter

# ---------------------------------------------------------------------------------------------------------------
# Generic kernel: 16x16 blocks
# ---------------------------------------------------------------------------------------------------------------


@triton.jit
def _inv_step(Lm, X, r, i):
    # row i of (I + L)^-1 by forward substitution: X_i = e_i - sum_{j<i} L_ij X_j
    li = tl.sum(tl.where(r[:, None] == i, Lm, 0.0), 0)
    xi = tl.where(r == i, 1.0, 0.0) - tl.sum(li[:, None] * X, 0)
    return tl.where(r[:, None] == i, xi[None, :], X)


@triton.jit
def _l_block(kk, b_r, g_r, g_c, DIAG: tl.constexpr, r, c):
    """beta_r * exp(gamma_r - gamma_c) * (k_r . k_c), strictly lower on diagonal blocks."""
    d = g_r[:, None] - g_c[None, :]
    if DIAG:
        m = r[:, None] > c[None, :]
        d = tl.where(m, d, 0.0)
        return tl.where(m, b_r[:, None] * tl.exp(d) * kk, 0.0)
    else:
        return b_r[:, None] * tl.exp(d) * kk


@triton.jit
def _inv16_product(Lm, eye):
    # (I + L)^-1 = (I - L)(I + L^2)(I + L^4)(I + L^8) for strictly lower 16x16 L (L^16 = 0)
    P = eye - Lm
    L2 = tl.dot(Lm, Lm, input_precision="ieee")
    P = P + tl.dot(P, L2, input_precision="ieee")
    L4 = tl.dot(L2, L2, input_precision="ieee")
    P = P + tl.dot(P, L4, input_precision="ieee")
    L8 = tl.dot(L4, L4, input_precision="ieee")
    P = P + tl.dot(P, L8, input_precision="ieee")
    return P


@triton.jit
def _store_blk(ptr, rows, mrow, c0, x, r16):
    tl.store(ptr + rows[:, None] * 64 + (c0 + r16)[None, :], x, mask=mrow[:, None])


@triton.jit
def atrex_sm90_gdn_intra_chunk(
    q, k, v, g, beta, A, Aqk, gam, qn, kn, W, U, cu, co, fac,
    T, N, HV, K, V, n_search,
    s_qb, s_qt, s_qh, s_kb, s_kt, s_kh, s_vb, s_vt, s_vh, s_gb, s_gt, s_gh, s_bb, s_bt, s_bh,
    TOTAL_T,
    IS_VARLEN: tl.constexpr, G: tl.constexpr, BK: tl.constexpr, BVA: tl.constexpr,
    USE_L2NORM: tl.constexpr, BETA_SIGMOID: tl.constexpr, NEG_EIGVAL: tl.constexpr,
    INV_PRODUCT: tl.constexpr, STORE_QKN: tl.constexpr, STORE_FAC: tl.constexpr,
    DOT_PRECISION: tl.constexpr = "tf32",
):
    """Generic intra-chunk kernel, one program per (chunk slot, q/k head).

    Loads q, k once per q/k head (optionally L2-normalised; with ``STORE_QKN`` the normalised copies go to
    ``qn`` / ``kn`` ``[B*T, H, K]`` for the state kernel), forms ``K K^T`` as 16x16 blocks and ``Q K^T`` once,
    and for each of the ``G = HV / H`` value heads sharing them writes gamma (``gam``), ``Aqk`` and ``A`` in the
    input dtype. The inverse's four diagonal 16x16 blocks come from the product form
    ``(I - L)(I + L^2)(I + L^4)(I + L^8)`` (``INV_PRODUCT``) or forward substitution, the off-diagonal blocks from
    fp32 ieee dots. With ``STORE_FAC`` also the state kernel v2's factor planes 1-4 of ``fac``.
    ``v``, ``W``, ``U``, ``V``, the v strides and ``BVA`` are not read. ``DOT_PRECISION``: the K K^T / Q K^T
    dots' input precision (fp32 inputs take ``tf32x3``; 16-bit dots ignore it)."""
    slot = tl.program_id(0)
    h = tl.program_id(1)
    if IS_VARLEN:
        if slot >= tl.load(co + N):
            return
    c, bos, eos, b_idx, tg0 = _chunk_of_slot(slot, co, cu, N, T, n_search, IS_VARLEN)
    t0 = bos + c * 64
    r16 = tl.arange(0, 16)
    r64 = tl.arange(0, 64)
    offs_k = tl.arange(0, BK)
    mk = offs_k < K

    q_base = q + b_idx.to(tl.int64) * s_qb + h * s_qh
    k_base = k + b_idx.to(tl.int64) * s_kb + h * s_kh
    rows0 = t0 + r16
    rows1 = rows0 + 16
    rows2 = rows0 + 32
    rows3 = rows0 + 48
    m0 = rows0 < eos
    m1 = rows1 < eos
    m2 = rows2 < eos
    m3 = rows3 < eos
    k0 = _load_qk_tile(k_base, rows0.to(tl.int64), m0, offs_k, mk, s_kt, USE_L2NORM)
    k1 = _load_qk_tile(k_base, rows1.to(tl.int64), m1, offs_k, mk, s_kt, USE_L2NORM)
    k2 = _load_qk_tile(k_base, rows2.to(tl.int64), m2, offs_k, mk, s_kt, USE_L2NORM)
    k3 = _load_qk_tile(k_base, rows3.to(tl.int64), m3, offs_k, mk, s_kt, USE_L2NORM)
    # K K^T blocks (shared by the G value heads of this q/k head)
    kk00 = tl.dot(k0, tl.trans(k0), input_precision=DOT_PRECISION)
    kk10 = tl.dot(k1, tl.trans(k0), input_precision=DOT_PRECISION)
    kk11 = tl.dot(k1, tl.trans(k1), input_precision=DOT_PRECISION)
    kk20 = tl.dot(k2, tl.trans(k0), input_precision=DOT_PRECISION)
    kk21 = tl.dot(k2, tl.trans(k1), input_precision=DOT_PRECISION)
    kk22 = tl.dot(k2, tl.trans(k2), input_precision=DOT_PRECISION)
    kk30 = tl.dot(k3, tl.trans(k0), input_precision=DOT_PRECISION)
    kk31 = tl.dot(k3, tl.trans(k1), input_precision=DOT_PRECISION)
    kk32 = tl.dot(k3, tl.trans(k2), input_precision=DOT_PRECISION)
    kk33 = tl.dot(k3, tl.trans(k3), input_precision=DOT_PRECISION)
    # Q K^T on the full chunk
    rows = t0 + r64
    mrow = rows < eos
    qf = _load_qk_tile(q_base, rows.to(tl.int64), mrow, offs_k, mk, s_qt, USE_L2NORM)
    kf = _load_qk_tile(k_base, rows.to(tl.int64), mrow, offs_k, mk, s_kt, USE_L2NORM)
    qk = tl.dot(qf, tl.trans(kf), input_precision=DOT_PRECISION)
    if STORE_QKN:
        H = tl.num_programs(1)
        rq = (tg0 + (rows - bos)).to(tl.int64)
        p_n = rq[:, None] * H * K + h * K + offs_k[None, :]
        mn = mrow[:, None] & mk[None, :]
        tl.store(qn + p_n, qf, mask=mn)
        tl.store(kn + p_n, kf, mask=mn)
    causal = r64[:, None] >= r64[None, :]
    zero16 = tl.zeros([16, 16], dtype=tl.float32)

    for j in range(G):
        hv = h * G + j
        g_base = g + b_idx.to(tl.int64) * s_gb + hv * s_gh
        b_base = beta + b_idx.to(tl.int64) * s_bb + hv * s_bh
        gf = tl.load(g_base + rows.to(tl.int64) * s_gt, mask=mrow, other=0.0).to(tl.float32)
        gc = tl.cumsum(gf, 0)
        rows_g = (tg0 + (rows - bos)).to(tl.int64)
        tl.store(gam + hv.to(tl.int64) * TOTAL_T + rows_g, gc, mask=mrow)
        if STORE_FAC:
            # planes 1-4 of fac [5, HV, TOTAL_T] (plane 0 is gam): beta, beta e^gamma, e^gamma, e^(gamma_last - gamma)
            plane = (hv * 0 + HV).to(tl.int64) * TOTAL_T  # HV == 1 is specialised to a constexpr int
            f_base = fac + hv.to(tl.int64) * TOTAL_T
            bf = _load_beta(b_base, rows.to(tl.int64), mrow, s_bt, BETA_SIGMOID, NEG_EIGVAL)
            nvalid = tl.minimum(eos - t0, 64)
            gl = tl.sum(tl.where(r64 == nvalid - 1, gc, 0.0), 0)
            eg = tl.exp(gc)
            tl.store(f_base + plane + rows_g, bf, mask=mrow)
            tl.store(f_base + 2 * plane + rows_g, bf * eg, mask=mrow)
            tl.store(f_base + 3 * plane + rows_g, eg, mask=mrow)
            tl.store(f_base + 4 * plane + rows_g, tl.where(mrow, tl.exp(gl - gc), 0.0), mask=mrow)
        # Aqk = QK^T * exp(gamma_r - gamma_c) on and below the diagonal
        d = tl.where(causal, gc[:, None] - gc[None, :], 0.0)
        aqk = tl.where(causal, qk * tl.exp(d), 0.0)
        aqk_base = Aqk + hv.to(tl.int64) * TOTAL_T * 64
        tl.store(aqk_base + rows_g[:, None] * 64 + r64[None, :], aqk.to(Aqk.dtype.element_ty),
                 mask=mrow[:, None])

        # per-16-block gamma / beta (the same cumsum as gc, block by block)
        gs0 = tl.load(g_base + rows0.to(tl.int64) * s_gt, mask=m0, other=0.0).to(tl.float32)
        gs1 = tl.load(g_base + rows1.to(tl.int64) * s_gt, mask=m1, other=0.0).to(tl.float32)
        gs2 = tl.load(g_base + rows2.to(tl.int64) * s_gt, mask=m2, other=0.0).to(tl.float32)
        gs3 = tl.load(g_base + rows3.to(tl.int64) * s_gt, mask=m3, other=0.0).to(tl.float32)
        g0 = tl.cumsum(gs0, 0)
        g1 = tl.cumsum(gs1, 0) + tl.sum(gs0, 0)
        g2 = tl.cumsum(gs2, 0) + tl.sum(gs0, 0) + tl.sum(gs1, 0)
        g3 = tl.cumsum(gs3, 0) + tl.sum(gs0, 0) + tl.sum(gs1, 0) + tl.sum(gs2, 0)
        b0 = _load_beta(b_base, rows0.to(tl.int64), m0, s_bt, BETA_SIGMOID, NEG_EIGVAL)
        b1 = _load_beta(b_base, rows1.to(tl.int64), m1, s_bt, BETA_SIGMOID, NEG_EIGVAL)
        b2 = _load_beta(b_base, rows2.to(tl.int64), m2, s_bt, BETA_SIGMOID, NEG_EIGVAL)
        b3 = _load_beta(b_base, rows3.to(tl.int64), m3, s_bt, BETA_SIGMOID, NEG_EIGVAL)

        l00 = _l_block(kk00, b0, g0, g0, True, r16, r16)
        l11 = _l_block(kk11, b1, g1, g1, True, r16, r16)
        l22 = _l_block(kk22, b2, g2, g2, True, r16, r16)
        l33 = _l_block(kk33, b3, g3, g3, True, r16, r16)
        l10 = _l_block(kk10, b1, g1, g0, False, r16, r16)
        l20 = _l_block(kk20, b2, g2, g0, False, r16, r16)
        l21 = _l_block(kk21, b2, g2, g1, False, r16, r16)
        l30 = _l_block(kk30, b3, g3, g0, False, r16, r16)
        l31 = _l_block(kk31, b3, g3, g1, False, r16, r16)
        l32 = _l_block(kk32, b3, g3, g2, False, r16, r16)

        eye = tl.where(r16[:, None] == r16[None, :], 1.0, 0.0)
        if INV_PRODUCT:
            x00 = _inv16_product(l00, eye)
            x11 = _inv16_product(l11, eye)
            x22 = _inv16_product(l22, eye)
            x33 = _inv16_product(l33, eye)
        else:
            x00 = eye
            x11 = eye
            x22 = eye
            x33 = eye
            for i in range(1, 16):
                x00 = _inv_step(l00, x00, r16, i)
                x11 = _inv_step(l11, x11, r16, i)
                x22 = _inv_step(l22, x22, r16, i)
                x33 = _inv_step(l33, x33, r16, i)
        # off-diagonal blocks of the inverse: X_ij = -X_ii sum_{m=j}^{i-1} L_im X_mj
        x10 = -tl.dot(x11, tl.dot(l10, x00, input_precision="ieee"), input_precision="ieee")
        x21 = -tl.dot(x22, tl.dot(l21, x11, input_precision="ieee"), input_precision="ieee")
        x32 = -tl.dot(x33, tl.dot(l32, x22, input_precision="ieee"), input_precision="ieee")
        x20 = -tl.dot(x22, tl.dot(l20, x00, input_precision="ieee")
                      + tl.dot(l21, x10, input_precision="ieee"), input_precision="ieee")
        x31 = -tl.dot(x33, tl.dot(l31, x11, input_precision="ieee")
                      + tl.dot(l32, x21, input_precision="ieee"), input_precision="ieee")
        x30 = -tl.dot(x33, tl.dot(l30, x00, input_precision="ieee")
                      + tl.dot(l31, x10, input_precision="ieee")
                      + tl.dot(l32, x20, input_precision="ieee"), input_precision="ieee")

        dt = Aqk.dtype.element_ty
        rg0 = (tg0 + (rows0 - bos)).to(tl.int64)
        rg1 = (tg0 + (rows1 - bos)).to(tl.int64)
        rg2 = (tg0 + (rows2 - bos)).to(tl.int64)
        rg3 = (tg0 + (rows3 - bos)).to(tl.int64)
        a_base = A + hv.to(tl.int64) * TOTAL_T * 64
        zb = zero16.to(dt)
        _store_blk(a_base, rg0, m0, 0, x00.to(dt), r16)
        _store_blk(a_base, rg0, m0, 16, zb, r16)
        _store_blk(a_base, rg0, m0, 32, zb, r16)
        _store_blk(a_base, rg0, m0, 48, zb, r16)
        _store_blk(a_base, rg1, m1, 0, x10.to(dt), r16)
        _store_blk(a_base, rg1, m1, 16, x11.to(dt), r16)
        _store_blk(a_base, rg1, m1, 32, zb, r16)
        _store_blk(a_base, rg1, m1, 48, zb, r16)
        _store_blk(a_base, rg2, m2, 0, x20.to(dt), r16)
        _store_blk(a_base, rg2, m2, 16, x21.to(dt), r16)
        _store_blk(a_base, rg2, m2, 32, x22.to(dt), r16)
        _store_blk(a_base, rg2, m2, 48, zb, r16)
        _store_blk(a_base, rg3, m3, 0, x30.to(dt), r16)
        _store_blk(a_base, rg3, m3, 16, x31.to(dt), r16)
        _store_blk(a_base, rg3, m3, 32, x32.to(dt), r16)
        _store_blk(a_base, rg3, m3, 48, x33.to(dt), r16)


# ---------------------------------------------------------------------------------------------------------------
# Per-value-head kernel (v3): whole-tile dots, inverse by recursive block merges
# ---------------------------------------------------------------------------------------------------------------


@triton.jit
def _intra_tile(q, k, g, beta, co, cu, N, T, HV, n_search, s_qb, s_qh, s_kb, s_kh, s_gb, s_gh, s_bb, s_bh,
                IS_VARLEN: tl.constexpr, G: tl.constexpr, GS: tl.constexpr = 1):
    """Program ``pid`` of the v3 kernel: (live, c, bos, eos, tg0, t0, h, hv and the q / k / g / beta base pointers of
    its chunk); ``live`` is False for varlen slots without a chunk (read from the slot map). With ``GS > 1`` the
    program covers value heads ``hv .. hv + GS - 1`` (``hv`` a multiple of ``GS``; ``HV % GS == 0``)."""
    pid = tl.program_id(0)
    hv = (pid % (HV // GS)) * GS
    slot = pid // (HV // GS)
    h = hv // G
    live = True
    if IS_VARLEN:
        live = tl.load(co + N + 1 + slot) < N
    c, bos, eos, b_idx, tg0 = _chunk_of_slot(slot, co, cu, N, T, n_search, IS_VARLEN, IS_VARLEN)
    bi64 = b_idx.to(tl.int64)
    return (live, c, bos, eos, tg0, bos + c * 64, h, hv, q + bi64 * s_qb + h * s_qh, k + bi64 * s_kb + h * s_kh,
            g + bi64 * s_gb + hv * s_gh, beta + bi64 * s_bb + hv * s_bh)


@triton.jit
def _store_qk_normalised(qn, kn, qf, kf, rg, mrow, offs_k, mk, h, hv, HV, K, G: tl.constexpr,
                         STORE_Q: tl.constexpr = True):
    """The L2-normalised q, k tiles into ``[B*T, H, K]`` (by the first value head of each q/k head); k only without
    ``STORE_Q``."""
    if hv % G == 0:
        H = HV // G
        p_n = rg[:, None] * H * K + h * K + offs_k[None, :]
        mn = mrow[:, None] & mk[None, :]
        if STORE_Q:
            tl.store(qn + p_n, qf, mask=mn)
        tl.store(kn + p_n, kf, mask=mn)


@triton.jit
def _store_row_factors(gam, gc, bf, hv, HV, TOTAL_T, rg, mrow, r64, t0, eos):
    """The factor planes of ``fac [5, HV, TOTAL_T]`` (``gam`` is plane 0) for one value head: gamma, beta,
    beta e^gamma, e^gamma, e^(gamma_last - gamma)."""
    plane = (hv * 0 + HV).to(tl.int64) * TOTAL_T  # HV == 1 is specialised to a constexpr int
    f_base = gam + hv.to(tl.int64) * TOTAL_T
    tl.store(f_base + rg, gc, mask=mrow)
    nvalid = tl.minimum(eos - t0, 64)
    gl = tl.sum(tl.where(r64 == nvalid - 1, gc, 0.0), 0)
    eg = tl.exp(gc)
    tl.store(f_base + plane + rg, bf, mask=mrow)
    tl.store(f_base + 2 * plane + rg, bf * eg, mask=mrow)
    tl.store(f_base + 3 * plane + rg, eg, mask=mrow)
    tl.store(f_base + 4 * plane + rg, tl.where(mrow, tl.exp(gl - gc), 0.0), mask=mrow)


@triton.jit
def _v3_head_rows(gam, g_base, b_base, rows64, mrow, s_gt, s_bt, hv, HV, TOTAL_T, rg, r64, t0, eos,
                  BETA_SIGMOID: tl.constexpr, NEG_EIGVAL: tl.constexpr):
    """One value head's g (fp32), chunk-local cumsum gamma and beta rows of a v3 tile; stores its factor planes."""
    gf = tl.load(g_base + rows64 * s_gt, mask=mrow, other=0.0).to(tl.float32)
    gc = tl.cumsum(gf, 0)
    bf = _load_beta(b_base, rows64, mrow, s_bt, BETA_SIGMOID, NEG_EIGVAL)
    _store_row_factors(gam, gc, bf, hv, HV, TOTAL_T, rg, mrow, r64, t0, eos)
    return gf, gc, bf


@triton.jit
def _v3_gate_rows(gam, g_base, rows64, mrow, s_gt, hv, HV, TOTAL_T, rg):
    """One value head's (g, gamma, beta) rows of a v3 tile in the ``GATES`` form: gamma and beta from the planes
    ``atrex_sm90_gdn_gates`` wrote, g itself only for the fp16 inverse's guard. Past the sequence beta reads 0 and
    gamma -1e30, so that the decay factor of such a row against a row of the sequence is 0 rather than an
    overflowing e^(0 - gamma_c) (whose 0 * inf would put a NaN into the inverse)."""
    plane = (hv * 0 + HV).to(tl.int64) * TOTAL_T
    f_base = gam + hv.to(tl.int64) * TOTAL_T
    gf = tl.load(g_base + rows64 * s_gt, mask=mrow, other=0.0).to(tl.float32)
    gc = tl.load(f_base + rg, mask=mrow, other=-1e30)
    bf = tl.load(f_base + plane + rg, mask=mrow, other=0.0)
    return gf, gc, bf


@triton.jit
def _store_tile64(ws, hv, TOTAL_T, rg, r64, mrow, x):
    """A [64, 64] tile into the ``[HV, TOTAL_T, 64]`` workspace ``ws`` (A or Aqk), in its dtype."""
    base = ws + hv.to(tl.int64) * TOTAL_T * 64
    tl.store(base + rg[:, None] * 64 + r64[None, :], x.to(ws.dtype.element_ty), mask=mrow[:, None])


@triton.jit
def _merge_level(X, Lm, rr, cc, B: tl.constexpr, FP16: tl.constexpr):
    """X_2B = X_B - X_B M_B X_B: the inverse of the block diagonal of size 2B from that of size B, where ``M_B`` is
    the part of ``Lm`` inside the diagonal blocks of size 2B and outside those of size B. bf16 dots, or fp16 dots
    with ``FP16`` (same tensor-core rate, 3 more mantissa bits); fp32 accumulation either way."""
    M = tl.where(((rr // (2 * B)) == (cc // (2 * B))) & ((rr // B) != (cc // B)), Lm, 0.0)
    dt: tl.constexpr = tl.float16 if FP16 else tl.bfloat16
    Xh = X.to(dt)
    MX = tl.dot(M.to(dt), Xh)
    return X - tl.dot(Xh, MX.to(dt))


@triton.jit
def _merge_level_mask_out(X, Lh, rr, cc, B: tl.constexpr, ACC: tl.constexpr = False):
    """``_merge_level`` with the level mask on the product instead of on L: ``M_B X_B == mask_B(L X_B)`` with the
    same bits, since ``X_B`` is block diagonal with exact zeros elsewhere. So ``Lh`` (L rounded to the merge dtype
    once) serves every level and the fp32 L need not stay live through the merges. With ``ACC`` the caller passes
    ``-L`` and the second dot accumulates ``X_B (-M_B X_B)`` onto ``X_B`` in the tensor cores."""
    lvl = ((rr // (2 * B)) == (cc // (2 * B))) & ((rr // B) != (cc // B))
    Xh = X.to(Lh.dtype)
    MX = tl.where(lvl, tl.dot(Lh, Xh), 0.0)
    if ACC:
        return tl.dot(Xh, MX.to(Lh.dtype), X)
    return X - tl.dot(Xh, MX.to(Lh.dtype))


@triton.jit
def _merge16(X, D, r, c, B: tl.constexpr):
    """One merge level (``_merge_level_mask_out``'s form, dots in D's dtype) on batched 16x16 diagonal blocks
    ``[4, 16, 16]``."""
    lvl = ((r // (2 * B)) == (c // (2 * B))) & ((r // B) != (c // B))
    Xh = X.to(D.dtype)
    MX = tl.where(lvl, tl.dot(D, Xh), 0.0)
    return X - tl.dot(Xh, MX.to(D.dtype))


@triton.jit
def _diag16_inverse(Lh):
    """The inverses of the four 16x16 diagonal blocks of ``I + L`` (``Lh``: the strictly lower 64x64 L rounded to
    the merges' dtype), as a ``[64, 64]`` fp32 tile, block diagonal in blocks of 16 with exact zeros elsewhere:
    merges b = 2, 4, 8 on each block's own 16x16 tile.

    In the 64x64 wgmma accumulator layout of four warps, warp w holds rows 16w .. 16w + 15, so diagonal block w is
    one warp's data: the batched ``[4, 16, 16]`` dots (mma.sync, one batch element per warp) need no CTA barrier
    between levels, where whole-tile merges pass each level through shared memory."""
    rb = tl.arange(0, 4)[:, None, None, None]
    cb = tl.arange(0, 4)[None, None, :, None]
    D = tl.sum(tl.where(rb == cb, tl.reshape(Lh.to(tl.float32), [4, 16, 4, 16]), 0.0), axis=2).to(Lh.dtype)
    r = tl.arange(0, 16)[None, :, None]
    c = tl.arange(0, 16)[None, None, :]
    X = tl.where(r == c, 1.0, 0.0) - tl.where((r // 2) == (c // 2), D.to(tl.float32), 0.0)
    X = _merge16(X, D, r, c, 2)
    X = _merge16(X, D, r, c, 4)
    X = _merge16(X, D, r, c, 8)
    return tl.reshape(tl.where(rb == cb, tl.expand_dims(X, 2), 0.0), [64, 64])


@triton.jit
def _newton_step(X, Lm, rr, cc):
    """One refinement of the inverse ``X`` of ``I + Lm`` with ``Lm`` split into bf16 hi + lo: ``A = Xb + Xb R``,
    ``R = I - (I + L) Xb`` (strictly lower: Xb is unit lower triangular)."""
    Xb = X.to(tl.bfloat16)
    Lh = Lm.to(tl.bfloat16)
    P = tl.dot(Lh, Xb)
    P = tl.dot((Lm - Lh.to(tl.float32)).to(tl.bfloat16), Xb, P)
    R = tl.where(rr > cc, -(Xb.to(tl.float32) + P), 0.0)
    return tl.dot(Xb, R.to(tl.bfloat16), Xb.to(tl.float32))


@triton.jit
def _ut_inverse(Lm, rr, cc, FP16: tl.constexpr, MASK_OUT: tl.constexpr, ACC: tl.constexpr, DIAG16: tl.constexpr):
    """``(I + Lm)^-1`` (fp32) of a strictly lower 64x64 tile by recursive block merges b = 2..32.

    bf16 merge dots followed by one Newton step (``_newton_step``), which brings the result to the accuracy of the
    exact inverse rounded to bf16; with ``FP16``, fp16 merge dots and no Newton step. With ``DIAG16`` the merges
    b = 2, 4, 8 run per warp on the diagonal 16x16 blocks (``_diag16_inverse``). ``MASK_OUT`` selects
    ``_merge_level_mask_out`` for the whole-tile merges, ``ACC`` (with ``MASK_OUT`` only) its accumulating form."""
    # X_2 = I - (L inside the 2x2 diagonal blocks); then merges b = 2, 4, 8, 16, 32
    Ls = -Lm if ACC else Lm
    if DIAG16:
        mdt: tl.constexpr = tl.float16 if FP16 else tl.bfloat16
        X = _diag16_inverse(Lm.to(mdt))
        if MASK_OUT:
            Lh = Ls.to(mdt)
            X = _merge_level_mask_out(X, Lh, rr, cc, 16, ACC)
            X = _merge_level_mask_out(X, Lh, rr, cc, 32, ACC)
        else:
            X = _merge_level(X, Ls, rr, cc, 16, FP16)
            X = _merge_level(X, Ls, rr, cc, 32, FP16)
    else:
        eye = tl.where(rr == cc, 1.0, 0.0)
        X = eye - tl.where((rr // 2) == (cc // 2), Lm, 0.0)
        if MASK_OUT:
            Lh = Ls.to(tl.float16 if FP16 else tl.bfloat16)
            X = _merge_level_mask_out(X, Lh, rr, cc, 2, ACC)
            X = _merge_level_mask_out(X, Lh, rr, cc, 4, ACC)
            X = _merge_level_mask_out(X, Lh, rr, cc, 8, ACC)
            X = _merge_level_mask_out(X, Lh, rr, cc, 16, ACC)
            X = _merge_level_mask_out(X, Lh, rr, cc, 32, ACC)
        else:
            X = _merge_level(X, Ls, rr, cc, 2, FP16)
            X = _merge_level(X, Ls, rr, cc, 4, FP16)
            X = _merge_level(X, Ls, rr, cc, 8, FP16)
            X = _merge_level(X, Ls, rr, cc, 16, FP16)
            X = _merge_level(X, Ls, rr, cc, 32, FP16)
    if not FP16:
        X = _newton_step(X, Lm, rr, cc)
    return X


@triton.jit
def _v3_tile_inverse(Lm, gf, rr, cc, INV_FP16: tl.constexpr, PAIR: tl.constexpr):
    """``(I + Lm)^-1`` of one v3 tile. With ``INV_FP16``: per-warp diagonal blocks, and fp16 merges only where
    their operands stay in fp16's range, i.e. every g of the tile <= 0 (decay factors <= 1; the launcher sets
    ``INV_FP16`` only with L2-normalised keys); other tiles take bf16 merges and the Newton step. ``PAIR`` (two-head
    programs): the mask-out merges, accumulating on the fp16 path."""
    if INV_FP16:
        if tl.max(gf, 0) <= 0.0:
            X = _ut_inverse(Lm, rr, cc, True, PAIR, PAIR, True)
        else:
            X = _ut_inverse(Lm, rr, cc, False, PAIR, False, True)
    else:
        X = _ut_inverse(Lm, rr, cc, False, PAIR, False, False)
    return X


@triton.jit
def atrex_sm90_gdn_intra_chunk_v3(
    q, k, g, beta, A, Aqk, gam, fac, qn, kn, cu, co,
    T, N, HV, K, n_search,
    s_qb, s_qt, s_qh, s_kb, s_kt, s_kh, s_gb, s_gt, s_gh, s_bb, s_bt, s_bh,
    TOTAL_T,
    IS_VARLEN: tl.constexpr, G: tl.constexpr, BK: tl.constexpr,
    USE_L2NORM: tl.constexpr, BETA_SIGMOID: tl.constexpr, NEG_EIGVAL: tl.constexpr,
    STORE_QKN: tl.constexpr, INV_FP16: tl.constexpr = False, GS: tl.constexpr = 1,
    FAST_EXP: tl.constexpr = False, GATES: tl.constexpr = False,
    QSIDE: tl.constexpr = False, PDL: tl.constexpr = False,
):
    """Intra-chunk kernel v3: one program per (chunk slot, value head), or with ``GS == 2`` (``G`` even) per
    (chunk slot, pair of value heads of one q/k head). Varlen programs read their sequence from the slot map.

    q and k are loaded (and L2-normalised) once; ``Q K^T`` and ``K K^T`` are one 64x64 tensor-core dot each and
    ``L = tril(beta_r e^(gamma_r - gamma_c) K K^T, -1)`` stays a 64x64 fp32 register tile. The UT inverse
    ``A = (I + L)^-1`` is built by recursive block merges, ``X_2b = X_b - X_b M_b X_b`` (``_ut_inverse``): bf16
    dots plus one Newton refinement step, or with ``INV_FP16`` fp16 dots where the tile's g allow it
    (``_v3_tile_inverse``). Outputs: A, Aqk (``[HV, B*T, 64]``, input dtype), the factor planes 0-4 of ``fac``
    (``gam`` is plane 0) and, with ``STORE_QKN``, the normalised q / k in ``qn`` / ``kn``.

    With ``GS == 2`` the q / k tiles, their normalisation and stores and the two dots are shared by both heads;
    the g / beta terms (decay tile, Aqk, L and its inverse) run per head, and the merges mask the product
    (``_merge_level_mask_out``). ``FAST_EXP``: the 64x64 decay tiles take ``ex2.approx.ftz`` (``_exp_tile``).
    ``GATES``: gamma and beta come from the planes ``atrex_sm90_gdn_gates`` wrote before, so that no load waits
    for the g scan, and no plane is stored. ``QSIDE``: the state pass normalises q and forms Aqk itself, so the
    program reads no q, stores only the normalised k and forms no Aqk. ``PDL``: starts with ``_pdl_enter``."""
    _pdl_enter(PDL)
    live, c, bos, eos, tg0, t0, h, hv0, q_base, k_base, g_base0, b_base0 = _intra_tile(
        q, k, g, beta, co, cu, N, T, HV, n_search, s_qb, s_qh, s_kb, s_kh, s_gb, s_gh, s_bb, s_bh, IS_VARLEN, G, GS)
    if not live:
        return
    r64 = tl.arange(0, 64)
    offs_k = tl.arange(0, BK)
    mk = offs_k < K

    rows = t0 + r64
    mrow = rows < eos
    rows64 = rows.to(tl.int64)
    rg = (tg0 + (rows - bos)).to(tl.int64)
    rr = r64[:, None]
    cc = r64[None, :]
    causal = rr >= cc
    tl.static_assert(GS == 1 or (GS == 2 and G % 2 == 0))
    tl.static_assert(not QSIDE or STORE_QKN)
    if GATES:
        # every load of the tile is independent of the others: gate rows first (small), then q and k
        gf0, gc0, bf0 = _v3_gate_rows(gam, g_base0, rows64, mrow, s_gt, hv0, HV, TOTAL_T, rg)
        if not QSIDE:
            qf = _load_qk_tile(q_base, rows64, mrow, offs_k, mk, s_qt, USE_L2NORM)
        kf = _load_qk_tile(k_base, rows64, mrow, offs_k, mk, s_kt, USE_L2NORM)
        e0 = _exp_tile(tl.where(causal, gc0[:, None] - gc0[None, :], 0.0), FAST_EXP)
    else:
        gf0, gc0, bf0 = _v3_head_rows(gam, g_base0, b_base0, rows64, mrow, s_gt, s_bt, hv0, HV, TOTAL_T, rg, r64, t0,
                                      eos, BETA_SIGMOID, NEG_EIGVAL)
        e0 = _exp_tile(tl.where(causal, gc0[:, None] - gc0[None, :], 0.0), FAST_EXP)
        if not QSIDE:
            qf = _load_qk_tile(q_base, rows64, mrow, offs_k, mk, s_qt, USE_L2NORM)
        kf = _load_qk_tile(k_base, rows64, mrow, offs_k, mk, s_kt, USE_L2NORM)
    if QSIDE:
        _store_qk_normalised(qn, kn, kf, kf, rg, mrow, offs_k, mk, h, hv0, HV, K, G, STORE_Q=False)
    else:
        if STORE_QKN:
            _store_qk_normalised(qn, kn, qf, kf, rg, mrow, offs_k, mk, h, hv0, HV, K, G)
        qk = tl.dot(qf, tl.trans(kf))
        _store_tile64(Aqk, hv0, TOTAL_T, rg, r64, mrow, tl.where(causal, qk * e0, 0.0))
    kk = tl.dot(kf, tl.trans(kf))
    Lm0 = tl.where(rr > cc, bf0[:, None] * e0 * kk, 0.0)
    if GS == 2:
        # the second value head: its g / beta terms on the same Q K^T and K K^T; both L tiles are formed before
        # either inverse, so that q, k, Q K^T and K K^T are dead during the inverses (register pressure)
        hv1 = hv0 + 1
        if GATES:
            # loaded here rather than with the first head's rows: held across the q / k loads and the dots they
            # cost the two-head binary register copies
            gf1, gc1, bf1 = _v3_gate_rows(gam, g_base0 + s_gh, rows64, mrow, s_gt, hv1, HV, TOTAL_T, rg)
            e1 = _exp_tile(tl.where(causal, gc1[:, None] - gc1[None, :], 0.0), FAST_EXP)
        else:
            gf1, gc1, bf1 = _v3_head_rows(gam, g_base0 + s_gh, b_base0 + s_bh, rows64, mrow, s_gt, s_bt, hv1, HV,
                                          TOTAL_T, rg, r64, t0, eos, BETA_SIGMOID, NEG_EIGVAL)
            e1 = _exp_tile(tl.where(causal, gc1[:, None] - gc1[None, :], 0.0), FAST_EXP)
        if not QSIDE:
            _store_tile64(Aqk, hv1, TOTAL_T, rg, r64, mrow, tl.where(causal, qk * e1, 0.0))
        Lm1 = tl.where(rr > cc, bf1[:, None] * e1 * kk, 0.0)
    _store_tile64(A, hv0, TOTAL_T, rg, r64, mrow, _v3_tile_inverse(Lm0, gf0, rr, cc, INV_FP16, GS == 2))
    if GS == 2:
        _store_tile64(A, hv1, TOTAL_T, rg, r64, mrow, _v3_tile_inverse(Lm1, gf1, rr, cc, INV_FP16, GS == 2))
