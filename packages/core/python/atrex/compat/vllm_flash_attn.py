"""Drop-in for ``vllm.vllm_flash_attn`` (install as that module in a vLLM shim).

vLLM imports ``flash_attn_varlen_func``, ``get_scheduler_metadata`` and the version helpers.
"""

from __future__ import annotations

from atrex.api.flash_attn import can_use_flash_attn_varlen_func, flash_attn_varlen_func

__all__ = [
    "can_use_flash_attn_varlen_func",
    "fa_version_unsupported_reason",
    "flash_attn_varlen_func",
    "get_scheduler_metadata",
    "is_fa_version_supported",
]

SUPPORTED_FA_VERSIONS = (2, 3, 4)


def get_scheduler_metadata(*args, **kwargs):
    """ATREX schedules inside its kernels: there is no ahead-of-time metadata. vLLM guards on None."""
    return None


def _device_target(device):
    import torch

    from atrex.dispatch.registry import get_registry
    from atrex.dispatch.target import classify_device

    if device is None:
        device = torch.device("cuda", torch.cuda.current_device()) if torch.cuda.is_available() else torch.device("cpu")
    target = classify_device(torch.device(device))
    impls = [i for i in get_registry().candidates("flash_attn_varlen", target.id) if not i.is_reference]
    return target, impls


def fa_version_unsupported_reason(fa_version: int, device=None) -> str | None:
    """None when ATREX serves this label on ``device``; else why not."""
    if fa_version not in SUPPORTED_FA_VERSIONS:
        return f"fa_version {fa_version!r} is not one of {SUPPORTED_FA_VERSIONS} (ATREX treats it as a label)"
    target, impls = _device_target(device)
    if not impls:
        return f"no ATREX attention implementation is installed for {target.id}"
    return None


def is_fa_version_supported(fa_version: int, device=None) -> bool:
    return fa_version_unsupported_reason(fa_version, device) is None
