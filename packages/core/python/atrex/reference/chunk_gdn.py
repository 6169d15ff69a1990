"""Reference Gated DeltaNet (docs/chunk_gated_delta_rule.md, "Recurrence" and "Chunked form").

``run`` computes the chunked WY/UT form with chunk 64 in fp32 (the CPU path and the
oracle kernels are compared with); :func:`recurrent_gated_delta_rule` is the exact
token-by-token recurrence, kept as the oracle of the chunked form.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from atrex.eligibility import Eligibility
from atrex.reference import accelerator_reasons

CHUNK = 64


def check(call) -> Eligibility:
    return Eligibility.of(accelerator_reasons(call))


def prepare_inputs(call):
    """Apply the in-kernel options in fp32: q/k L2 norm (rounded back to the input dtype),
    beta sigmoid, gate-in-kernel; expand q/k heads to HV. Returns fp32 [B, T, HV, *] tensors."""
    q, k = call.q, call.k
    if call.use_qk_l2norm_in_kernel:
        q = (q.float() * torch.rsqrt(q.float().pow(2).sum(-1, keepdim=True) + 1e-6)).to(q.dtype)
        k = (k.float() * torch.rsqrt(k.float().pow(2).sum(-1, keepdim=True) + 1e-6)).to(k.dtype)
    group = call.num_v_heads // call.num_heads
    q = q.float().repeat_interleave(group, dim=2)
    k = k.float().repeat_interleave(group, dim=2)
    v = call.v.float()
    g = call.g.float()
    beta = call.beta.float()
    if call.use_beta_sigmoid_in_kernel:
        beta = torch.sigmoid(beta) * (2.0 if call.allow_neg_eigval else 1.0)
    if call.use_gate_in_kernel:
        bias = call.dt_bias.float() if call.dt_bias is not None else 0.0
        g = -torch.exp(call.A_log.float()) * F.softplus(g + bias)
    return q, k, v, g, beta


def sequences(call) -> list[tuple[int, int, int]]:
    """(batch index, start, end) of every sequence (host read of the offsets)."""
    if call.cu_seqlens is None:
        return [(b, 0, call.seq_len) for b in range(call.batch)]
    cu = (call.cu_seqlens_cpu if call.cu_seqlens_cpu is not None else call.cu_seqlens).tolist()
    return [(0, cu[n], cu[n + 1]) for n in range(len(cu) - 1)]


def initial_state_kv(call, n: int, dtype=torch.float32) -> torch.Tensor:
    """State n as [HV, K, V] in ``dtype`` (zeros when None)."""
    if call.initial_state is None:
        return torch.zeros(call.num_v_heads, call.head_k_dim, call.head_v_dim, dtype=dtype, device=call.device)
    s = call.initial_state[n].to(dtype)
    return s.transpose(-1, -2).contiguous() if call.state_v_first else s.clone()


def chunk_forward(q, k, v, g, beta, scale: float, state: torch.Tensor, chunk: int = CHUNK):
    """One sequence: q, k [T, HV, K], v [T, HV, V], g, beta [T, HV], state [HV, K, V] (all fp32).

    Returns (o [T, HV, V], final state [HV, K, V])."""
    T = q.shape[0]
    outs = []
    S = state
    for c0 in range(0, T, chunk):
        qc = q[c0:c0 + chunk].transpose(0, 1)  # [HV, c, K]
        kc = k[c0:c0 + chunk].transpose(0, 1)
        vc = v[c0:c0 + chunk].transpose(0, 1)  # [HV, c, V]
        gc = g[c0:c0 + chunk].transpose(0, 1)  # [HV, c]
        bc = beta[c0:c0 + chunk].transpose(0, 1)
        c = qc.shape[1]
        gam = gc.cumsum(-1)
        diff = gam[:, :, None] - gam[:, None, :]  # [HV, t, i] = gamma_t - gamma_i
        idx = torch.arange(c, device=q.device)
        strict = idx[:, None] > idx[None, :]
        incl = idx[:, None] >= idx[None, :]
        # Mask before exponentiating: exp of a positive difference above the diagonal may overflow.
        gam_strict = torch.exp(torch.where(strict, diff, float("-inf")))
        gam_incl = torch.exp(torch.where(incl, diff, float("-inf")))
        L = bc[:, :, None] * gam_strict * (kc @ kc.transpose(-1, -2))
        eye = torch.eye(c, device=q.device).expand_as(L)
        A = torch.linalg.solve_triangular(eye + L, eye, upper=False, unitriangular=True)
        W = A @ ((bc * torch.exp(gam))[..., None] * kc)
        U = A @ (bc[..., None] * vc)
        Ut = U - W @ S
        o = (torch.exp(gam)[..., None] * qc) @ S + ((qc @ kc.transpose(-1, -2)) * gam_incl) @ Ut
        outs.append((o * scale).transpose(0, 1))
        g_last = gam[:, -1]
        S = torch.exp(g_last)[:, None, None] * S + kc.transpose(-1, -2) @ (torch.exp(g_last[:, None] - gam)[..., None] * Ut)
    if outs:
        return torch.cat(outs, 0), S
    return q.new_zeros(0, q.shape[1], v.shape[-1]), S


def recurrent_forward(q, k, v, g, beta, scale: float, state: torch.Tensor):
    """The exact token-by-token recurrence for one sequence (same shapes as chunk_forward)."""
    S = state
    outs = []
    for t in range(q.shape[0]):
        S = torch.exp(g[t])[:, None, None] * S
        u = beta[t][:, None] * (v[t] - torch.einsum("hkv,hk->hv", S, k[t]))
        S = S + k[t][:, :, None] * u[:, None, :]
        outs.append(scale * torch.einsum("hkv,hk->hv", S, q[t]))
    if outs:
        return torch.stack(outs, 0), S
    return q.new_zeros(0, q.shape[1], v.shape[-1]), S


def _run(call, step):
    q, k, v, g, beta = prepare_inputs(call)
    o = torch.empty(call.batch, call.seq_len, call.num_v_heads, call.head_v_dim, dtype=torch.float32,
                    device=call.device)
    finals = []
    for n, (b, s0, s1) in enumerate(sequences(call)):
        state = initial_state_kv(call, n)
        ob, S = step(q[b, s0:s1], k[b, s0:s1], v[b, s0:s1], g[b, s0:s1], beta[b, s0:s1], call.scale, state)
        o[b, s0:s1] = ob
        finals.append(S)
    final = None
    if call.output_final_state:
        final = torch.stack(finals, 0)
        if call.state_v_first:
            final = final.transpose(-1, -2).contiguous()
    return o.to(call.dtype), final


def run(call):
    """Chunked reference launcher: returns (o in q's dtype, fp32 final state or None)."""
    return _run(call, chunk_forward)


def run_recurrent(call):
    """Token-by-token launcher with the same conventions (slow; the oracle)."""
    return _run(call, recurrent_forward)
