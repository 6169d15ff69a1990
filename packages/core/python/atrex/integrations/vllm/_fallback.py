"""Calls that vLLM's own kernels serve instead of ATREX: counted per (op, reason), logged once per reason.

A reason is a stable key (implementation ids, reason codes, argument names; never per-call values such as lengths),
so a serving process logs each cause once however often it recurs. The first occurrence logs the full explanation.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter

__all__ = ["LOG", "counts", "note_once", "reason_of", "record", "reset"]

#: A child of vLLM's ``vllm`` logger: vLLM's handler prints it in vLLM's format. Importing it imports nothing of vLLM.
LOG = logging.getLogger("vllm.atrex")

_counts: Counter = Counter()
_noted: set[str] = set()
_lock = threading.Lock()


def record(op: str, reason: str, detail: str | None = None) -> None:
    """Count one fallback of ``op`` for ``reason``; log it the first time this (op, reason) occurs."""
    key = (op, reason)
    with _lock:
        first = key not in _counts
        _counts[key] += 1
    if first:
        more = f"\n{detail}" if detail and detail != reason else ""
        LOG.warning("ATREX: %s call served by vLLM's own kernel: %s (logged once per reason; "
                    "atrex.integrations.vllm.fallback_counts() counts them)%s", op, reason, more)


def note_once(key: str, message: str, *args, level: int = logging.INFO) -> None:
    """Log ``message`` the first time ``key`` is seen in this process (decisions, not per-call events)."""
    with _lock:
        if key in _noted:
            return
        _noted.add(key)
    LOG.log(level, message, *args)


def counts() -> dict[tuple[str, str], int]:
    """``{(op, reason): calls}`` since the process started (or since :func:`reset`)."""
    with _lock:
        return dict(_counts)


def reset() -> None:
    with _lock:
        _counts.clear()
        _noted.clear()


def reason_of(exc: Exception) -> tuple[str, str]:
    """``(stable reason key, full message)`` of an ATREX error raised before anything ran."""
    from atrex.errors import AtrexCaptureError, AtrexNotSupportedError

    detail = str(exc)
    if isinstance(exc, AtrexCaptureError):
        return "an ATREX kernel would compile during CUDA-graph capture (not prewarmed for this shape)", detail
    if isinstance(exc, AtrexNotSupportedError):
        return _not_supported_key(exc), detail
    argument = getattr(exc, "argument", None)
    kind = type(exc).__name__
    return (f"{kind} on argument `{argument}`" if argument else kind), detail


def _not_supported_key(exc) -> str:
    vendor = [(impl, elig) for impl, elig in exc.rejections if impl != "core.reference"]
    if vendor:
        parts = [f"{impl} declined ({', '.join(sorted({f'{r.code}:{r.argument}' for r in elig.reasons}))})"
                 for impl, elig in vendor]
        return f"on {exc.target}: " + "; ".join(parts)
    if exc.rejections:
        return f"no ATREX implementation for {exc.target} accepts this call"
    if exc.argument:  # a refused feature: "argument `x`: got ...; supported: ..." (the value is left out)
        supported = str(exc).splitlines()[0].partition("; supported: ")[2]
        return f"unsupported `{exc.argument}`" + (f" (supported: {supported})" if supported else "")
    return str(exc).splitlines()[0]
