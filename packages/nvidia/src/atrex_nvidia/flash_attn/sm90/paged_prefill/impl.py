"""``nvidia.paged_prefill_sm90``: ATREX's paged varlen attention for any query length on SM90 (Triton).

Registered by :mod:`atrex_nvidia._plugin` as ``check`` / ``run`` / ``prewarm``. The domain is data in
``table.py``; ``check`` reads shapes, dtypes and host ints only (no launch, allocation, sync or aten op)
and lists every reason. ``run`` never reads device values on the host; under CUDA-graph capture an
uncompiled Triton specialisation raises :class:`atrex.errors.AtrexCaptureError` before any launch.
"""

import torch

from atrex.eligibility import Eligibility, Reason

from . import table as T

__all__ = ["check", "prewarm", "run"]


def check(call) -> Eligibility:
    """Host-only eligibility of ``call`` on the call's target (every failing reason listed)."""
    reasons = []
    target = call.target
    if target.family != T.FAMILY or target.arch != T.ARCH:
        reasons.append(Reason("target", "q", target.id, f"{T.FAMILY}/{T.ARCH}"))
    if not call.paged:
        reasons.append(Reason("paged", "cu_seqlens_k", "non-paged KV",
                              "paged KV only (block_table + seqused_k)"))
    if call.dtype not in T.HALF_DTYPES + T.FP8_DTYPES:
        reasons.append(Reason("dtype", "q", str(call.dtype), T.dtypes_text()))
    d = call.head_dim
    lo, hi = T.HEAD_DIM_RANGE
    if not lo <= d <= hi or d % T.HEAD_DIM_MULTIPLE:
        reasons.append(Reason("head_dim", "q", d, f"{lo}..{hi}, a multiple of {T.HEAD_DIM_MULTIPLE}"))
    if call.head_dim_v != d:
        reasons.append(Reason("head_dim", "v", call.head_dim_v, f"head_dim_v == head_dim ({d})"))
    if call.s_aux is not None and call.s_aux.dtype not in T.SINK_DTYPES:
        reasons.append(Reason("sinks", "s_aux", str(call.s_aux.dtype),
                              " or ".join(str(x).replace("torch.", "") for x in T.SINK_DTYPES) + " [num_heads_q]"))
    return Eligibility.of(reasons)


def run(call, out: torch.Tensor):
    """Run on the call's device and current stream; returns the LSE ``[Hq, Tq]`` fp32 or None."""
    from .launch import prefill

    index = call.device.index
    if call.device.type == "cuda" and index is not None and index != torch.cuda.current_device():
        with torch.cuda.device(index):
            return prefill(call, out)
    return prefill(call, out)


def prewarm(call) -> None:
    """Compile the Triton specialisation of ``call`` (one run into scratch outputs, outside capture)."""
    from atrex.errors import AtrexCaptureError

    if call.capturing:
        raise AtrexCaptureError("nvidia.paged_prefill_sm90: prewarm during CUDA-graph capture; prewarm before "
                                "capturing")
    if call.total_q == 0:
        return
    out = torch.empty((call.total_q, call.num_heads_q, call.head_dim_v), dtype=call.out_dtype, device=call.device)
    run(call, out)
