"""Launcher of ``nvidia.gdn_decode_sm90``: tile choice, outputs, and the record of compiled Triton
specialisations that makes CUDA-graph capture safe.

Every choice reads host values fixed under capture (N, HV, K, V, dtypes, layout, the SM count), never the
contents of ``cu_seqlens``, ``ssm_state_indices`` or ``num_accepted_tokens``: the device reads those.
Validation belongs to the core and ``impl.check``; this module trusts its caller.
"""

import torch
import triton

from atrex.errors import AtrexCaptureError
from atrex_nvidia.triton_warm import WarmRecord, launch_key

from . import kernels as _k

#: aim for at least this many programs per SM before shrinking the value block (small batches)
PROGRAMS_PER_SM = 4
#: SM count used where the target reports none (CPU interpreter runs)
DEFAULT_SM_COUNT = 132
#: fp32 state elements per thread the warp count aims for (the tile lives in registers)
ELEMS_PER_THREAD = 32

WARM = WarmRecord()


def tile_config(num_seqs: int, num_v_heads: int, head_k_dim: int, head_v_dim: int, sm_count: int | None):
    """(BV, num_warps): the largest value block in (32, 16, 8) that still gives ``PROGRAMS_PER_SM`` programs per
    SM, and enough warps for about ``ELEMS_PER_THREAD`` state elements per thread."""
    want = PROGRAMS_PER_SM * (sm_count or DEFAULT_SM_COUNT)
    bv = min(32, head_v_dim)
    while bv > 8 and num_seqs * num_v_heads * (head_v_dim // bv) < want:
        bv //= 2
    num_warps = max(1, min(8, bv * head_k_dim // (32 * ELEMS_PER_THREAD)))
    return bv, num_warps


def clear_compiled() -> None:
    WARM.clear()


def decode(call):
    """Run ``call`` on the current stream; returns ``(o, pool or the new fp32 state)``."""
    q, k, v, g, beta, pool = call.q, call.k, call.v, call.g, call.beta, call.pool
    n, hv, dk, dv = call.num_seqs, call.num_v_heads, call.head_k_dim, call.head_v_dim
    bv, num_warps = tile_config(n, hv, dk, dv, call.target.sm_count)
    idx, nat, cu = call.ssm_state_indices, call.num_accepted_tokens, call.cu_seqlens
    idx_mode = 0 if idx is None else (1 if idx.dim() == 1 else 2)
    f32 = torch.float32
    # o / state_out stand as their dtype until allocated (a dtype keys as an aligned launcher-owned buffer)
    o, state_out = call.dtype, (None if call.inplace_final_state else f32)

    def st(t, i):
        return 0 if t is None or isinstance(t, torch.dtype) else t.stride(i)

    o_strides = (call.seq_len * hv * dv, hv * dv, dv)
    so_stride = hv * dk * dv

    def args():
        return (
            q, k, v, g, beta, o, pool, state_out, cu, idx, nat,
            q.stride(0), q.stride(1), q.stride(2),
            k.stride(0), k.stride(1), k.stride(2),
            v.stride(0), v.stride(1), v.stride(2),
            g.stride(0), g.stride(1), g.stride(2),
            st(beta, 0), st(beta, 1), st(beta, 2),
            *o_strides,
            pool.stride(0), (idx.stride(0) if idx_mode == 2 else 0), so_stride,
            call.pool_size, call.seq_len, call.slots_per_seq, call.scale,
        )

    meta = dict(HV=hv, GROUP=hv // call.num_heads, DK=dk, DV=dv, BV=bv, V_FIRST=call.state_v_first,
                VARLEN=cu is not None, IDX_MODE=idx_mode, HAS_NAT=nat is not None, HAS_BETA=beta is not None,
                L2NORM=call.use_qk_l2norm_in_kernel, INPLACE=call.inplace_final_state, num_warps=num_warps)
    missing = WARM.missing([launch_key(_k.atrex_sm90_gdn_decode, args(), meta)])
    if missing and call.capturing:
        raise AtrexCaptureError(
            "nvidia.gdn_decode_sm90: the Triton specialisation for this call is not compiled and CUDA-graph "
            "capture is active; prewarm first (atrex.prewarm('fused_recurrent_gated_delta_rule', [call kwargs]) "
            "or one eager call with the same static shape) before capturing")
    o = torch.empty((call.batch, call.seq_len, hv, dv), dtype=call.dtype, device=call.device)
    if not call.inplace_final_state:
        state_out = torch.empty((n, *pool.shape[1:]), dtype=f32, device=call.device)
    grid = (n * hv, triton.cdiv(dv, bv))
    if o.numel() or state_out is not None:
        _k.atrex_sm90_gdn_decode[grid](*args(), **meta)
    WARM.add(missing)
    return o, (pool if call.inplace_final_state else state_out)
