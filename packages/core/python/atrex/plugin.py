"""Types a vendor plugin uses to describe itself. Imports only the standard library.

A vendor wheel declares an entry point in the ``atrex.backends`` group whose value is a
zero-argument function returning a :class:`PluginManifest`::

    [project.entry-points."atrex.backends"]
    nvidia = "atrex_nvidia._plugin:plugin"

The manifest lists one :class:`ImplSpec` per implementation. ``check`` and ``run`` are
``"module:attr"`` strings so that discovery imports no kernel module. A vendor whose devices the
core's CUDA / HIP rules would misread (a CUDA-compatible runtime reporting another vendor's
capability) declares how to recognise them with :class:`DeviceRule` entries.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["OPS", "PLUGIN_API", "DeviceRule", "ImplSpec", "PluginManifest", "validate_manifest"]

#: The plugin API version this core speaks. A manifest with another value is refused.
PLUGIN_API = 1

#: Operator ids a plugin may implement.
OPS = ("flash_attn_varlen", "chunk_gated_delta_rule", "fused_recurrent_gated_delta_rule")

#: Target ids: ``cpu``, ``<family>/<arch>``, or ``*`` (every target; the core reference only).
_TARGET_RE = re.compile(r"^(cpu|\*|(nvidia|ppu|amd)/[a-z0-9_]+)$")
_REF_RE = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")
#: Names a vendor manifest may not take (``core.reference`` is the core's own implementation id).
_RESERVED = frozenset({"core"})


@dataclass(frozen=True, slots=True)
class ImplSpec:
    """One implementation of one operator.

    Attributes:
        op: operator id, one of :data:`OPS`.
        id: global id ``<plugin>.<name>`` (e.g. ``nvidia.fa4``).
        archs: target ids it serves, e.g. ``("nvidia/sm90", "nvidia/sm100")``.
        priority: lower wins; ties break on (plugin, id).
        check: ``"module:attr"`` of ``check(call) -> Eligibility`` (host-only, never launches). The verdict may
            depend only on the call record's host fields and its tensors' metadata (dtype, shape, strides, device,
            data-pointer alignment), never on tensor contents or identity: the operators reuse the implementation
            chosen for a call of the same class and per-call values (``atrex/api/_memo.py``).
        run: ``"module:attr"`` of the launcher; see the operator's API module for its signature.
        prewarm: optional ``"module:attr"`` of ``prewarm(call) -> None`` that compiles ahead.
        summary: one line for ``atrex env`` / ``explain``.
        bind: optional ``"module:attr"`` of ``bind(call) -> runner | None``, for the host cost of repeated eager
            calls. When an operator keeps this implementation for a record its memo served (``call.cls``) and the
            record's per-call key (lengths, capture state; for attention also q/k/v/out pointer alignment), it
            calls ``bind(call)`` once and then calls the returned ``runner`` (``run``'s signature) instead of
            ``run`` for every record served under that class and key. A runner must do exactly what ``run`` does
            for those records, checking itself anything else it depends on (other pointers, the current device)
            and falling back to ``run``; it must not hold the record it was bound with.
    """

    op: str
    id: str
    archs: tuple[str, ...]
    priority: int
    check: str
    run: str
    prewarm: str | None = None
    summary: str = ""
    bind: str | None = None


@dataclass(frozen=True, slots=True)
class DeviceRule:
    """How a plugin recognises one of its device archs.

    Attributes:
        family: the device family, one of the manifest's ``families`` (e.g. ``"ppu"``).
        arch: the arch it classifies as; the target id is ``<family>/<arch>``.
        products: exact product names as the runtime reports them (surrounding blanks stripped). No
            prefixes or patterns; checked before any capability rule, so a runtime that reports
            another vendor's capability is never taken for that vendor.
        emulated_on: target ids (e.g. ``"nvidia/sm90"``) that ``ATREX_<FAMILY>_EMULATE=1`` maps onto
            this arch, flagged ``emulated`` (to run the vendor's sources on hardware that is lent).
    """

    family: str
    arch: str
    products: tuple[str, ...] = ()
    emulated_on: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class PluginManifest:
    name: str
    plugin_api: int
    families: tuple[str, ...]
    impls: tuple[ImplSpec, ...]
    devices: tuple[DeviceRule, ...] = ()


def validate_manifest(manifest: object, entry_name: str) -> list[str]:
    """Return the problems of a manifest (empty when valid). Never raises, whatever the manifest holds."""
    if not isinstance(manifest, PluginManifest):
        return [f"factory returned {type(manifest).__name__}, expected atrex.plugin.PluginManifest"]
    problems = []
    if manifest.name != entry_name:
        problems.append(f"manifest name {manifest.name!r} differs from entry-point name {entry_name!r}")
    if isinstance(manifest.name, str) and manifest.name in _RESERVED:
        problems.append(f"plugin name {manifest.name!r} is reserved for atrex-core")
    if manifest.plugin_api != PLUGIN_API:
        problems.append(f"incompatible plugin_api {manifest.plugin_api!r} (this atrex-core speaks {PLUGIN_API})")
    if not isinstance(manifest.impls, (tuple, list)):
        problems.append(f"impls must be a tuple of ImplSpec, got {type(manifest.impls).__name__}")
        return problems
    seen = set()
    for spec in manifest.impls:
        if not isinstance(spec, ImplSpec):
            problems.append(f"impl entry {spec!r} is not an ImplSpec")
            continue
        if not isinstance(spec.id, str):
            problems.append(f"implementation id {spec.id!r} is not a string")
            continue
        if spec.op not in OPS:
            problems.append(f"{spec.id}: unknown op {spec.op!r} (known: {', '.join(OPS)})")
        if not isinstance(manifest.name, str) or not spec.id.startswith(f"{manifest.name}."):
            problems.append(f"{spec.id}: implementation id must start with '{manifest.name}.'")
        if (spec.op, spec.id) in seen:
            problems.append(f"{spec.id}: declared twice for {spec.op}")
        seen.add((spec.op, spec.id))
        archs = spec.archs if isinstance(spec.archs, (tuple, list)) else None
        bad = [a for a in archs or () if not isinstance(a, str) or not _TARGET_RE.match(a) or a == "*"]
        if bad or not archs:
            problems.append(f"{spec.id}: bad archs {spec.archs!r} (expected e.g. ('nvidia/sm90',))")
        for attr in ("check", "run", *(a for a in ("prewarm", "bind") if getattr(spec, a) is not None)):
            ref = getattr(spec, attr)
            if not isinstance(ref, str) or not _REF_RE.match(ref):
                problems.append(f"{spec.id}: {attr}={ref!r} is not 'module:attr'")
        if not isinstance(spec.priority, int) or isinstance(spec.priority, bool):
            problems.append(f"{spec.id}: priority must be an int")
    problems.extend(_device_problems(manifest))
    return problems


def _device_problems(manifest: PluginManifest) -> list[str]:
    devices = manifest.devices
    if not isinstance(devices, (tuple, list)):
        return [f"devices must be a tuple of DeviceRule, got {type(devices).__name__}"]
    problems = []
    families = manifest.families if isinstance(manifest.families, (tuple, list)) else ()
    for rule in devices:
        if not isinstance(rule, DeviceRule):
            problems.append(f"device entry {rule!r} is not a DeviceRule")
            continue
        target = f"{rule.family}/{rule.arch}"
        if rule.family not in families or not isinstance(rule.arch, str) or not _TARGET_RE.match(target):
            problems.append(f"device rule {target!r}: family must be one of the manifest's {families!r}, "
                            "arch lower-case letters, digits and '_'")
        products = rule.products if isinstance(rule.products, (tuple, list)) else None
        if products is None or any(not isinstance(n, str) or not n.strip() or n != n.strip() for n in products):
            problems.append(f"device rule {target!r}: products must be a tuple of exact, stripped names")
        hosts = rule.emulated_on if isinstance(rule.emulated_on, (tuple, list)) else None
        if hosts is None or any(not isinstance(h, str) or not _TARGET_RE.match(h) or h in ("*", "cpu")
                                for h in hosts):
            problems.append(f"device rule {target!r}: emulated_on must be a tuple of target ids like 'nvidia/sm90'")
        if products is not None and hosts is not None and not products and not hosts:
            problems.append(f"device rule {target!r} names no product and no emulation host")
    return problems
