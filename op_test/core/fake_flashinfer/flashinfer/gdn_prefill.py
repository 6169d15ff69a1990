"""Stand-in for flashinfer.gdn_prefill (0.7.2 conventions): packed [T, H, D], g = alpha (decay factor), fp32
gates [T, HV], state [N, HV, V, K], int64-able cu_seqlens. Math: ATREX's float64 oracle."""

import torch

from atrex.reference.oracle import gdn_oracle


def chunk_gated_delta_rule(q, k, v, g=None, beta=None, scale=None, initial_state=None, output_final_state=False,
                           cu_seqlens=None, use_qk_l2norm_in_kernel=False, max_seqlen=None):
    assert q.dim() == 3 and g.dtype == torch.float32 and beta.dtype == torch.float32 and q.shape[-1] == v.shape[-1]
    assert initial_state is None or initial_state.dtype == torch.float32
    assert max_seqlen is not None and max_seqlen >= int((cu_seqlens[1:] - cu_seqlens[:-1]).max())
    o, s = gdn_oracle(q[None], k[None], v[None], torch.log(g)[None], beta[None], scale=scale,
                      initial_state=initial_state, state_v_first=True, cu_seqlens=cu_seqlens.to(torch.int64),
                      use_qk_l2norm_in_kernel=use_qk_l2norm_in_kernel)
    o = o[0].to(q.dtype)
    return (o, s.float()) if output_final_state else o
