"""Triton kernels of ``nvidia.decode_splitkv``: split-KV paged decode attention (SM90).

``atrex_sm90_decode_splitkv``: grid ``(B * Hk * m_blocks, splits)``. One program owns one KV head
of one sequence and a block of its query rows (the GQA group times the sequence's query tokens,
packed as row ``r = qi * G + g`` into the M dimension of ``tl.dot``) and one contiguous share of
the visible key tiles. Keys are gathered through the block table (token ``t`` -> physical block
``block_table[b, t // PAGE]``, slot ``t % PAGE``); the online softmax runs in fp32 in the log2
domain (``log2(e)`` folded into the score scale). With ``SPLIT`` it writes the normalised partial
output (fp32) and the partial log2-LSE to the workspace, which ``atrex_sm90_decode_combine``
merges in split order (deterministic, no atomics); without ``SPLIT`` it finishes the rows itself.

Masking: keys outside the sequence's visible range ``[lo, hi)`` (beyond ``seqused_k``, outside
the window of every row of the program) are never loaded (masked loads, ``other=0``), so stale or
non-finite page content cannot reach ``P @ V`` as ``0 * NaN``; per-row masks set the score to
``-inf`` with ``tl.where`` (a NaN score of a masked key is discarded, not multiplied).
"""

import triton
import triton.language as tl

from ..paged_triton import _online_softmax_step, _softcap_log2


@triton.jit
def atrex_sm90_decode_splitkv(
    Q, K, V, BT, SEQK, CUQ, QD, KD, VD, SINK, OUT, LSE, OWS, LWS,
    stride_qt, stride_qh,
    stride_kb, stride_kt, stride_kh,
    stride_vb, stride_vt, stride_vh,
    stride_bt,
    stride_qdb, stride_qdh, stride_kdb, stride_kdh, stride_vdb, stride_vdh,
    stride_ot, stride_oh,
    stride_lh,
    ws_split_rows, total_q, max_blk, key_cap,
    qk_scale, cap_log2, window_left, window_right,
    HK: tl.constexpr, G: tl.constexpr, M_BLOCKS: tl.constexpr, NUM_SPLITS: tl.constexpr,
    D: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
    PAGE: tl.constexpr, SOFTCAP: tl.constexpr, WIN_LEFT: tl.constexpr, WIN_RIGHT: tl.constexpr,
    IS_FP8: tl.constexpr, HAS_QD: tl.constexpr, HAS_KD: tl.constexpr, HAS_VD: tl.constexpr,
    HAS_SINK: tl.constexpr, HAS_LSE: tl.constexpr, SPLIT: tl.constexpr,
):
    """Scores are ``dot * qk_scale`` (``qk_scale`` = softmax_scale * log2(e), or softmax_scale /
    softcap with ``SOFTCAP``, then ``softcap * log2(e) * tanh(.)``), times ``qd * kd`` for fp8.

    Metadata is clamped so that no value leaves the tensors: query rows into ``[0, total_q)`` (an inverted
    ``cu_seqlens_q`` pair gives an empty sequence), ``seqused_k`` into ``[0, key_cap]``, block ids into
    ``[0, max_blk]``. Outputs of bad metadata are garbage but every access stays in bounds."""
    pid = tl.program_id(0)
    split = tl.program_id(1)
    mblk = pid % M_BLOCKS
    bh = pid // M_BLOCKS
    hk = bh % HK
    b = bh // HK

    q0 = tl.minimum(tl.maximum(tl.load(CUQ + b), 0), total_q)
    q_len = tl.minimum(tl.maximum(tl.load(CUQ + b + 1), q0), total_q) - q0
    k_len = tl.minimum(tl.maximum(tl.load(SEQK + b), 0), key_cap)
    delta = k_len - q_len

    offs_m = mblk * BLOCK_M + tl.arange(0, BLOCK_M)
    qi = offs_m // G
    g = offs_m % G
    row_ok = qi < q_len
    offs_d = tl.arange(0, BLOCK_D)
    d_ok = offs_d < D
    head = hk * G + g

    # Keys any row of this program may see: [lo, hi) (bottom-right aligned window, inclusive bounds)
    qi_lo = (mblk * BLOCK_M) // G
    qi_hi = tl.minimum(((mblk + 1) * BLOCK_M - 1) // G, q_len - 1)
    lo = 0
    hi = k_len
    if WIN_LEFT:
        lo = tl.maximum(qi_lo + delta - window_left, 0)
    if WIN_RIGHT:
        hi = tl.minimum(qi_hi + delta + window_right + 1, k_len)
    t_first = lo // BLOCK_N
    n_tiles = tl.maximum(tl.cdiv(hi, BLOCK_N) - t_first, 0)
    n_tiles = tl.where(qi_lo < q_len, n_tiles, 0)
    per_split = tl.cdiv(n_tiles, NUM_SPLITS)
    t_begin = t_first + split * per_split
    t_end = tl.minimum(t_begin + per_split, t_first + n_tiles)

    q_ptrs = Q + (q0 + qi).to(tl.int64)[:, None] * stride_qt + head[:, None] * stride_qh + offs_d[None, :]
    q = tl.load(q_ptrs, mask=row_ok[:, None] & d_ok[None, :], other=0.0)
    scale = qk_scale
    v_scale = 1.0
    if IS_FP8:
        q = q.to(tl.bfloat16)
        if HAS_QD:
            scale = scale * tl.load(QD + b * stride_qdb + hk * stride_qdh)
        if HAS_KD:
            scale = scale * tl.load(KD + b * stride_kdb + hk * stride_kdh)
        if HAS_VD:
            v_scale = tl.load(VD + b * stride_vdb + hk * stride_vdh)

    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, BLOCK_D], tl.float32)
    q_pos = qi + delta  # the key index a row's diagonal sits on
    bt_row = BT + b.to(tl.int64) * stride_bt
    for t in range(t_begin, t_end):
        offs_n = t * BLOCK_N + tl.arange(0, BLOCK_N)
        kv_ok = (offs_n >= lo) & (offs_n < hi)
        if PAGE % BLOCK_N == 0:  # the whole tile lies in one page: one block id
            blk = tl.load(bt_row + (t * BLOCK_N) // PAGE)
        else:  # a block id per key row (never read outside [lo, hi): entries there may be -1 or stale)
            blk = tl.load(bt_row + offs_n // PAGE, mask=kv_ok, other=0)
        blk = tl.minimum(tl.maximum(blk, 0), max_blk).to(tl.int64)
        k_row = blk * stride_kb + (offs_n % PAGE) * stride_kt
        v_row = blk * stride_vb + (offs_n % PAGE) * stride_vt
        kt = tl.load(K + hk * stride_kh + k_row[None, :] + offs_d[:, None],
                     mask=kv_ok[None, :] & d_ok[:, None], other=0.0)
        v = tl.load(V + hk * stride_vh + v_row[:, None] + offs_d[None, :],
                    mask=kv_ok[:, None] & d_ok[None, :], other=0.0)
        if IS_FP8:
            kt = kt.to(tl.bfloat16)
            v = v.to(tl.bfloat16)
        s = tl.dot(q, kt) * scale
        if SOFTCAP:
            s = _softcap_log2(s, cap_log2)
        vis = row_ok[:, None] & kv_ok[None, :]
        if WIN_LEFT:
            vis = vis & (offs_n[None, :] >= (q_pos - window_left)[:, None])
        if WIN_RIGHT:
            vis = vis & (offs_n[None, :] <= (q_pos + window_right)[:, None])
        s = tl.where(vis, s, float("-inf"))
        acc, m_i, l_i = _online_softmax_step(acc, m_i, l_i, s, v)

    has = l_i > 0.0
    if SPLIT:
        o = tl.where(has[:, None], acc * (v_scale / tl.where(has, l_i, 1.0))[:, None], 0.0)
        lse2 = tl.where(has, m_i + tl.log2(tl.where(has, l_i, 1.0)), float("-inf"))
        row_ws = split * ws_split_rows + (q0 + qi).to(tl.int64) * (HK * G) + head
        tl.store(OWS + row_ws[:, None] * D + offs_d[None, :], o, mask=row_ok[:, None] & d_ok[None, :])
        tl.store(LWS + row_ws, lse2, mask=row_ok)
    else:
        m_all = m_i
        denom = l_i
        if HAS_SINK:
            sink = tl.load(SINK + head).to(tl.float32) * 1.4426950408889634
            m_all = tl.maximum(m_i, sink)
            m_all_safe = tl.where(m_all == float("-inf"), 0.0, m_all)
            denom = l_i * tl.exp2(m_i - m_all_safe) + tl.exp2(sink - m_all_safe)
            o = acc * (tl.exp2(m_i - m_all_safe) * v_scale / tl.where(denom > 0.0, denom, 1.0))[:, None]
        else:
            o = acc * (v_scale / tl.where(has, l_i, 1.0))[:, None]
        o_ptrs = OUT + (q0 + qi).to(tl.int64)[:, None] * stride_ot + head[:, None] * stride_oh + offs_d[None, :]
        tl.store(o_ptrs, o.to(OUT.dtype.element_ty), mask=row_ok[:, None] & d_ok[None, :])
        if HAS_LSE:
            lse = tl.where(denom > 0.0, (m_all + tl.log2(tl.where(denom > 0.0, denom, 1.0))) * 0.6931471805599453,
                           float("-inf"))
            tl.store(LSE + head * stride_lh + q0 + qi, lse, mask=row_ok)


@triton.jit
def atrex_sm90_decode_combine(
    OWS, LWS, SINK, CUQ, OUT, LSE,
    ws_split_rows, stride_ot, stride_oh, stride_lh, B,
    HQ: tl.constexpr,
    NUM_SPLITS: tl.constexpr, BLOCK_S: tl.constexpr, D: tl.constexpr, BLOCK_D: tl.constexpr,
    HAS_SINK: tl.constexpr, HAS_LSE: tl.constexpr,
):
    """Merge the splits of one (query row, head) in split order: ``o = sum_s w_s o_s / denom`` with
    ``w_s = 2^(lse_s - m)`` and the sink adding ``e^sink`` to ``denom`` only. Rows past ``cu_q[B]``
    belong to no sequence and are not touched (their workspace was never written)."""
    t = tl.program_id(0)
    h = tl.program_id(1)
    if t < tl.load(CUQ + B):
        offs_s = tl.arange(0, BLOCK_S)
        s_ok = offs_s < NUM_SPLITS
        offs_d = tl.arange(0, BLOCK_D)
        d_ok = offs_d < D
        row = offs_s.to(tl.int64) * ws_split_rows + t * HQ + h
        lse_s = tl.load(LWS + row, mask=s_ok, other=float("-inf"))
        m = tl.max(lse_s, 0)
        if HAS_SINK:
            sink = tl.load(SINK + h).to(tl.float32) * 1.4426950408889634
            m = tl.maximum(m, sink)
        m_safe = tl.where(m == float("-inf"), 0.0, m)
        w = tl.exp2(lse_s - m_safe)
        denom = tl.sum(w, 0)
        if HAS_SINK:
            denom += tl.exp2(sink - m_safe)
        o_s = tl.load(OWS + row[:, None] * D + offs_d[None, :], mask=s_ok[:, None] & d_ok[None, :] & (w > 0.0)[:, None],
                      other=0.0)
        o = tl.sum(o_s * w[:, None], 0) / tl.where(denom > 0.0, denom, 1.0)
        tl.store(OUT + t.to(tl.int64) * stride_ot + h * stride_oh + offs_d, o.to(OUT.dtype.element_ty), mask=d_ok)
        if HAS_LSE:
            lse = tl.where(denom > 0.0, (m_safe + tl.log2(tl.where(denom > 0.0, denom, 1.0))) * 0.6931471805599453,
                           float("-inf"))
            tl.store(LSE + h * stride_lh + t, lse)
