"""Device classification, cached per device.

The core knows the CUDA and HIP runtimes' own rules; a vendor whose devices those would misread
declares :class:`atrex.plugin.DeviceRule` entries in its manifest (exact product names, emulation
hosts), which the registry collects. The pure rule :func:`classify_properties` is separated from
the torch probing so that tests can feed it stubbed properties and rules.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

from atrex import env
from atrex.dispatch import registry
from atrex.plugin import DeviceRule

__all__ = ["DeviceTarget", "classify_device", "classify_properties", "clear_cache"]


@dataclass(frozen=True, slots=True)
class DeviceTarget:
    family: str  # nvidia | amd | a plugin's own family | cpu | unknown
    arch: str  # sm90, sm100, sm103, sm120, gfx942, a plugin's own arch, cpu, unknown
    name: str  # product name as the runtime reports it
    capability: tuple[int, int] | None = None
    runtime: str | None = None  # "cuda 13.0" / "hip 6.4"
    sm_count: int = 0
    emulated: bool = False
    index: int | None = None
    #: The target ids are `cpu`, `unknown` and `<family>/<arch>`. Derived, computed once
    #: (dispatch reads it on every call); not an argument, not part of eq/hash/repr.
    id: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "id", self.family if self.family in ("cpu", "unknown")
                           else f"{self.family}/{self.arch}")

    @property
    def is_accelerator(self) -> bool:
        return self.family != "cpu"

    def describe(self) -> str:
        parts = [self.id]
        if self.name:
            parts.append(repr(self.name))
        if self.capability:
            parts.append(f"capability {self.capability[0]}.{self.capability[1]}")
        if self.runtime:
            parts.append(self.runtime)
        if self.sm_count:
            parts.append(f"{self.sm_count} SMs")
        if self.emulated:
            fam = self.family.upper()
            parts.append(f"EMULATED via ATREX_{fam}_EMULATE=1 (not real {fam} hardware)")
        return ", ".join(parts)


CPU = DeviceTarget(family="cpu", arch="cpu", name="cpu")


def classify_properties(
    *,
    name: str,
    capability: tuple[int, int] | None,
    cuda_version: str | None,
    hip_version: str | None = None,
    gcn_arch: str | None = None,
    sm_count: int = 0,
    devices: Sequence[DeviceRule] = (),
    emulate: Collection[str] = (),
    index: int | None = None,
) -> DeviceTarget:
    """The classification rule, in order: HIP, a plugin's exact product name, NVIDIA, unknown.

    ``devices``: the plugins' device rules (first match wins); ``emulate``: the families whose rules
    may claim their emulation hosts (``env.Settings.emulated_families``)."""
    name = (name or "").strip()
    cuda_runtime = f"cuda {cuda_version}" if cuda_version else None
    if hip_version:
        arch = (gcn_arch or "unknown").split(":", 1)[0] or "unknown"
        return DeviceTarget("amd", arch, name, capability, f"hip {hip_version}", sm_count, False, index)
    for rule in devices:
        if name in rule.products:
            return DeviceTarget(rule.family, rule.arch, name, capability, cuda_runtime, sm_count, False, index)
    if cuda_version and name.startswith("NVIDIA ") and capability is not None:
        arch = f"sm{capability[0]}{capability[1]}"
        host = f"nvidia/{arch}"
        for rule in devices:
            if rule.family in emulate and host in rule.emulated_on:
                return DeviceTarget(rule.family, rule.arch, name, capability, cuda_runtime, sm_count, True, index)
        return DeviceTarget("nvidia", arch, name, capability, cuda_runtime, sm_count, False, index)
    return DeviceTarget("unknown", "unknown", name, capability, cuda_runtime, sm_count, False, index)


#: torch.device -> DeviceTarget. Keyed by the device object itself (one dict lookup on the hot path).
_cache: dict = {}


@env.on_reload
def clear_cache() -> None:
    """Forget every classification (run by ``env.reload()``: the emulation settings may have changed)."""
    _cache.clear()


def classify_device(device) -> DeviceTarget:
    """Classify a ``torch.device`` (cached per device).

    A ``cuda`` device without an index means the current device: it is resolved on every call and
    never cached under the bare ``cuda`` key, so a later ``torch.cuda.set_device`` never returns
    another GPU's target. (Tensors always carry an index, so dispatch takes the one-lookup path.)
    """
    hit = _cache.get(device)
    if hit is not None:
        return hit
    if device.type == "cuda" and device.index is None:
        import torch

        return classify_device(torch.device("cuda", torch.cuda.current_device()))
    if device.type == "cpu":
        target = CPU
    elif device.type == "cuda":
        import torch

        index = device.index
        props = torch.cuda.get_device_properties(index)
        target = classify_properties(
            name=props.name,
            capability=(props.major, props.minor),
            cuda_version=torch.version.cuda,
            hip_version=getattr(torch.version, "hip", None),
            gcn_arch=getattr(props, "gcnArchName", None),
            sm_count=props.multi_processor_count,
            devices=registry.get_registry().device_rules,
            emulate=env.settings().emulated_families,
            index=index,
        )
    else:
        target = DeviceTarget("unknown", "unknown", device.type)
    _cache[device] = target
    return target
