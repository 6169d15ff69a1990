"""State/output kernels of the SM90 chunked Gated-DeltaNet forward (chunk size 64).

One program per (V-block, sequence x value head) walks the sequence's chunks in order, carries the state
``S [K, BV]`` in fp32 registers and produces each chunk's output in the same step (the per-chunk state is never
written to HBM):

    X = beta V - beta e^gamma (K S),  U = A X,  O = scale (e^gamma (Q S) + Aqk U),
    S <- e^(gamma_last) S + K^T (e^(gamma_last - gamma) U)

with A, Aqk and gamma from the intra-chunk kernels (``triton_intra``). Diagonal scalings are applied to the
``[64, BV]`` products rather than to the ``[64, K]`` operands. Dot operands are rounded to the input dtype with
fp32 accumulation.

* ``atrex_sm90_gdn_state_output``: the generic kernel, paired with ``atrex_sm90_gdn_intra_chunk``.
* ``atrex_sm90_gdn_state_output_v2``: the per-row factors come precomputed from the factor planes of ``fac``;
  the small per-chunk operands are prefetched one chunk ahead.
* ``atrex_sm90_gdn_state_output_tma``: v2's math with the k, q, v, A and Aqk tiles fetched by TMA through
  descriptors built in the kernel.
"""

import triton
import triton.language as tl

from .triton_common import _load_beta, _load_qk_tile


@triton.jit
def _seq_span(n, cu, T, IS_VARLEN: tl.constexpr):
    """(bos, eos, b_idx, tg0) of sequence ``n``: its token range within batch row ``b_idx`` and its first
    row in the token-indexed ``[*, B*T, *]`` workspaces."""
    if IS_VARLEN:
        bos = tl.load(cu + n).to(tl.int32)
        eos = tl.load(cu + n + 1).to(tl.int32)
        b_idx = n * 0
        tg0 = bos
    else:
        bos = 0
        eos = T
        b_idx = n
        tg0 = n * T
    return bos, eos, b_idx, tg0


@triton.jit
def _initial_state(h0, n64, hv, s_h0n, s_h0h, s_h0k, s_h0v, offs_k, offs_v, mk, mv, USE_H0: tl.constexpr,
                   BK: tl.constexpr, BV: tl.constexpr):
    """The fp32 state block ``[BK, BV]`` of (sequence, value head): loaded from ``h0`` (any float dtype,
    either layout through its strides) or zero."""
    if USE_H0:
        p_h0 = h0 + n64 * s_h0n + hv * s_h0h + offs_k[:, None] * s_h0k + offs_v[None, :] * s_h0v
        S = tl.load(p_h0, mask=mk[:, None] & mv[None, :], other=0.0).to(tl.float32)
    else:
        S = tl.zeros([BK, BV], dtype=tl.float32)
    return S


@triton.jit
def _state_program(i_v, i_nh, h0, cu, T, HV, K, V, s_h0n, s_h0h, s_h0k, s_h0v, IS_VARLEN: tl.constexpr,
                   G: tl.constexpr, BK: tl.constexpr, BV: tl.constexpr, USE_H0: tl.constexpr):
    """Program (V-block ``i_v``, sequence x value head ``i_nh``) of the state/output kernels:
    (hv, h, bos, eos, b_idx, tg0, L, NT, offs_k, offs_v, mk, mv, r64, n64, S) with the sequence span, its chunk
    count, the K / V offsets and masks of the block and its initial fp32 state."""
    n = i_nh // HV
    hv = i_nh % HV
    h = hv // G
    bos, eos, b_idx, tg0 = _seq_span(n, cu, T, IS_VARLEN)
    L = eos - bos
    NT = tl.cdiv(L, 64)
    offs_k = tl.arange(0, BK)
    offs_v = i_v * BV + tl.arange(0, BV)
    mk = offs_k < K
    mv = offs_v < V
    r64 = tl.arange(0, 64)
    n64 = n.to(tl.int64)
    S = _initial_state(h0, n64, hv, s_h0n, s_h0h, s_h0k, s_h0v, offs_k, offs_v, mk, mv, USE_H0, BK, BV)
    return hv, h, bos, eos, b_idx, tg0, L, NT, offs_k, offs_v, mk, mv, r64, n64, S


@triton.jit
def _store_state(ht, S, n64, hv, HV, K, V, offs_k, offs_v, mk, mv, STATE_V_FIRST: tl.constexpr):
    """Final fp32 state block into ``ht`` ``[N, HV, K, V]`` (``[N, HV, V, K]`` if ``STATE_V_FIRST``)."""
    if STATE_V_FIRST:
        p_ht = ht + n64 * HV * K * V + hv * K * V + offs_v[None, :] * K + offs_k[:, None]
    else:
        p_ht = ht + n64 * HV * K * V + hv * K * V + offs_k[:, None] * V + offs_v[None, :]
    tl.store(p_ht, S, mask=mk[:, None] & mv[None, :])


@triton.jit
def atrex_sm90_gdn_state_output(
    q, k, v, beta, gam, A, Aqk, W, U, h0, o, ht, cu, scale,
    T, HV, K, V,
    s_qb, s_qt, s_qh, s_kb, s_kt, s_kh, s_vb, s_vt, s_vh, s_bb, s_bt, s_bh, s_ob, s_ot, s_oh,
    s_h0n, s_h0h, s_h0k, s_h0v,
    TOTAL_T,
    IS_VARLEN: tl.constexpr, G: tl.constexpr, BK: tl.constexpr, BV: tl.constexpr,
    USE_H0: tl.constexpr, STORE_HT: tl.constexpr, STATE_V_FIRST: tl.constexpr,
    USE_L2NORM: tl.constexpr, BETA_SIGMOID: tl.constexpr, NEG_EIGVAL: tl.constexpr,
    FAST: tl.constexpr, DOT_PRECISION: tl.constexpr = "tf32",
):
    """Generic state/output kernel (the module's recurrence), reading gamma from ``gam`` and beta itself.

    ``FAST`` (q, k already normalised by the intra kernel): diagonal scalings on the ``[64, BV]`` products.
    Otherwise the operand-scaled form: q, k (L2-normalised here with ``USE_L2NORM``) are scaled by their row
    factors and rounded before the dots. ``W`` and ``U`` are not read. ``DOT_PRECISION``: the dots' input
    precision (fp32 inputs take ``tf32x3``; 16-bit dots ignore it)."""
    hv, h, bos, eos, b_idx, tg0, L, NT, offs_k, offs_v, mk, mv, r64, n64, S = _state_program(
        tl.program_id(0), tl.program_id(1), h0, cu, T, HV, K, V, s_h0n, s_h0h, s_h0k, s_h0v, IS_VARLEN, G, BK, BV,
        USE_H0)

    q_base = q + b_idx.to(tl.int64) * s_qb + h * s_qh
    k_base = k + b_idx.to(tl.int64) * s_kb + h * s_kh
    v_base = v + b_idx.to(tl.int64) * s_vb + hv * s_vh
    b_base = beta + b_idx.to(tl.int64) * s_bb + hv * s_bh
    o_base = o + b_idx.to(tl.int64) * s_ob + hv * s_oh
    a_base = A + hv.to(tl.int64) * TOTAL_T * 64
    aq_base = Aqk + hv.to(tl.int64) * TOTAL_T * 64
    gm_base = gam + hv.to(tl.int64) * TOTAL_T
    dt = q.dtype.element_ty

    for c in range(NT):
        t0 = bos + c * 64
        rows = t0 + r64
        mrow = rows < eos
        rows64 = rows.to(tl.int64)
        rg = (tg0 + (rows - bos)).to(tl.int64)
        if FAST:
            kt = _load_qk_tile(k_base, rows64, mrow, offs_k, mk, s_kt, USE_L2NORM)
            qt = _load_qk_tile(q_base, rows64, mrow, offs_k, mk, s_qt, USE_L2NORM)
            gm = tl.load(gm_base + rg, mask=mrow, other=0.0)
            nvalid = tl.minimum(eos - t0, 64)
            gl = tl.sum(tl.where(r64 == nvalid - 1, gm, 0.0), 0)
            aq_t = tl.load(aq_base + rg[:, None] * 64 + r64[None, :], mask=mrow[:, None], other=0.0)
            eg = tl.exp(gm)
            Sb = S.to(dt)
            vt = tl.load(v_base + rows64[:, None] * s_vt + offs_v[None, :],
                         mask=mrow[:, None] & mv[None, :], other=0.0).to(tl.float32)
            bt = _load_beta(b_base, rows64, mrow, s_bt, BETA_SIGMOID, NEG_EIGVAL)
            a_t = tl.load(a_base + rg[:, None] * 64 + r64[None, :], mask=mrow[:, None], other=0.0)
            # diagonal scalings applied to [64, BV] results rather than to [64, K] operands
            X = bt[:, None] * vt - (bt * eg)[:, None] * tl.dot(kt, Sb, input_precision=DOT_PRECISION)
            Ut = tl.dot(a_t, X.to(dt), input_precision=DOT_PRECISION)
            O = (eg[:, None] * tl.dot(qt, Sb, input_precision=DOT_PRECISION)
                 + tl.dot(aq_t, Ut.to(dt), input_precision=DOT_PRECISION))
            tl.store(o_base + rows64[:, None] * s_ot + offs_v[None, :], (O * scale).to(o.dtype.element_ty),
                     mask=mrow[:, None] & mv[None, :])
            dk = tl.where(mrow, tl.exp(gl - gm), 0.0)
            S = S * tl.exp(gl) + tl.dot(tl.trans(kt), (Ut * dk[:, None]).to(dt), input_precision=DOT_PRECISION)
        else:
            kn = _load_qk_tile(k_base, rows64, mrow, offs_k, mk, s_kt, USE_L2NORM)
            qn = _load_qk_tile(q_base, rows64, mrow, offs_k, mk, s_qt, USE_L2NORM)
            vt = tl.load(v_base + rows64[:, None] * s_vt + offs_v[None, :],
                         mask=mrow[:, None] & mv[None, :], other=0.0).to(tl.float32)
            bt = _load_beta(b_base, rows64, mrow, s_bt, BETA_SIGMOID, NEG_EIGVAL)
            gm = tl.load(gm_base + rg, mask=mrow, other=0.0)
            nvalid = tl.minimum(eos - t0, 64)
            gl = tl.sum(tl.where(r64 == nvalid - 1, gm, 0.0), 0)
            a_t = tl.load(a_base + rg[:, None] * 64 + r64[None, :], mask=mrow[:, None], other=0.0)
            aq_t = tl.load(aq_base + rg[:, None] * 64 + r64[None, :], mask=mrow[:, None], other=0.0)
            eg = tl.exp(gm)
            Sb = S.to(dt)
            kb = (kn.to(tl.float32) * (bt * eg)[:, None]).to(dt)
            X = bt[:, None] * vt - tl.dot(kb, Sb, input_precision=DOT_PRECISION)
            Ut = tl.dot(a_t, X.to(dt), input_precision=DOT_PRECISION).to(dt)
            qg = (qn.to(tl.float32) * eg[:, None]).to(dt)
            O = tl.dot(qg, Sb, input_precision=DOT_PRECISION) + tl.dot(aq_t, Ut, input_precision=DOT_PRECISION)
            tl.store(o_base + rows64[:, None] * s_ot + offs_v[None, :], (O * scale).to(o.dtype.element_ty),
                     mask=mrow[:, None] & mv[None, :])
            dk = tl.where(mrow, tl.exp(gl - gm), 0.0)
            kd = (kn.to(tl.float32) * dk[:, None]).to(dt)
            S = S * tl.exp(gl) + tl.dot(tl.trans(kd), Ut, input_precision=DOT_PRECISION)

    if STORE_HT:
        _store_state(ht, S, n64, hv, HV, K, V, offs_k, offs_v, mk, mv, STATE_V_FIRST)


@triton.jit
def _split_bf(x, dt: tl.constexpr):
    """``x`` (fp32) as a pair of ``dt`` values, high and low, with ``hi + lo`` equal to ``x`` to about 16 bits."""
    hi = x.to(dt)
    return hi, (x - hi.to(tl.float32)).to(dt)


@triton.jit
def _step_products(kt, qt, vt, a_t, aq_t, S, bt, be, eg, dk, egl, dt: tl.constexpr, SPLIT_XU: tl.constexpr):
    """One chunk step of the state kernels v2 / tma: ``(O / scale, S_next)``. X = beta V - beta e^gamma (K S) feeds
    U = A X, and U feeds both ``Aqk U`` and the state update. Those two operands are rounded to ``dt`` before their
    dots; with ``SPLIT_XU`` each is a high + low pair and its dot runs twice, so that only S, A, Aqk, k, q and v
    enter the products rounded (the launcher takes it for small K, where the rounding of X and U dominates the
    error)."""
    Sb = S.to(dt)
    X = bt[:, None] * vt - be[:, None] * tl.dot(kt, Sb)
    if SPLIT_XU:
        xh, xl = _split_bf(X, dt)
        Ut = tl.dot(a_t, xl, tl.dot(a_t, xh))
        uh, ul = _split_bf(Ut, dt)
        O = eg[:, None] * tl.dot(qt, Sb) + tl.dot(aq_t, ul, tl.dot(aq_t, uh))
        dh, dl = _split_bf(Ut * dk[:, None], dt)
        S = tl.dot(tl.trans(kt), dl, tl.dot(tl.trans(kt), dh, S * egl))
    else:
        Ut = tl.dot(a_t, X.to(dt))
        O = eg[:, None] * tl.dot(qt, Sb) + tl.dot(aq_t, Ut.to(dt))
        S = tl.dot(tl.trans(kt), (Ut * dk[:, None]).to(dt), S * egl)
    return O, S


@triton.jit
def atrex_sm90_gdn_state_output_v2(
    q, k, v, fac, A, Aqk, h0, o, ht, cu, scale,
    T, HV, K, V,
    s_qb, s_qt, s_qh, s_kb, s_kt, s_kh, s_vb, s_vt, s_vh, s_ob, s_ot, s_oh,
    s_h0n, s_h0h, s_h0k, s_h0v,
    TOTAL_T,
    IS_VARLEN: tl.constexpr, G: tl.constexpr, BK: tl.constexpr, BV: tl.constexpr,
    USE_H0: tl.constexpr, STORE_HT: tl.constexpr, STATE_V_FIRST: tl.constexpr, SPLIT_XU: tl.constexpr = False,
):
    """State/output kernel v2 (same grid as the generic one): the per-row factors beta, beta e^gamma, e^gamma and
    e^(gamma_last - gamma) come precomputed from planes 1-4 of ``fac [5, HV, TOTAL_T]`` (no strided beta load, exp
    or cross-thread reduction in the loop), and q / k are the intra kernel's normalised copies. The small per-chunk
    operands (v block, factors, e^gamma_last) are loaded one chunk ahead into registers; Triton's pipeliner
    handles the q / k / A / Aqk tiles. The state update accumulates into the dot."""
    hv, h, bos, eos, b_idx, tg0, L, NT, offs_k, offs_v, mk, mv, r64, n64, S = _state_program(
        tl.program_id(0), tl.program_id(1), h0, cu, T, HV, K, V, s_h0n, s_h0h, s_h0k, s_h0v, IS_VARLEN, G, BK, BV,
        USE_H0)

    bi64 = b_idx.to(tl.int64)
    q_base = q + bi64 * s_qb + h * s_qh
    k_base = k + bi64 * s_kb + h * s_kh
    v_base = v + bi64 * s_vb + hv * s_vh
    o_base = o + bi64 * s_ob + hv * s_oh
    a_base = A + hv.to(tl.int64) * TOTAL_T * 64
    aq_base = Aqk + hv.to(tl.int64) * TOTAL_T * 64
    plane = (hv * 0 + HV).to(tl.int64) * TOTAL_T  # HV == 1 is specialised to a constexpr int
    f_base = fac + hv.to(tl.int64) * TOTAL_T + tg0.to(tl.int64)  # token-local index below
    dt = q.dtype.element_ty

    mrow_n = r64 < L
    vt_n = tl.load(v_base + (bos + r64).to(tl.int64)[:, None] * s_vt + offs_v[None, :],
                   mask=mrow_n[:, None] & mv[None, :], other=0.0)
    bt_n = tl.load(f_base + plane + r64, mask=mrow_n, other=0.0)
    be_n = tl.load(f_base + 2 * plane + r64, mask=mrow_n, other=0.0)
    eg_n = tl.load(f_base + 3 * plane + r64, mask=mrow_n, other=0.0)
    dk_n = tl.load(f_base + 4 * plane + r64, mask=mrow_n, other=0.0)
    egl_n = tl.load(f_base + 3 * plane + tl.minimum(L, 64) - 1, mask=L > 0, other=1.0)
    for c in range(NT):
        l0 = c * 64
        rl = l0 + r64
        mrow = rl < L
        rows64 = (bos + rl).to(tl.int64)
        rg = (tg0 + rl).to(tl.int64)
        vt = vt_n.to(tl.float32)
        bt = bt_n
        be = be_n
        eg = eg_n
        dk = dk_n
        egl = egl_n
        rl_n = rl + 64
        mrow_n = rl_n < L
        vt_n = tl.load(v_base + (bos + rl_n).to(tl.int64)[:, None] * s_vt + offs_v[None, :],
                       mask=mrow_n[:, None] & mv[None, :], other=0.0)
        bt_n = tl.load(f_base + plane + rl_n, mask=mrow_n, other=0.0)
        be_n = tl.load(f_base + 2 * plane + rl_n, mask=mrow_n, other=0.0)
        eg_n = tl.load(f_base + 3 * plane + rl_n, mask=mrow_n, other=0.0)
        dk_n = tl.load(f_base + 4 * plane + rl_n, mask=mrow_n, other=0.0)
        egl_n = tl.load(f_base + 3 * plane + tl.minimum(L, l0 + 128) - 1, mask=l0 + 64 < L, other=1.0)
        kt = tl.load(k_base + rows64[:, None] * s_kt + offs_k[None, :], mask=mrow[:, None] & mk[None, :], other=0.0)
        qt = tl.load(q_base + rows64[:, None] * s_qt + offs_k[None, :], mask=mrow[:, None] & mk[None, :], other=0.0)
        a_t = tl.load(a_base + rg[:, None] * 64 + r64[None, :], mask=mrow[:, None], other=0.0)
        aq_t = tl.load(aq_base + rg[:, None] * 64 + r64[None, :], mask=mrow[:, None], other=0.0)
        O, S = _step_products(kt, qt, vt, a_t, aq_t, S, bt, be, eg, dk, egl, dt, SPLIT_XU)
        tl.store(o_base + rows64[:, None] * s_ot + offs_v[None, :], (O * scale).to(o.dtype.element_ty),
                 mask=mrow[:, None] & mv[None, :])

    if STORE_HT:
        _store_state(ht, S, n64, hv, HV, K, V, offs_k, offs_v, mk, mv, STATE_V_FIRST)


@triton.jit
def atrex_sm90_gdn_state_output_tma(
    qd, kd, vd, ad, aqd, fac, h0, o, ht, cu, scale,
    T, HV, K, V,
    s_ob, s_ot, s_oh,
    s_h0n, s_h0h, s_h0k, s_h0v,
    TOTAL_T, ROWS, QW, VW, s_qr, s_kr, s_vr, N_NH,
    IS_VARLEN: tl.constexpr, G: tl.constexpr, BK: tl.constexpr, BV: tl.constexpr,
    USE_H0: tl.constexpr, STORE_HT: tl.constexpr, STATE_V_FIRST: tl.constexpr, SPLIT_XU: tl.constexpr = False,
):
    """State/output kernel v2's math with the k, q, A and Aqk tiles of each chunk step and the v block fetched by
    TMA, through descriptors built in the kernel over the plain pointers ``qd``/``kd`` (q/k viewed as
    ``[ROWS = B*T, QW = H*K]``, row strides ``s_qr``/``s_kr``, block ``[64, K]``, ``K == BK``), ``vd`` (v as
    ``[B*T, VW = HV*V]``, row stride ``s_vr``, block ``[64, BV]``) and ``ad``/``aqd`` (the ``[HV*B*T, 64]``
    workspaces). No per-element address arithmetic or masks for these loads. Rows of a chunk past the sequence's
    end are read from the next sequence (finite; zero past the tensor's end) and cancel exactly as in v2: their
    factors beta, beta e^gamma and e^(gamma_last - gamma) load as 0 and their outputs are not stored. The output
    store and the factor rows use pointers advanced by one chunk per step. ``N_NH`` is not read."""
    qd = tl.make_tensor_descriptor(qd, [ROWS, QW], [s_qr, 1], [64, BK])
    kd = tl.make_tensor_descriptor(kd, [ROWS, QW], [s_kr, 1], [64, BK])
    vd = tl.make_tensor_descriptor(vd, [ROWS, VW], [s_vr, 1], [64, BV])
    ad = tl.make_tensor_descriptor(ad, [HV * TOTAL_T, 64], [64, 1], [64, 64])
    aqd = tl.make_tensor_descriptor(aqd, [HV * TOTAL_T, 64], [64, 1], [64, 64])
    i_v = tl.program_id(0)
    hv, h, bos, eos, b_idx, tg0, L, NT, offs_k, offs_v, mk, mv, r64, n64, S = _state_program(
        i_v, tl.program_id(1), h0, cu, T, HV, K, V, s_h0n, s_h0h, s_h0k, s_h0v, IS_VARLEN, G, BK, BV, USE_H0)

    row = b_idx * T + bos          # first row of the sequence in the [B*T, *] views
    arow = hv * TOTAL_T + tg0      # ... and in the [HV*B*T, 64] workspaces
    qcol = h * K
    vcol = hv * V + i_v * BV
    plane = (hv * 0 + HV).to(tl.int64) * TOTAL_T  # HV == 1 is specialised to a constexpr int
    f0 = fac + hv.to(tl.int64) * TOTAL_T + tg0.to(tl.int64) + 3 * plane - 1  # e^gamma of token 0, minus one row
    p_f = fac + hv.to(tl.int64) * TOTAL_T + tg0.to(tl.int64) + r64
    p_o = (o + b_idx.to(tl.int64) * s_ob + hv * s_oh + (bos + r64).to(tl.int64)[:, None] * s_ot
           + offs_v[None, :])
    dt = o.dtype.element_ty

    mrow_n = r64 < L
    bt_n = tl.load(p_f + plane, mask=mrow_n, other=0.0)
    be_n = tl.load(p_f + 2 * plane, mask=mrow_n, other=0.0)
    eg_n = tl.load(p_f + 3 * plane, mask=mrow_n, other=0.0)
    dk_n = tl.load(p_f + 4 * plane, mask=mrow_n, other=0.0)
    egl_n = tl.load(f0 + tl.minimum(L, 64), mask=L > 0, other=1.0)
    for c in range(NT):
        l0 = c * 64
        mrow = mrow_n
        bt = bt_n
        be = be_n
        eg = eg_n
        dk = dk_n
        egl = egl_n
        p_f += 64
        mrow_n = r64 < L - l0 - 64
        bt_n = tl.load(p_f + plane, mask=mrow_n, other=0.0)
        be_n = tl.load(p_f + 2 * plane, mask=mrow_n, other=0.0)
        eg_n = tl.load(p_f + 3 * plane, mask=mrow_n, other=0.0)
        dk_n = tl.load(p_f + 4 * plane, mask=mrow_n, other=0.0)
        egl_n = tl.load(f0 + tl.minimum(L, l0 + 128), mask=l0 + 64 < L, other=1.0)
        kt = kd.load([row + l0, qcol])
        qt = qd.load([row + l0, qcol])
        vt = vd.load([row + l0, vcol]).to(tl.float32)
        a_t = ad.load([arow + l0, 0])
        aq_t = aqd.load([arow + l0, 0])
        O, S = _step_products(kt, qt, vt, a_t, aq_t, S, bt, be, eg, dk, egl, dt, SPLIT_XU)
        tl.store(p_o, (O * scale).to(dt), mask=mrow[:, None] & mv[None, :])
        p_o += 64 * s_ot

    if STORE_HT:
        _store_state(ht, S, n64, hv, HV, K, V, offs_k, offs_v, mk, mv, STATE_V_FIRST)


# Twins of the state kernels compiled without Triton's specialisation of T and TOTAL_T, which the launcher takes
# for calls with T == 1. Specialised, T (and for B == 1 TOTAL_T) become the constant 1, the chunk loop gets a
# constant trip count and is unrolled, and ptxas 12.8 (bundled with Triton 3.6) miscompiles that unrolled v2
# kernel: its SASS reads a uniform register that no instruction writes as part of a wgmma's shared-memory
# descriptor, an intermittent illegal address on the GPU (ptxas 12.9 assembles the same PTX correctly). The twins
# share the kernel names.
NO_T1_SPECIALISATION = {
    kern: triton.jit(do_not_specialize=["T", "TOTAL_T"])(kern.fn)
    for kern in (atrex_sm90_gdn_state_output, atrex_sm90_gdn_state_output_v2, atrex_sm90_gdn_state_output_tma)
}
