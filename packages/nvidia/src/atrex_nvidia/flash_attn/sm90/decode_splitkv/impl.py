"""``nvidia.decode_splitkv``: ATREX's own split-KV paged decode attention for SM90 (Triton).

Registered by :mod:`atrex_nvidia._plugin` as ``check`` / ``run`` / ``prewarm`` / ``bind``. The domain is data in
``table.py`` and ``..paged_domain``; ``check`` reads shapes, dtypes and host ints only (no launch,
allocation, sync or aten op) and lists every reason. ``run`` never reads device values on the host; under
CUDA-graph capture
an uncompiled Triton specialisation raises :class:`atrex.errors.AtrexCaptureError` before any launch.
"""

import functools

import torch

from atrex.eligibility import Eligibility, Reason

from ..paged_domain import paged_reasons, prewarm_into_scratch, run_on_call_device
from . import table as T

__all__ = ["bind", "check", "prewarm", "run"]


def check(call) -> Eligibility:
    """Host-only eligibility of ``call`` on the call's target (every failing reason listed)."""
    reasons = paged_reasons(call)
    if call.max_seqlen_q > T.MAX_SEQLEN_Q:
        reasons.append(Reason("max_seqlen_q", "max_seqlen_q", call.max_seqlen_q,
                              f"<= {T.MAX_SEQLEN_Q} (decode and MTP shapes)"))
    return Eligibility.of(reasons)


def run(call, out: torch.Tensor):
    """Run on the call's device and current stream; returns the LSE ``[Hq, Tq]`` fp32 or None."""
    return run_on_call_device(_launcher().decode, call, out)  # (imported on first use: check() must not import Triton)


def bind(call):
    """``run``'s runner for ``call``'s memo class and per-call key (``atrex.plugin.ImplSpec.bind``): the class's
    launch plan, once ``run`` kept it, launched straight from its generated launch."""
    from ..paged_key import runner

    launch = _launcher()
    return runner(launch.WARM, run, launch.plan_key, launch.go, launch.plan_device)


@functools.cache
def _launcher():
    from . import launch

    return launch


def prewarm(call) -> None:
    """Compile the Triton specialisations of ``call`` (one run into scratch outputs, outside capture)."""
    prewarm_into_scratch(run, call, "nvidia.decode_splitkv")
