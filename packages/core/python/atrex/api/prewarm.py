"""``atrex.prewarm``: compile ahead the configurations a serving engine will capture."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from atrex.dispatch.registry import get_registry
from atrex.errors import AtrexValueError

__all__ = ["prewarm"]

_OPS = {
    "flash_attn_varlen": ("atrex.api.flash_attn", "normalize_flash_attn_call"),
    "flash_attn_varlen_func": ("atrex.api.flash_attn", "normalize_flash_attn_call"),
    "chunk_gated_delta_rule": ("atrex.api.chunk_gdn", "normalize_gdn_call"),
    "fused_recurrent_gated_delta_rule": ("atrex.api.gdn_decode", "normalize_gdn_decode_call"),
}


def prewarm(op: str, cases: Iterable[Mapping]) -> list[tuple[str, str]]:
    """Compile, for each case, what the chosen implementation would compile on its first call.

    Parameters
    ----------
    op : ``"flash_attn_varlen"`` (or ``"flash_attn_varlen_func"``), ``"chunk_gated_delta_rule"`` or
        ``"fused_recurrent_gated_delta_rule"``.
    cases : iterable of keyword dicts, exactly the arguments the operator would receive
        (tensors of the serving shapes and dtypes, on the serving device).

    Returns
    -------
    ``[(implementation id, "compiled" | "nothing to compile"), ...]`` per case. Call it before
    CUDA-graph capture: a compile attempted during capture raises ``AtrexCaptureError``.
    """
    if op not in _OPS:
        raise AtrexValueError("op", op, "one of " + ", ".join(sorted(_OPS)))
    import importlib

    from atrex.api import _validate as V

    module, fn = _OPS[op]
    normalize = getattr(importlib.import_module(module), fn)
    canonical = "flash_attn_varlen" if op.startswith("flash_attn") else op
    results = []
    for case in cases:
        call = V.bind(normalize, op, (), dict(case))
        impl = get_registry().select(canonical, call)
        if impl.prewarm is None:
            results.append((impl.id, "nothing to compile"))
        else:
            impl.prewarm(call)
            results.append((impl.id, "compiled"))
    return results
