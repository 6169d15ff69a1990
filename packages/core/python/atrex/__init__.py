"""ATREX: hardware-specific GPU operators for LLM serving behind one stable API.

``import atrex`` is light: it imports neither torch nor any vendor plugin. Public names resolve
on first access (module ``__getattr__``); plugins are discovered on the first dispatch.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

__version__ = "0.1.0"

_EXPORTS = {
    # operators
    "flash_attn_varlen_func": "atrex.api.flash_attn",
    "can_use_flash_attn_varlen_func": "atrex.api.flash_attn",
    "explain_flash_attn_varlen_func": "atrex.api.flash_attn",
    "chunk_gated_delta_rule": "atrex.api.chunk_gdn",
    "can_use_chunk_gated_delta_rule": "atrex.api.chunk_gdn",
    "explain_chunk_gated_delta_rule": "atrex.api.chunk_gdn",
    "fused_recurrent_gated_delta_rule": "atrex.api.gdn_decode",
    "can_use_fused_recurrent_gated_delta_rule": "atrex.api.gdn_decode",
    "explain_fused_recurrent_gated_delta_rule": "atrex.api.gdn_decode",
    "prewarm": "atrex.api.prewarm",
    "get_scheduler_metadata": "atrex.compat.vllm_flash_attn",
    # errors and eligibility (no torch needed)
    "AtrexError": "atrex.errors",
    "AtrexTypeError": "atrex.errors",
    "AtrexValueError": "atrex.errors",
    "AtrexNotSupportedError": "atrex.errors",
    "AtrexCaptureError": "atrex.errors",
    "AtrexPluginError": "atrex.errors",
    "Eligibility": "atrex.eligibility",
    "Reason": "atrex.eligibility",
}

__all__ = ["__version__", *sorted(_EXPORTS)]


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'atrex' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value  # later lookups skip __getattr__
    return value


def __dir__():
    return __all__


if TYPE_CHECKING:  # pragma: no cover
    from atrex.api.chunk_gdn import (
        can_use_chunk_gated_delta_rule,
        chunk_gated_delta_rule,
        explain_chunk_gated_delta_rule,
    )
    from atrex.api.flash_attn import (
        can_use_flash_attn_varlen_func,
        explain_flash_attn_varlen_func,
        flash_attn_varlen_func,
    )
    from atrex.api.gdn_decode import (
        can_use_fused_recurrent_gated_delta_rule,
        explain_fused_recurrent_gated_delta_rule,
        fused_recurrent_gated_delta_rule,
    )
    from atrex.api.prewarm import prewarm
    from atrex.compat.vllm_flash_attn import get_scheduler_metadata
    from atrex.eligibility import Eligibility, Reason
    from atrex.errors import (
        AtrexCaptureError,
        AtrexError,
        AtrexNotSupportedError,
        AtrexPluginError,
        AtrexTypeError,
        AtrexValueError,
    )
