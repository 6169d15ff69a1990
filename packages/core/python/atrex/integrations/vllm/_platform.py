"""Which ATREX target vLLM's GPU is, and which routed ops ATREX serves there, without creating a CUDA context.

The plugin runs in every vLLM process, the API server included, before vLLM initialises CUDA (a context created
there would break the workers vLLM forks). vLLM's CUDA platform reads the device through NVML; ATREX classifies the
name and capability it reports with the same rule it applies to tensors (``classify_properties``).
"""

from __future__ import annotations

from atrex.integrations.vllm._versions import OPS

__all__ = ["detect", "served_ops"]


def detect() -> tuple[str | None, str]:
    """``(ATREX target id or None, description)`` of device 0 as vLLM's current platform sees it.

    None means: not CUDA, or the device cannot be identified without initialising CUDA (vLLM's platform without
    NVML, and CUDA not initialised yet in this process)."""
    from vllm.platforms import current_platform

    if not current_platform.is_cuda():
        return None, f"vLLM's platform is {type(current_platform).__name__}, not CUDA"
    props = _device_properties(current_platform)
    if props is None:
        return None, ("vLLM's CUDA platform has no NVML and CUDA is not initialised in this process: the GPU "
                      "cannot be identified without creating a CUDA context")
    name, capability = props
    import torch

    from atrex import env
    from atrex.dispatch.registry import get_registry
    from atrex.dispatch.target import classify_properties

    target = classify_properties(name=name, capability=capability, cuda_version=torch.version.cuda or "unknown",
                                 devices=get_registry().device_rules, emulate=env.settings().emulated_families)
    return target.id, target.describe()


def _device_properties(platform) -> tuple[str, tuple[int, int]] | None:
    """(name, capability) of device 0: through NVML (vLLM's ``NvmlCudaPlatform``), or through torch when CUDA is
    already initialised here (a worker); else None (that call would create a context)."""
    if type(platform).__name__ != "NvmlCudaPlatform":
        import torch

        if not torch.cuda.is_initialized():
            return None
        major, minor = torch.cuda.get_device_capability(0)
        return torch.cuda.get_device_name(0), (major, minor)
    cap = platform.get_device_capability(0)
    if cap is None:
        return None
    return platform.get_device_name(0), (cap.major, cap.minor)


def served_ops(target_id: str) -> dict[str, bool]:
    """Routed op name -> whether an ATREX implementation other than the torch reference is registered (and not
    disabled by ``ATREX_DISABLE``) for ``target_id``."""
    from atrex.dispatch.registry import get_registry

    reg = get_registry()
    return {name: any(not impl.is_reference for impl in reg.candidates(op, target_id)) for name, op in OPS.items()}
