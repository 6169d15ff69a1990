"""Float64 oracles written independently of the references they check.

``attention_oracle`` works on the raw vLLM arguments: it looks up every key token through
the block table one at a time, loops over sequences and query heads, builds the mask from
the contract's inequalities and normalises with ``logsumexp``. ``gdn_oracle`` is the exact
token-by-token recurrence in float64, in the state layout the caller chose. Slow by design.
"""

from __future__ import annotations

import torch


def attention_oracle(q, k, v, cu_seqlens_q, *, seqused_k=None, block_table=None, cu_seqlens_k=None,
                     softmax_scale=None, causal=False, window_size=(-1, -1), softcap=0.0, s_aux=None,
                     q_descale=None, k_descale=None, v_descale=None):
    """Returns (out [Tq, Hq, D] float64 with rows outside every sequence = 0, lse [Hq, Tq] float64)."""
    tq, hq, d = q.shape
    hk = k.shape[-2]
    group = hq // hk
    scale = d ** -0.5 if softmax_scale is None else softmax_scale
    left, right = window_size if window_size is not None else (-1, -1)
    if causal:
        right = 0
    cu = [int(x) for x in cu_seqlens_q.cpu()]
    out = torch.zeros(tq, hq, v.shape[-1], dtype=torch.float64)
    lse = torch.full((hq, tq), float("-inf"), dtype=torch.float64)
    fp8 = q.dtype in (getattr(torch, "float8_e4m3fn", None), getattr(torch, "float8_e5m2", None))
    for b in range(len(cu) - 1):
        sq = cu[b + 1] - cu[b]
        if sq == 0:
            continue
        if block_table is not None:
            sk = int(seqused_k[b])
            page = k.shape[1]
            rows = [(int(block_table[b, j // page]), j % page) for j in range(sk)]
            kb = torch.stack([k[p, o] for p, o in rows]) if rows else k.new_zeros(0, hk, d)
            vb = torch.stack([v[p, o] for p, o in rows]) if rows else v.new_zeros(0, hk, v.shape[-1])
        else:
            k0, k1 = int(cu_seqlens_k[b]), int(cu_seqlens_k[b + 1])
            sk = k1 - k0
            kb, vb = k[k0:k1], v[k0:k1]
        kb = kb.cpu().double()
        vb = vb.cpu().double()
        qb = q[cu[b]:cu[b + 1]].cpu().double()
        for h in range(hq):
            kvh = h // group
            qh = qb[:, h]
            kh = kb[:, kvh]
            vh = vb[:, kvh]
            if fp8:
                if q_descale is not None:
                    qh = qh * float(q_descale[b, kvh])
                if k_descale is not None:
                    kh = kh * float(k_descale[b, kvh])
                if v_descale is not None:
                    vh = vh * float(v_descale[b, kvh])
            for i in range(sq):
                lo = 0 if left < 0 else max(0, i + sk - sq - left)
                hi = sk - 1 if right < 0 else min(sk - 1, i + sk - sq + right)
                logits = []
                if hi >= lo:
                    s = (kh[lo:hi + 1] @ qh[i]) * scale
                    if softcap > 0:
                        s = softcap * torch.tanh(s / softcap)
                    logits.append(s)
                if s_aux is not None:
                    logits.append(s_aux[h].double().cpu().reshape(1))
                if not logits:
                    continue
                allv = torch.cat(logits)
                ls = torch.logsumexp(allv, 0)
                lse[h, cu[b] + i] = ls
                if hi >= lo:
                    p = torch.exp(allv[: hi - lo + 1] - ls)
                    out[cu[b] + i, h] = p @ vh[lo:hi + 1]
    return out, lse


def l2norm_rounded(x):
    return (x.float() * torch.rsqrt(x.float().pow(2).sum(-1, keepdim=True) + 1e-6)).to(x.dtype)


def softplus64(x):
    """ln(1 + e^x) in float64 without overflow: max(x, 0) + log1p(e^-|x|)."""
    return x.clamp_min(0) + torch.log1p(torch.exp(-x.abs()))


def gdn_gates64(g, beta, *, use_gate_in_kernel=False, A_log=None, dt_bias=None, use_beta_sigmoid_in_kernel=False,
                allow_neg_eigval=False):
    """The in-kernel gate options in float64: ``g <- -e^A_log softplus(g + dt_bias)`` (per value head, the last
    dimension) and ``beta <- sigmoid(beta)``, times 2 with ``allow_neg_eigval``. Returns float64 CPU tensors."""
    g, beta = g.cpu().double(), beta.cpu().double()
    if use_gate_in_kernel:
        x = g + (0.0 if dt_bias is None else dt_bias.cpu().double())
        g = -torch.exp(A_log.cpu().double()) * softplus64(x)
    if use_beta_sigmoid_in_kernel:
        beta = (2.0 if allow_neg_eigval else 1.0) / (1.0 + torch.exp(-beta))
    return g, beta


def gdn_oracle(q, k, v, g, beta, *, scale=None, initial_state=None, state_v_first=False, cu_seqlens=None,
               use_qk_l2norm_in_kernel=False, **gates):
    """Exact recurrence in float64. Returns (o [B,T,HV,V] float64, final state float64 in the caller's layout).
    ``gates``: the keyword options of :func:`gdn_gates64` (gate in kernel, beta sigmoid)."""
    if use_qk_l2norm_in_kernel:
        q, k = l2norm_rounded(q), l2norm_rounded(k)
    b_, t_, h_, kd = q.shape
    hv, vd = v.shape[2], v.shape[3]
    group = hv // h_
    scale = kd ** -0.5 if scale is None else scale
    g, beta = gdn_gates64(g, beta, **gates)
    q, k, v = (x.cpu().double() for x in (q, k, v))
    if cu_seqlens is None:
        seqs = [(b, 0, t_) for b in range(b_)]
    else:
        cu = [int(x) for x in cu_seqlens.cpu()]
        seqs = [(0, cu[i], cu[i + 1]) for i in range(len(cu) - 1)]
    o = torch.zeros(b_, t_, hv, vd, dtype=torch.float64)
    finals = []
    for n, (b, s0, s1) in enumerate(seqs):
        heads = []
        for j in range(hv):
            hq = j // group
            if initial_state is None:
                M = torch.zeros(vd, kd, dtype=torch.float64)  # V-first working layout: M = S^T
            else:
                s = initial_state[n, j].cpu().double()
                M = s.clone() if state_v_first else s.t().clone()
            for t in range(s0, s1):
                kt, qt = k[b, t, hq], q[b, t, hq]
                M = torch.exp(g[b, t, j]) * M
                M = M + beta[b, t, j] * torch.outer(v[b, t, j] - M @ kt, kt)
                o[b, t, j] = scale * (M @ qt)
            heads.append(M if state_v_first else M.t())
        finals.append(torch.stack(heads))
    return o, torch.stack(finals)


def gdn_decode_oracle(q, k, v, g, beta=None, *, initial_state, scale=None, inplace_final_state=True,
                      cu_seqlens=None, ssm_state_indices=None, num_accepted_tokens=None,
                      use_qk_l2norm_in_kernel=False, state_v_first=True):
    """The pool-indexed recurrence in float64, never touching its arguments. Returns (o [B,T,HV,V] float64,
    final float64): the whole pool after the step when ``inplace_final_state``, else ``[N, HV, *]``."""
    b_, t_, h_, kd = q.shape
    hv, vd = v.shape[2], v.shape[3]
    group = hv // h_
    scale = kd ** -0.5 if scale is None else scale
    q, k, v, g = (x.cpu().double() for x in (q, k, v, g))
    beta = torch.ones_like(g) if beta is None else beta.cpu().double()
    if use_qk_l2norm_in_kernel:
        q = q / torch.sqrt((q * q).sum(-1, keepdim=True) + 1e-6)
        k = k / torch.sqrt((k * k).sum(-1, keepdim=True) + 1e-6)
    pool = initial_state.cpu().double().clone()
    p = pool.shape[0]
    if cu_seqlens is None:
        seqs = [(b, 0, t_) for b in range(b_)]
    else:
        cu = [int(x) for x in cu_seqlens.cpu()]
        seqs = [(0, cu[i], cu[i + 1]) for i in range(len(cu) - 1)]
    idx = None if ssm_state_indices is None else ssm_state_indices.cpu().tolist()
    o = torch.zeros(b_, t_, hv, vd, dtype=torch.float64)
    ret = torch.zeros((len(seqs), *pool.shape[1:]), dtype=torch.float64)
    pending = []
    for n, (b, s0, s1) in enumerate(seqs):
        row = [n] if idx is None else (idx[n] if isinstance(idx[n], list) else [idx[n]])
        a = 1 if num_accepted_tokens is None else int(num_accepted_tokens[n])
        if not 1 <= a <= len(row) or not 0 <= row[a - 1] < p:
            continue  # padded: output rows stay 0, no slot read or written
        for j in range(hv):
            s = pool[row[a - 1], j]
            M = s.clone() if state_v_first else s.t().clone()  # working layout [V, K]
            for i, t in enumerate(range(s0, s1)):
                kt, qt = k[b, t, j // group], q[b, t, j // group]
                M = torch.exp(g[b, t, j]) * M
                M = M + beta[b, t, j] * torch.outer(v[b, t, j] - M @ kt, kt)
                o[b, t, j] = scale * (M @ qt)
                if isinstance(idx[n] if idx is not None else None, list):
                    dst = row[i] if i < len(row) else -1
                else:
                    dst = row[0] if t == s1 - 1 else -1
                if 0 <= dst < p:
                    pending.append((dst, j, M.clone() if state_v_first else M.t().clone()))
            ret[n, j] = M if state_v_first else M.t()
    if not inplace_final_state:
        return o, ret
    for dst, j, m in pending:
        pool[dst, j] = m
    return o, pool


def rel_rmse(ref: torch.Tensor, x: torch.Tensor) -> float:
    """||ref - x||_2 / ||ref||_2 in float64 (0 when both are empty)."""
    ref = ref.double().cpu()
    x = x.double().cpu()
    num = torch.linalg.vector_norm(ref - x)
    den = torch.linalg.vector_norm(ref)
    if den == 0:
        return float(num)
    return float(num / den)
