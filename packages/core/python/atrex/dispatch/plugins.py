"""Plugin discovery through the ``atrex.backends`` entry-point group.

Every step (load, manifest validation, API-version check) is isolated: a failing plugin is
recorded with its distribution, version, state and one-line error, logged once, and skipped;
``import atrex`` and the other plugins keep working. ``ATREX_STRICT_PLUGINS=1`` raises instead.
Two distributions claiming one entry name are both refused.
"""

from __future__ import annotations

import importlib
import logging
from collections import defaultdict
from dataclasses import dataclass
from importlib import metadata

from atrex import env
from atrex.errors import AtrexPluginError
from atrex.plugin import PluginManifest, validate_manifest

__all__ = ["GROUP", "PluginRecord", "discover"]

GROUP = "atrex.backends"
log = logging.getLogger("atrex.plugins")


@dataclass
class PluginRecord:
    name: str
    value: str
    distribution: str | None
    version: str | None
    state: str  # loaded | failed | incompatible | duplicate
    error: str | None = None
    manifest: PluginManifest | None = None

    @property
    def ok(self) -> bool:
        return self.state == "loaded"

    def as_dict(self) -> dict:
        return {
            "name": self.name,
            "entry_point": self.value,
            "distribution": self.distribution,
            "version": self.version,
            "state": self.state,
            "error": self.error,
            "implementations": [s.id for s in self.manifest.impls] if self.manifest else [],
        }


class _Source:
    """An entry point, or an ``ATREX_EXTRA_PLUGINS`` item, reduced to what discovery needs."""

    def __init__(self, name: str, value: str, dist: str | None, version: str | None, loader):
        self.name, self.value, self.dist, self.version, self.load = name, value, dist, version, loader


def _entry_point_sources() -> list[_Source]:
    out, seen = [], set()
    for ep in metadata.entry_points(group=GROUP):
        dist = getattr(ep, "dist", None)
        dname = dist.metadata["Name"] if dist is not None else None
        dver = dist.version if dist is not None else None
        key = (ep.name, ep.value, dname)
        if key in seen:  # the same distribution visible twice on sys.path
            continue
        seen.add(key)
        out.append(_Source(ep.name, ep.value, dname, dver, ep.load))
    return out


def _extra_sources() -> list[_Source]:
    out = []
    for item in env.settings().extra_plugins:
        module, _, attr = item.partition(":")

        def loader(module=module, attr=attr):
            obj = importlib.import_module(module)
            for part in attr.split("."):
                obj = getattr(obj, part)
            return obj

        name = module.split(".")[0].removeprefix("atrex_")
        out.append(_Source(name, item, f"{module} (ATREX_EXTRA_PLUGINS)", None, loader))
    return out


def _fail(rec: PluginRecord, strict: bool) -> PluginRecord:
    log.warning("atrex plugin %r (%s %s) %s: %s", rec.name, rec.distribution, rec.version, rec.state, rec.error)
    if strict:
        raise AtrexPluginError(
            f"atrex plugin {rec.name!r} from {rec.distribution} {rec.version} is {rec.state}: {rec.error}"
            " (ATREX_STRICT_PLUGINS=1)"
        )
    return rec


def _one_line(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}".strip().splitlines()
    return text[0] if text else type(exc).__name__


def discover(sources: list | None = None) -> list[PluginRecord]:
    """Load every plugin; return one record per entry (loaded or not)."""
    strict = env.settings().strict_plugins
    if sources is None:
        sources = _entry_point_sources() + _extra_sources()
    by_name: dict[str, list] = defaultdict(list)
    for src in sources:
        by_name[src.name].append(src)
    records: list[PluginRecord] = []
    for name, group in by_name.items():
        if len(group) > 1:
            dists = ", ".join(f"{s.dist} {s.version}" for s in group)
            for src in group:
                records.append(_fail(PluginRecord(name, src.value, src.dist, src.version, "duplicate",
                                                  f"entry name {name!r} is claimed by several distributions: {dists}"),
                                     strict))
            continue
        src = group[0]
        rec = PluginRecord(name, src.value, src.dist, src.version, "loaded")
        try:
            factory = src.load()
            manifest = factory()
            problems = validate_manifest(manifest, name)
        # Isolation: any failure inside a plugin is recorded. SystemExit too: a vendor module
        # calling sys.exit() at import must not end the serving process.
        except (Exception, SystemExit) as exc:
            rec.state, rec.error = "failed", _one_line(exc)
            records.append(_fail(rec, strict))
            continue
        if problems:
            incompatible = any("plugin_api" in p for p in problems)
            rec.state = "incompatible" if incompatible else "failed"
            rec.error = "; ".join(problems)
            records.append(_fail(rec, strict))
            continue
        rec.manifest = manifest
        records.append(rec)
    return records
