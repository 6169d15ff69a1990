"""What ATREX's two SM90 paged attention implementations (``decode_splitkv`` and ``paged_prefill``) share: the
data both accept, the host-only reasons both checks give, and how both run and prewarm, so the two cannot drift
apart."""

import torch

from atrex.eligibility import Reason
from atrex.errors import AtrexCaptureError

#: target ``<family>/<arch>`` served
FAMILY, ARCH = "nvidia", "sm90"
#: q/k/v dtypes (all three equal: the core rejects mixed dtypes); output in the same dtype
HALF_DTYPES = (torch.float16, torch.bfloat16)
#: fp8 q/k/v with optional fp32 [B, Hk] descales (any strides, stride 0 included); output bf16
FP8_DTYPES = (torch.float8_e4m3fn,)
#: D = Dv: inclusive range and multiple (padded to the next power of two inside the kernels)
HEAD_DIM_RANGE = (8, 256)
HEAD_DIM_MULTIPLE = 8
#: s_aux [Hq] dtypes
SINK_DTYPES = (torch.bfloat16, torch.float32)


def _names(dtypes) -> str:
    return ", ".join(str(d).replace("torch.", "") for d in dtypes)


def paged_reasons(call) -> list[Reason]:
    """Every reason ``call`` falls outside the shared domain: target, paged KV, dtype, head dims, sink dtype.
    Reads shapes, dtypes and host ints only (no launch, allocation, sync or aten op)."""
    reasons = []
    target = call.target
    if target.family != FAMILY or target.arch != ARCH:
        reasons.append(Reason("target", "q", target.id, f"{FAMILY}/{ARCH}"))
    if not call.paged:
        reasons.append(Reason("paged", "cu_seqlens_k", "non-paged KV", "paged KV only (block_table + seqused_k)"))
    if call.dtype not in HALF_DTYPES + FP8_DTYPES:
        reasons.append(Reason("dtype", "q", str(call.dtype), _names(HALF_DTYPES + FP8_DTYPES)))
    d = call.head_dim
    lo, hi = HEAD_DIM_RANGE
    if not lo <= d <= hi or d % HEAD_DIM_MULTIPLE:
        reasons.append(Reason("head_dim", "q", d, f"{lo}..{hi}, a multiple of {HEAD_DIM_MULTIPLE}"))
    if call.head_dim_v != d:
        reasons.append(Reason("head_dim", "v", call.head_dim_v, f"head_dim_v == head_dim ({d})"))
    if call.s_aux is not None and call.s_aux.dtype not in SINK_DTYPES:
        reasons.append(Reason("sinks", "s_aux", str(call.s_aux.dtype), _names(SINK_DTYPES).replace(", ", " or ")
                              + " [num_heads_q]"))
    return reasons


# (torch.cuda.current_device() without its lazy-init check: only asked once a CUDA tensor exists)
_current_device = getattr(torch._C, "_cuda_getDevice", torch.cuda.current_device)


def run_on_call_device(launch, call, out: torch.Tensor):
    """``launch(call, out)`` with the call's CUDA device current (the caller's current device may differ)."""
    index = call.device.index
    if index is not None and call.q.is_cuda and index != _current_device():  # (is_cuda: device.type builds a str)
        with torch.cuda.device(index):
            return launch(call, out)
    return launch(call, out)


def prewarm_into_scratch(run, call, impl_id: str) -> None:
    """Compile the Triton specialisations of ``call``: one ``run`` into scratch outputs, outside capture."""
    if call.capturing:
        raise AtrexCaptureError(f"{impl_id}: prewarm during CUDA-graph capture; prewarm before capturing")
    if call.total_q == 0:
        return
    out = torch.empty((call.total_q, call.num_heads_q, call.head_dim_v), dtype=call.out_dtype, device=call.device)
    run(call, out)
