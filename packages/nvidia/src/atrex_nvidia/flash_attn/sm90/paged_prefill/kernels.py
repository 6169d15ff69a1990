"""Triton kernel of ``nvidia.paged_prefill_sm90``: paged varlen attention for any query length (SM90).

``atrex_sm90_paged_prefill``: grid ``(total_q // BLOCK_Q + B, Hk * G_CHUNKS)``. Axis 0 is a flat list of
(sequence, query tile) work items: sequence ``b`` owns the items ``[start(b), start(b + 1))`` with
``start(b) = cu_q[b] // BLOCK_Q + b``, which holds at least ``ceil(q_len / BLOCK_Q)`` items, so the grid
needs no host sync; a program finds its sequence by binary search over ``cu_q`` and exits early when its
tile lies past the sequence's queries. Axis 1 is the KV head and a chunk of ``GS`` heads of its GQA group.

The M tile packs ``BLOCK_Q`` query tokens times ``GS`` query heads (row ``r = qi * GS + g``), so one
program reads each key tile once for every head that shares it and short (decode-like) sequences still
fill the tile. Keys are gathered per row through the block table (token ``t`` -> block
``block_table[b, t // PAGE]``, slot ``t % PAGE``), so any page size works. Online softmax in fp32 in the
log2 domain (``log2(e)`` folded into the score scale). The key tiles a program visits are split into
masked edges and a fully visible middle that skips the per-row mask (causal / window tile skipping).

Masking: keys outside ``[lo, hi)`` (beyond ``seqused_k``, outside every row's window) are never loaded
(masked loads, ``other=0``), so NaN / Inf in page tails cannot reach ``P @ V``; invisible scores become
``-inf`` through ``tl.where``. Metadata is clamped (block ids into ``[0, num_blocks)``, ``seqused_k`` into
the table's reach, ``cu_seqlens_q`` into ``[0, total_q]``): bad values give wrong rows, never a fault.
"""

import triton
import triton.language as tl

from ..paged_triton import _online_softmax_step, _softcap_log2

LOG2E = tl.constexpr(1.4426950408889634)
LN2 = tl.constexpr(0.6931471805599453)


@triton.jit
def _seq_of_item(CUQ, pid, batch, total_q, BLOCK_Q: tl.constexpr):
    """The sequence whose work items hold ``pid``: the largest ``b`` with ``start(b) <= pid``."""
    lo = pid * 0
    hi = lo + batch
    while hi - lo > 1:
        mid = (lo + hi) // 2
        start = tl.minimum(tl.maximum(tl.load(CUQ + mid), 0), total_q) // BLOCK_Q + mid
        take = start <= pid
        lo = tl.where(take, mid, lo)
        hi = tl.where(take, hi, mid)
    return lo


@triton.jit
def _key_tile(acc, m_i, l_i, q, K, V, bt_row, t, lo, hi, q_pos, num_blocks, k_head, v_head,
              stride_kb, stride_kt, stride_vb, stride_vt, scale, cap_log2, window_left, window_right,
              offs_d, d_ok,
              BLOCK_N: tl.constexpr, PAGE: tl.constexpr, EVEN_D: tl.constexpr, SOFTCAP: tl.constexpr,
              WIN_LEFT: tl.constexpr, WIN_RIGHT: tl.constexpr, IS_FP8: tl.constexpr, MASKED: tl.constexpr):
    """One key tile ``t`` of the online softmax. ``MASKED``: keys outside ``[lo, hi)`` are not loaded and
    each row's window applies; otherwise every key of the tile is visible to every row of the program."""
    offs_n = t * BLOCK_N + tl.arange(0, BLOCK_N)
    kv_ok = (offs_n >= lo) & (offs_n < hi)
    if PAGE % BLOCK_N == 0:  # the tile lies in one page (t * BLOCK_N < hi <= the table's reach)
        blk = tl.load(bt_row + (t * BLOCK_N) // PAGE)
    elif MASKED:  # a block id per key (entries past seqused_k may be -1 or stale: never read)
        blk = tl.load(bt_row + offs_n // PAGE, mask=kv_ok, other=0)
    else:
        blk = tl.load(bt_row + offs_n // PAGE)
    blk = tl.minimum(tl.maximum(blk, 0), num_blocks - 1).to(tl.int64)
    slot = offs_n % PAGE
    k_ptrs = K + k_head + (blk * stride_kb + slot * stride_kt)[:, None] + offs_d[None, :]
    v_ptrs = V + v_head + (blk * stride_vb + slot * stride_vt)[:, None] + offs_d[None, :]
    if MASKED:
        k = tl.load(k_ptrs, mask=kv_ok[:, None] & d_ok[None, :], other=0.0)
        v = tl.load(v_ptrs, mask=kv_ok[:, None] & d_ok[None, :], other=0.0)
    elif EVEN_D:
        k = tl.load(k_ptrs)
        v = tl.load(v_ptrs)
    else:
        k = tl.load(k_ptrs, mask=d_ok[None, :], other=0.0)
        v = tl.load(v_ptrs, mask=d_ok[None, :], other=0.0)
    if IS_FP8:  # Q K^T on fp8 tensor cores (exact products, fp32 sums); V upcast exactly so that P @ V runs in
        v = v.to(tl.bfloat16)  # bf16 (an fp8 P would cost ~3% per row, past the contract's bound)
    s = tl.dot(q, tl.trans(k)) * scale
    if SOFTCAP:  # log2(e) is in cap_log2
        s = _softcap_log2(s, cap_log2)
    if MASKED:
        vis = kv_ok[None, :]
        if WIN_LEFT:
            vis = vis & (offs_n[None, :] >= (q_pos - window_left)[:, None])
        if WIN_RIGHT:
            vis = vis & (offs_n[None, :] <= (q_pos + window_right)[:, None])
        s = tl.where(vis, s, float("-inf"))
    return _online_softmax_step(acc, m_i, l_i, s, v)


@triton.jit
def atrex_sm90_paged_prefill(
    Q, K, V, BT, SEQK, CUQ, QD, KD, VD, SINK, OUT, LSE,
    stride_qt, stride_qh,
    stride_kb, stride_kt, stride_kh,
    stride_vb, stride_vt, stride_vh,
    stride_bt, kv_cap, num_blocks,
    stride_qdb, stride_qdh, stride_kdb, stride_kdh, stride_vdb, stride_vdh,
    stride_ot, stride_oh, stride_lh,
    total_q, batch,
    qk_scale, cap_log2, window_left, window_right,
    G: tl.constexpr, GS: tl.constexpr, G_CHUNKS: tl.constexpr, BLOCK_Q: tl.constexpr,
    D: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
    PAGE: tl.constexpr, SOFTCAP: tl.constexpr, WIN_LEFT: tl.constexpr, WIN_RIGHT: tl.constexpr,
    IS_FP8: tl.constexpr, HAS_QD: tl.constexpr, HAS_KD: tl.constexpr, HAS_VD: tl.constexpr,
    HAS_SINK: tl.constexpr, HAS_LSE: tl.constexpr,
):
    """Scores are ``dot * qk_scale`` (``qk_scale`` = softmax_scale * log2(e), or softmax_scale / softcap
    with ``SOFTCAP``, then ``softcap * log2(e) * tanh(.)``), times ``qd * kd`` for fp8. ``kv_cap`` is the
    block table's reach in tokens (width * PAGE, capped to int32)."""
    pid = tl.program_id(0)
    hk = tl.program_id(1) // G_CHUNKS
    chunk = tl.program_id(1) % G_CHUNKS

    b = _seq_of_item(CUQ, pid, batch, total_q, BLOCK_Q)
    q0 = tl.minimum(tl.maximum(tl.load(CUQ + b), 0), total_q)
    q_len = tl.minimum(tl.maximum(tl.load(CUQ + b + 1), q0), total_q) - q0
    tile_q0 = (pid - (q0 // BLOCK_Q + b)) * BLOCK_Q
    if tile_q0 >= q_len:
        return
    k_len = tl.minimum(tl.maximum(tl.load(SEQK + b), 0), kv_cap)
    delta = k_len - q_len  # bottom-right alignment: row qi's diagonal is key qi + delta

    offs_m = tl.arange(0, BLOCK_M)
    qi = tile_q0 + offs_m // GS
    g = chunk * GS + offs_m % GS
    row_ok = (offs_m < BLOCK_Q * GS) & (qi < q_len) & (g < G)
    head = hk * G + tl.minimum(g, G - 1)
    offs_d = tl.arange(0, BLOCK_D)
    d_ok = offs_d < D

    # key range any row of the tile may see, [lo, hi), and its fully visible middle [f_lo, f_hi) in tiles
    q_first = tile_q0
    q_last = tl.minimum(tile_q0 + BLOCK_Q, q_len) - 1
    lo = 0
    hi = k_len
    if WIN_LEFT:
        lo = tl.maximum(q_first + delta - window_left, 0)
    if WIN_RIGHT:
        hi = tl.minimum(q_last + delta + window_right + 1, k_len)
    t_lo = lo // BLOCK_N
    t_hi = tl.where(hi > lo, tl.cdiv(tl.maximum(hi, 0), BLOCK_N), t_lo)
    f_lo = t_lo
    if WIN_LEFT:
        f_lo = tl.maximum(tl.cdiv(tl.maximum(q_last + delta - window_left, 0), BLOCK_N), t_lo)
    f_lo = tl.minimum(f_lo, t_hi)
    f_hi = k_len // BLOCK_N
    if WIN_RIGHT:
        f_hi = tl.minimum(tl.maximum(q_first + delta + window_right + 1, 0) // BLOCK_N, f_hi)
    f_hi = tl.minimum(tl.maximum(f_hi, f_lo), t_hi)

    q_ptrs = Q + (q0 + qi).to(tl.int64)[:, None] * stride_qt + head[:, None] * stride_qh + offs_d[None, :]
    q = tl.load(q_ptrs, mask=row_ok[:, None] & d_ok[None, :], other=0.0)
    scale = qk_scale
    v_scale = 1.0
    if IS_FP8:
        if HAS_QD:
            scale = scale * tl.load(QD + b * stride_qdb + hk * stride_qdh)
        if HAS_KD:
            scale = scale * tl.load(KD + b * stride_kdb + hk * stride_kdh)
        if HAS_VD:
            v_scale = tl.load(VD + b * stride_vdb + hk * stride_vdh)

    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, BLOCK_D], tl.float32)
    q_pos = qi + delta
    bt_row = BT + b.to(tl.int64) * stride_bt
    k_head = hk.to(tl.int64) * stride_kh
    v_head = hk.to(tl.int64) * stride_vh
    for t in range(t_lo, f_lo):  # left edge (window start)
        acc, m_i, l_i = _key_tile(acc, m_i, l_i, q, K, V, bt_row, t, lo, hi, q_pos, num_blocks, k_head, v_head,
                                  stride_kb, stride_kt, stride_vb, stride_vt, scale, cap_log2, window_left,
                                  window_right, offs_d, d_ok, BLOCK_N, PAGE, D == BLOCK_D, SOFTCAP, WIN_LEFT,
                                  WIN_RIGHT, IS_FP8, True)
    for t in range(f_lo, f_hi):  # every key visible to every row: no mask
        acc, m_i, l_i = _key_tile(acc, m_i, l_i, q, K, V, bt_row, t, lo, hi, q_pos, num_blocks, k_head, v_head,
                                  stride_kb, stride_kt, stride_vb, stride_vt, scale, cap_log2, window_left,
                                  window_right, offs_d, d_ok, BLOCK_N, PAGE, D == BLOCK_D, SOFTCAP, WIN_LEFT,
                                  WIN_RIGHT, IS_FP8, False)
    for t in range(f_hi, t_hi):  # right edge (causal diagonal, window end, seqused_k)
        acc, m_i, l_i = _key_tile(acc, m_i, l_i, q, K, V, bt_row, t, lo, hi, q_pos, num_blocks, k_head, v_head,
                                  stride_kb, stride_kt, stride_vb, stride_vt, scale, cap_log2, window_left,
                                  window_right, offs_d, d_ok, BLOCK_N, PAGE, D == BLOCK_D, SOFTCAP, WIN_LEFT,
                                  WIN_RIGHT, IS_FP8, True)

    _finish_rows(acc, m_i, l_i, v_scale, SINK, OUT, LSE, q0 + qi, head, row_ok, offs_d, d_ok,
                 stride_ot, stride_oh, stride_lh, HAS_SINK, HAS_LSE)


@triton.jit
def _finish_rows(acc, m_i, l_i, v_scale, SINK, OUT, LSE, rows, head, row_ok, offs_d, d_ok,
                 stride_ot, stride_oh, stride_lh, HAS_SINK: tl.constexpr, HAS_LSE: tl.constexpr):
    """Normalise and store: ``o = acc / denom``, the sink adding ``e^sink`` to ``denom`` only; a row with
    no visible key stores 0 and LSE -inf (or the sink)."""
    m_all = m_i
    denom = l_i
    if HAS_SINK:
        sink = tl.load(SINK + head).to(tl.float32) * LOG2E
        m_all = tl.maximum(m_i, sink)
        m_all_safe = tl.where(m_all == float("-inf"), 0.0, m_all)
        denom = l_i * tl.exp2(m_i - m_all_safe) + tl.exp2(sink - m_all_safe)
        o = acc * (tl.exp2(m_i - m_all_safe) * v_scale / tl.where(denom > 0.0, denom, 1.0))[:, None]
    else:
        o = acc * (v_scale / tl.where(l_i > 0.0, l_i, 1.0))[:, None]
    o_ptrs = OUT + rows.to(tl.int64)[:, None] * stride_ot + head[:, None] * stride_oh + offs_d[None, :]
    tl.store(o_ptrs, o.to(OUT.dtype.element_ty), mask=row_ok[:, None] & d_ok[None, :])
    if HAS_LSE:
        lse = tl.where(denom > 0.0, (m_all + tl.log2(tl.where(denom > 0.0, denom, 1.0))) * LN2, float("-inf"))
        tl.store(LSE + head.to(tl.int64) * stride_lh + rows, lse, mask=row_ok)
