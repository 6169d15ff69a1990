"""Types a vendor plugin uses to describe itself. Imports only the standard library.

A vendor wheel declares an entry point in the ``atrex.backends`` group whose value is a
zero-argument function returning a :class:`PluginManifest`::

    [project.entry-points."atrex.backends"]
    nvidia = "atrex_nvidia._plugin:plugin"

The manifest lists one :class:`ImplSpec` per implementation. ``check`` and ``run`` are
``"module:attr"`` strings so that discovery imports no kernel module.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["OPS", "PLUGIN_API", "ImplSpec", "PluginManifest", "validate_manifest"]

#: The plugin API version this core speaks. A manifest with another value is refused.
PLUGIN_API = 1

#: Operator ids a plugin may implement.
OPS = ("flash_attn_varlen", "chunk_gated_delta_rule")

#: Target ids: ``cpu``, ``<family>/<arch>``, or ``*`` (every target; the core reference only).
_TARGET_RE = re.compile(r"^(cpu|\*|(nvidia|ppu|amd)/[a-z0-9_]+)$")
_REF_RE = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")


@dataclass(frozen=True, slots=True)
class ImplSpec:
    """One implementation of one operator.

    Attributes:
        op: operator id, one of :data:`OPS`.
        id: global id ``<plugin>.<name>`` (e.g. ``nvidia.fa4``).
        archs: target ids it serves, e.g. ``("nvidia/sm90", "nvidia/sm100")``.
        priority: lower wins; ties break on (plugin, id).
        check: ``"module:attr"`` of ``check(call) -> Eligibility`` (host-only, never launches).
        run: ``"module:attr"`` of the launcher; see the operator's API module for its signature.
        prewarm: optional ``"module:attr"`` of ``prewarm(call) -> None`` that compiles ahead.
        summary: one line for ``atrex env`` / ``explain``.
    """

    op: str
    id: str
    archs: tuple[str, ...]
    priority: int
    check: str
    run: str
    prewarm: str | None = None
    summary: str = ""


@dataclass(frozen=True, slots=True)
class PluginManifest:
    name: str
    plugin_api: int
    families: tuple[str, ...]
    impls: tuple[ImplSpec, ...]


def validate_manifest(manifest: object, entry_name: str) -> list[str]:
    """Return the problems of a manifest (empty when valid)."""
    if not isinstance(manifest, PluginManifest):
        return [f"factory returned {type(manifest).__name__}, expected atrex.plugin.PluginManifest"]
    problems = []
    if manifest.name != entry_name:
        problems.append(f"manifest name {manifest.name!r} differs from entry-point name {entry_name!r}")
    if manifest.plugin_api != PLUGIN_API:
        problems.append(f"incompatible plugin_api {manifest.plugin_api!r} (this atrex-core speaks {PLUGIN_API})")
    seen = set()
    for spec in manifest.impls:
        if not isinstance(spec, ImplSpec):
            problems.append(f"impl entry {spec!r} is not an ImplSpec")
            continue
        if spec.op not in OPS:
            problems.append(f"{spec.id}: unknown op {spec.op!r} (known: {', '.join(OPS)})")
        if not spec.id.startswith(manifest.name + "."):
            problems.append(f"{spec.id}: implementation id must start with '{manifest.name}.'")
        if (spec.op, spec.id) in seen:
            problems.append(f"{spec.id}: declared twice for {spec.op}")
        seen.add((spec.op, spec.id))
        bad = [a for a in spec.archs if not _TARGET_RE.match(a) or a == "*"]
        if bad or not spec.archs:
            problems.append(f"{spec.id}: bad archs {spec.archs!r} (expected e.g. 'nvidia/sm90')")
        for attr in ("check", "run") + (("prewarm",) if spec.prewarm else ()):
            if not _REF_RE.match(getattr(spec, attr)):
                problems.append(f"{spec.id}: {attr}={getattr(spec, attr)!r} is not 'module:attr'")
        if not isinstance(spec.priority, int):
            problems.append(f"{spec.id}: priority must be an int")
    return problems
