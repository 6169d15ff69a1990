"""Reference attention: vLLM varlen / paged contract computed in fp32 (docs/flash_attn_varlen_func.md).

Per sequence: gather the visible keys (paged: block ids in any order), dense scores in fp32,
softcap, bottom-right causal / sliding-window mask, optional sink logit, softmax with LSE.
Rows with no visible key give 0 output and LSE -inf (or the sink logit). Non-finite KV content
outside the visible set never reaches the output (no 0*NaN): invisible keys are zeroed before
the products and rows that do see a non-finite key are set to NaN explicitly.
"""

from __future__ import annotations

import math

import torch

from atrex.api._validate import FP8_DTYPES
from atrex.eligibility import Eligibility, Reason
from atrex.reference import accelerator_reasons

DTYPES = (torch.float16, torch.bfloat16, torch.float32, *sorted(FP8_DTYPES, key=str))
SINK_DTYPES = (torch.bfloat16, torch.float16, torch.float32)


def check(call) -> Eligibility:
    reasons = accelerator_reasons(call)
    if call.dtype not in DTYPES:
        reasons.append(Reason("dtype", "q", str(call.dtype), "float16, bfloat16, float32, float8_e4m3fn, float8_e5m2"))
    if call.s_aux is not None and call.s_aux.dtype not in SINK_DTYPES:
        reasons.append(Reason("dtype", "s_aux", str(call.s_aux.dtype), "bfloat16, float16 or float32"))
    return Eligibility.of(reasons)


def visible_mask(sq: int, sk: int, left: int, right: int, device) -> torch.Tensor:
    """[sq, sk] bool: key j visible to query row i (bottom-right aligned, inclusive bounds)."""
    i = torch.arange(sq, device=device)[:, None]
    j = torch.arange(sk, device=device)[None, :]
    delta = sk - sq
    vis = torch.ones(sq, sk, dtype=torch.bool, device=device)
    if left >= 0:
        vis &= j >= i + delta - left
    if right >= 0:
        vis &= j <= i + delta + right
    return vis


def attend(q, k, v, *, scale, softcap, left, right, sink=None, qd=None, kd=None, vd=None):
    """One sequence. q [sq, Hq, D], k/v [sk, Hk, D] (any dtype), descales [Hk] or None, sink [Hq].

    Returns (o [sq, Hq, D] fp32, lse [Hq, sq] fp32).
    """
    sq, hq, _ = q.shape
    sk, hk, _ = k.shape
    group = hq // hk
    qf, kf, vf = q.float(), k.float(), v.float()
    if qd is not None:
        qf = qf * qd.float().repeat_interleave(group)[None, :, None]
    if kd is not None:
        kf = kf * kd.float()[None, :, None]
    if vd is not None:
        vf = vf * vd.float()[None, :, None]
    vis = visible_mask(sq, sk, left, right, q.device)  # [sq, sk]
    # Keys that no row of this sequence may see are zeroed so that 0 * NaN cannot happen.
    seen = vis.any(0)  # [sk]
    kf = torch.where(seen[:, None, None], kf, 0.0)
    vf = torch.where(seen[:, None, None], vf, 0.0)
    bad_k = ~torch.isfinite(kf).all(-1)  # [sk, Hk]
    bad_v = ~torch.isfinite(vf).all(-1)
    kf = torch.where(bad_k[..., None], 0.0, kf)
    vf = torch.where(bad_v[..., None], 0.0, vf)
    kx = kf.repeat_interleave(group, dim=1)  # [sk, Hq, D]
    vx = vf.repeat_interleave(group, dim=1)
    s = torch.einsum("qhd,khd->hqk", qf, kx) * scale
    if softcap > 0:
        s = softcap * torch.tanh(s / softcap)
    s = s.masked_fill(~vis[None], float("-inf"))
    if sink is not None:
        sk_logit = sink.float()[:, None].expand(hq, sq)
        m = torch.maximum(s.amax(-1), sk_logit) if sk > 0 else sk_logit
    else:
        m = s.amax(-1) if sk > 0 else torch.full((hq, sq), float("-inf"), device=q.device)
    m_safe = torch.where(torch.isfinite(m), m, 0.0)
    p = torch.exp(s - m_safe[..., None])
    denom = p.sum(-1)
    if sink is not None:
        denom = denom + torch.exp(sk_logit - m_safe)
    o = torch.einsum("hqk,khd->qhd", p, vx)
    o = torch.where(denom.t()[..., None] > 0, o / denom.t().clamp_min(1e-38)[..., None], 0.0)
    lse = torch.where(denom > 0, m_safe + torch.log(denom), float("-inf"))
    # A row that sees a non-finite key or value is NaN, as the math says (never a masked one).
    bad = (bad_k | bad_v).repeat_interleave(group, dim=1).float()  # [sk, Hq]
    row_bad = (vis.float() @ bad) > 0  # [sq, Hq]
    o = torch.where(row_bad[..., None], float("nan"), o)
    return o, lse


def run(call, out: torch.Tensor):
    """Reference launcher: writes ``out`` rows of real sequences; returns the LSE or None."""
    cu_q = call.cu_seqlens_q.tolist()
    if call.paged:
        used = call.seqused_k.tolist()
    else:
        cu_k = call.cu_seqlens_k.tolist()
    lse = None
    if call.return_lse:
        lse = torch.full((call.num_heads_q, call.total_q), float("-inf"), dtype=torch.float32, device=call.device)
    for b in range(call.batch):
        q0, q1 = cu_q[b], cu_q[b + 1]
        if q1 <= q0:
            continue
        if call.paged:
            sk = used[b]
            npages = math.ceil(sk / call.page_size)
            ids = call.block_table[b, :npages].long()
            kb = call.k[ids].reshape(-1, call.num_heads_k, call.head_dim)[:sk]
            vb = call.v[ids].reshape(-1, call.num_heads_k, call.head_dim_v)[:sk]
        else:
            kb = call.k[cu_k[b]:cu_k[b + 1]]
            vb = call.v[cu_k[b]:cu_k[b + 1]]
        desc = [None if d is None else d[b] for d in (call.q_descale, call.k_descale, call.v_descale)]
        o, l_ = attend(call.q[q0:q1], kb, vb, scale=call.softmax_scale, softcap=call.softcap,
                       left=call.window_left, right=call.window_right, sink=call.s_aux,
                       qd=desc[0], kd=desc[1], vd=desc[2])
        out[q0:q1] = o.to(out.dtype)
        if lse is not None:
            lse[:, q0:q1] = l_
    return lse
