"""Triton kernel of ``nvidia.gdn_decode_sm90``: the Gated-DeltaNet recurrence over a state pool (SM90).

``atrex_sm90_gdn_decode``: grid ``(N * HV, V / BV)``. One program owns one value head of one sequence and a
block of ``BV`` value rows of its state, held as an fp32 ``[BV, K]`` tile in registers for all of the
sequence's tokens: per token it loads q, k (the GVA group's q/k head), v, g, beta, optionally L2-normalises q
and k, decays the tile, applies the delta-rule rank-1 update and writes its ``BV`` outputs. The tile is read
from the sequence's start slot and written back to the pool (cast to its dtype) or to the fp32 returned state.

Slot rules (docs/fused_recurrent_gated_delta_rule.md, "Slots"): a start slot outside ``[0, P)`` or an accepted
count outside ``[1, T_max]`` makes the sequence padded (outputs 0, no pool access); a 2-D write slot outside
``[0, P)`` skips that write; ``cu_seqlens`` entries are clamped into ``[0, T]``. So no metadata value can make
the kernel touch memory outside its tensors.
"""

import triton
import triton.language as tl


@triton.jit
def atrex_sm90_gdn_decode(
    Q, K, V, G, BETA, O, POOL, STATE_OUT, CU, IDX, NAT,
    stride_qb, stride_qt, stride_qh,
    stride_kb, stride_kt, stride_kh,
    stride_vb, stride_vt, stride_vh,
    stride_gb, stride_gt, stride_gh,
    stride_bb, stride_bt, stride_bh,
    stride_ob, stride_ot, stride_oh,
    stride_pool, stride_idx, stride_so,
    pool_size, seq_len, slots_per_seq, scale,
    HV: tl.constexpr, GROUP: tl.constexpr, DK: tl.constexpr, DV: tl.constexpr, BV: tl.constexpr,
    V_FIRST: tl.constexpr, VARLEN: tl.constexpr, IDX_MODE: tl.constexpr, HAS_NAT: tl.constexpr,
    HAS_BETA: tl.constexpr, L2NORM: tl.constexpr, INPLACE: tl.constexpr,
):
    """IDX_MODE: 0 = no indices (sequence n uses slot n), 1 = one slot per sequence, 2 = one per token."""
    pid_nh = tl.program_id(0)
    pid_v = tl.program_id(1)
    n = (pid_nh // HV).to(tl.int64)
    hv = pid_nh % HV
    hq = hv // GROUP
    if VARLEN:
        # clamped into [0, seq_len] (the packed token count), an inverted pair giving an empty sequence
        bos = tl.minimum(tl.maximum(tl.load(CU + n).to(tl.int64), 0), seq_len)
        length = tl.minimum(tl.maximum(tl.load(CU + n + 1).to(tl.int64), bos), seq_len) - bos
        b = n * 0
    else:
        bos = n * 0
        length = n * 0 + seq_len
        b = n

    if IDX_MODE == 0:
        start = n
    elif IDX_MODE == 1:
        start = tl.load(IDX + n).to(tl.int64)
    else:
        if HAS_NAT:
            acc = tl.load(NAT + n).to(tl.int64)
        else:
            acc = n * 0 + 1
        acc_ok = (acc >= 1) & (acc <= slots_per_seq)
        start = tl.load(IDX + n * stride_idx + acc - 1, mask=acc_ok, other=-1).to(tl.int64)
    live = (start >= 0) & (start < pool_size)

    offs_v = pid_v * BV + tl.arange(0, BV)
    offs_k = tl.arange(0, DK)
    if V_FIRST:  # slot [HV, V, K]
        tile = hv * DV * DK + offs_v[:, None] * DK + offs_k[None, :]
    else:  # slot [HV, K, V]
        tile = hv * DK * DV + offs_k[None, :] * DV + offs_v[:, None]
    p_o = O + b * stride_ob + bos * stride_ot + hv * stride_oh + offs_v

    if live:
        h = tl.load(POOL + start * stride_pool + tile).to(tl.float32)
        p_q = Q + b * stride_qb + bos * stride_qt + hq * stride_qh + offs_k
        p_k = K + b * stride_kb + bos * stride_kt + hq * stride_kh + offs_k
        p_v = V + b * stride_vb + bos * stride_vt + hv * stride_vh + offs_v
        p_g = G + b * stride_gb + bos * stride_gt + hv * stride_gh
        for t in range(0, length.to(tl.int32)):
            q = tl.load(p_q + t * stride_qt).to(tl.float32)
            k = tl.load(p_k + t * stride_kt).to(tl.float32)
            v = tl.load(p_v + t * stride_vt).to(tl.float32)
            g = tl.load(p_g + t * stride_gt).to(tl.float32)
            if L2NORM:
                q = q / tl.sqrt(tl.sum(q * q, 0) + 1e-6)
                k = k / tl.sqrt(tl.sum(k * k, 0) + 1e-6)
            q = q * scale
            h = h * tl.exp(g)
            u = v - tl.sum(h * k[None, :], 1)
            if HAS_BETA:
                u = u * tl.load(BETA + b * stride_bb + (bos + t) * stride_bt + hv * stride_bh).to(tl.float32)
            h = h + u[:, None] * k[None, :]
            o = tl.sum(h * q[None, :], 1)
            tl.store(p_o + t * stride_ot, o.to(O.dtype.element_ty))
            if INPLACE and IDX_MODE == 2:
                dst = tl.load(IDX + n * stride_idx + t, mask=t < slots_per_seq, other=-1).to(tl.int64)
                if (dst >= 0) & (dst < pool_size):
                    tl.store(POOL + dst * stride_pool + tile, h.to(POOL.dtype.element_ty))
        if INPLACE:
            if IDX_MODE != 2:
                if length > 0:
                    tl.store(POOL + start * stride_pool + tile, h.to(POOL.dtype.element_ty))
        else:
            tl.store(STATE_OUT + n * stride_so + tile, h)
    else:
        zero = tl.zeros([BV], dtype=tl.float32).to(O.dtype.element_ty)
        for t in range(0, length.to(tl.int32)):
            tl.store(p_o + t * stride_ot, zero)
        if not INPLACE:
            tl.store(STATE_OUT + n * stride_so + tile, tl.zeros([BV, DK], dtype=tl.float32))
