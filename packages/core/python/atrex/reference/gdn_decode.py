"""Reference ``fused_recurrent_gated_delta_rule`` (docs/fused_recurrent_gated_delta_rule.md): the exact
token-by-token recurrence in fp32 over the pool slots, one sequence at a time (all heads at once).

Slot rules (the same the kernels follow): sequence ``n`` starts from slot ``s0`` = ``indices[n]`` (1-D),
``indices[n, a - 1]`` (2-D, ``a = num_accepted_tokens[n]`` or 1) or ``n`` (no indices). It is padded when
``s0`` is outside ``[0, P)`` or ``a`` outside ``[1, T_max]``: outputs 0, nothing read or written. In place,
1-D / no indices write the state after the last token to ``s0``; 2-D write the state after token ``j`` to
``indices[n, j]`` when that is in ``[0, P)``. Not in place, the returned fp32 ``[N, HV, *]`` holds the state
after the last token (zeros for a padded sequence, the initial state for an empty one).
"""

from __future__ import annotations

import torch

from atrex.eligibility import Eligibility
from atrex.reference import accelerator_reasons


def check(call) -> Eligibility:
    return Eligibility.of(accelerator_reasons(call))


def sequences(call) -> list[tuple[int, int, int]]:
    """(batch index, start, end) of every sequence (host read of the offsets)."""
    if call.cu_seqlens is None:
        return [(b, 0, call.seq_len) for b in range(call.batch)]
    cu = call.cu_seqlens.tolist()
    return [(0, cu[n], cu[n + 1]) for n in range(len(cu) - 1)]


def slot_plan(call) -> list[tuple[int, list[int]]]:
    """Per sequence: (start slot or -1 when padded, the write slot after each token position; -1 = none)."""
    n_seq, p = call.num_seqs, call.pool_size
    lens = [e - s for _, s, e in sequences(call)]
    idx = call.ssm_state_indices
    rows = None if idx is None else idx.tolist()
    nat = None if call.num_accepted_tokens is None else call.num_accepted_tokens.tolist()
    plan = []
    for n in range(n_seq):
        if rows is None:
            row, two_d = [n], False
        elif idx.dim() == 1:
            row, two_d = [rows[n]], False
        else:
            row, two_d = rows[n], True
        a = nat[n] if nat is not None else 1
        start = row[a - 1] if 1 <= a <= len(row) else -1
        if not 0 <= start < p:
            plan.append((-1, [-1] * lens[n]))
            continue
        if two_d:
            writes = [row[j] if j < len(row) and 0 <= row[j] < p else -1 for j in range(lens[n])]
        else:
            writes = [-1] * max(0, lens[n] - 1) + ([start] if lens[n] else [])
        plan.append((start, writes))
    return plan


def _kv(state: torch.Tensor, v_first: bool) -> torch.Tensor:
    """A pool slot [HV, *, *] as fp32 [HV, K, V]."""
    s = state.float()
    return s.transpose(-1, -2) if v_first else s


def _pool(state_kv: torch.Tensor, v_first: bool) -> torch.Tensor:
    return state_kv.transpose(-1, -2) if v_first else state_kv


def run(call):
    """Returns ``(o in q's dtype, final_state)``: the pool (updated in place) or a new fp32 tensor."""
    group = call.num_v_heads // call.num_heads
    q, k = call.q.float(), call.k.float()
    if call.use_qk_l2norm_in_kernel:
        q = q * torch.rsqrt(q.pow(2).sum(-1, keepdim=True) + 1e-6)
        k = k * torch.rsqrt(k.pow(2).sum(-1, keepdim=True) + 1e-6)
    q = q.repeat_interleave(group, dim=2) * call.scale
    k = k.repeat_interleave(group, dim=2)
    v, g = call.v.float(), call.g.float()
    beta = torch.ones_like(g) if call.beta is None else call.beta.float()
    pool = call.pool
    o = torch.zeros(call.batch, call.seq_len, call.num_v_heads, call.head_v_dim, dtype=torch.float32,
                    device=call.device)
    ret = None
    if not call.inplace_final_state:
        ret = torch.zeros((call.num_seqs, *pool.shape[1:]), dtype=torch.float32, device=call.device)
    writes_all = []
    for n, ((b, s0, s1), (start, writes)) in enumerate(zip(sequences(call), slot_plan(call))):
        if start < 0:
            continue
        S = _kv(pool[start], call.state_v_first).clone()
        for j, t in enumerate(range(s0, s1)):
            S = torch.exp(g[b, t])[:, None, None] * S
            u = beta[b, t][:, None] * (v[b, t] - torch.einsum("hkv,hk->hv", S, k[b, t]))
            S = S + k[b, t][:, :, None] * u[:, None, :]
            o[b, t] = torch.einsum("hkv,hk->hv", S, q[b, t])
            if call.inplace_final_state and writes[j] >= 0:
                writes_all.append((writes[j], _pool(S, call.state_v_first).to(pool.dtype)))
        if ret is not None:
            ret[n] = _pool(S, call.state_v_first)
    # write after every sequence has read its start slot (slots are disjoint across sequences by contract)
    for slot, state in writes_all:
        pool[slot] = state
    return o.to(call.dtype), (pool if call.inplace_final_state else ret)
