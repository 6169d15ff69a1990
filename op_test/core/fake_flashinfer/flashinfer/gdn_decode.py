"""Stand-in for flashinfer.gdn_decode (0.7.2 conventions): raw gates (g = -exp(A_log) * softplus(a + dt_bias),
threshold 20; beta = sigmoid(b)), fp32 pool [P, HV, V, K] updated in place, [B, T] inputs. Math: ATREX's oracle."""

import torch

from atrex.reference.oracle import gdn_decode_oracle


def _gates(A_log, a, dt_bias, b):
    x = a.float() + dt_bias.float()
    return -torch.exp(A_log) * torch.where(x > 20, x, torch.nn.functional.softplus(x)), torch.sigmoid(b.float())


def gated_delta_rule_decode_pretranspose(q, k, v, state, A_log, a, dt_bias, b, scale=None, use_qk_l2norm=True,
                                         initial_state=None, initial_state_indices=None):
    assert state is None and q.shape[1] == 1 and initial_state.dtype == torch.float32
    g, beta = _gates(A_log, a, dt_bias, b)
    o, pool = gdn_decode_oracle(q, k, v, g, beta, initial_state=initial_state, scale=scale,
                                ssm_state_indices=initial_state_indices, use_qk_l2norm_in_kernel=use_qk_l2norm)
    initial_state.copy_(pool.float())
    return o.to(q.dtype), initial_state


def gated_delta_rule_mtp(q, k, v, initial_state, initial_state_indices, A_log, a, dt_bias, b, scale=None,
                         ssm_state_indices=None, disable_state_update=None, use_qk_l2norm=True):
    assert disable_state_update is False and initial_state.dtype == torch.float32
    g, beta = _gates(A_log, a, dt_bias, b)
    idx, nat = initial_state_indices, None
    if ssm_state_indices is not None:  # the start slot's position in each row: the accepted count
        assert ssm_state_indices.dtype == torch.int32
        idx = ssm_state_indices
        nat = torch.tensor([int((row == s).nonzero()[0]) + 1 for row, s in zip(idx, initial_state_indices)])
    o, pool = gdn_decode_oracle(q, k, v, g, beta, initial_state=initial_state, scale=scale, ssm_state_indices=idx,
                                num_accepted_tokens=nat, use_qk_l2norm_in_kernel=use_qk_l2norm)
    initial_state.copy_(pool.float())
    return o.to(q.dtype), initial_state
