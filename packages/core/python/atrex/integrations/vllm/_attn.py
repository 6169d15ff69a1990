"""vLLM's FLASH_ATTN backend calling ``atrex.flash_attn_varlen_func``.

``FlashAttentionImpl`` (and, from 0.30, its FA4 JIT-kernel wrapper) look ``flash_attn_varlen_func`` up as a global
of ``vllm.v1.attention.backends.flash_attn`` at every call, and the metadata builder ``get_scheduler_metadata``. The
plugin replaces both globals: the first with :func:`make_varlen` (ATREX first, vLLM's kernel when ATREX declines),
the second with ATREX's (no FA3 schedule is precomputed: ATREX schedules inside its kernels; a call that falls back
gets ``scheduler_metadata=None``, which vLLM's FA3 accepts).
"""

from __future__ import annotations

from atrex.integrations.vllm import _fallback

__all__ = ["VLLM_ONLY", "is_patched", "make_varlen", "patch_module"]

OP = "flash_attn"

#: Keywords vLLM passes that are not in ATREX's signature, all FA4-only features of vLLM 0.26+: a per-sequence causal
#: tensor and a CuTe mask function with its tensors. None (what vLLM passes unless a model needs them) is dropped;
#: anything else changes the mask, so the call goes to vLLM's kernel.
VLLM_ONLY = ("dynamic_causal", "mask_mod", "aux_tensors")


def make_varlen(original):
    """A drop-in for vLLM's ``flash_attn_varlen_func``: ``atrex.flash_attn_varlen_func`` when ATREX accepts the
    call, else ``original`` (counted and logged once per reason). ``original`` may be None where vLLM has no
    FlashAttention kernel; a declined call then raises ATREX's error."""
    from atrex.api.flash_attn import flash_attn_varlen_func as atrex_varlen
    from atrex.errors import AtrexError

    def flash_attn_varlen_func(*args, **kwargs):
        error = None
        if any(kwargs.get(name) is not None for name in VLLM_ONLY):
            reason = f"vLLM passed {', '.join(n for n in VLLM_ONLY if kwargs.get(n) is not None)} (FA4-only masking)"
            detail = None
        else:
            atrex_kw = kwargs if not any(n in kwargs for n in VLLM_ONLY) else \
                {k: v for k, v in kwargs.items() if k not in VLLM_ONLY}
            try:  # every ATREX error is raised before anything runs: inputs and out untouched
                return atrex_varlen(*args, **atrex_kw)
            except AtrexError as exc:
                error = exc
                reason, detail = _fallback.reason_of(exc)
        _fallback.record(OP, reason, detail)
        if original is None:
            raise _no_vllm_kernel(reason) from error
        return original(*args, **kwargs)

    flash_attn_varlen_func.__atrex_original__ = original
    flash_attn_varlen_func.__doc__ = make_varlen.__doc__
    return flash_attn_varlen_func


def _no_vllm_kernel(reason: str):
    from atrex.errors import AtrexNotSupportedError

    return AtrexNotSupportedError(f"flash_attn_varlen_func: {reason}; vLLM has no FlashAttention kernel in this "
                                  "process to fall back to")


def is_patched(module) -> bool:
    return getattr(module.__dict__.get("flash_attn_varlen_func"), "__atrex_original__", False) is not False


def patch_module(module) -> None:
    """Replace the backend module's kernel globals (idempotent)."""
    if is_patched(module):
        return
    from atrex.compat.vllm_flash_attn import get_scheduler_metadata

    original = module.__dict__.get("flash_attn_varlen_func")
    module.flash_attn_varlen_func = make_varlen(original)
    module.__atrex_original_get_scheduler_metadata__ = module.__dict__.get("get_scheduler_metadata")
    module.get_scheduler_metadata = get_scheduler_metadata
