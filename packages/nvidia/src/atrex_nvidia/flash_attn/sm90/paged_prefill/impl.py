"""``nvidia.paged_prefill_sm90``: ATREX's paged varlen attention for any query length on SM90 (Triton).

Registered by :mod:`atrex_nvidia._plugin` as ``check`` / ``run`` / ``prewarm``. The domain is data in
``table.py`` and ``..paged_domain``; ``check`` reads shapes, dtypes and host ints only (no launch,
allocation, sync or aten op) and lists every reason. ``run`` never reads device values on the host; under CUDA-graph capture an
uncompiled Triton specialisation raises :class:`atrex.errors.AtrexCaptureError` before any launch.
"""

import functools

import torch

from atrex.eligibility import Eligibility

from ..paged_domain import paged_reasons

__all__ = ["check", "prewarm", "run"]


def check(call) -> Eligibility:
    """Host-only eligibility of ``call`` on the call's target (every failing reason listed)."""
    reasons = paged_reasons(call)
    return Eligibility.of(reasons)


def run(call, out: torch.Tensor):
    """Run on the call's device and current stream; returns the LSE ``[Hq, Tq]`` fp32 or None."""
    prefill = _launcher().prefill  # (imported on first use: check() must not import Triton)
    index = call.device.index
    if index is not None and call.q.is_cuda and index != _current_device():  # (is_cuda: device.type builds a str)
        with torch.cuda.device(index):
            return prefill(call, out)
    return prefill(call, out)


_current_device = torch.cuda.current_device


@functools.cache
def _launcher():
    from . import launch

    return launch


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
