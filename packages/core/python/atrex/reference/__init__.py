"""Torch reference implementations: the oracle for every kernel, and the CPU path.

Registered by the core as ``core.reference`` with the lowest priority. They serve CPU tensors;
on an accelerator only with ``ATREX_ALLOW_REFERENCE=1`` (and ``can_use_*`` never counts them there).
"""

from __future__ import annotations

from atrex import env
from atrex.eligibility import Reason


def accelerator_reasons(call) -> list[Reason]:
    """Shared policy: where the reference may run at all."""
    reasons = []
    if call.target.is_accelerator and not env.settings().allow_reference:
        reasons.append(Reason("reference_on_accelerator", "q", f"a tensor on {call.target.id}",
                              "CPU tensors; on an accelerator only with ATREX_ALLOW_REFERENCE=1"))
    if call.capturing:
        reasons.append(Reason("capture", "q", "called during CUDA-graph capture",
                              "eager calls only (the reference reads sequence offsets on the host)"))
    return reasons
