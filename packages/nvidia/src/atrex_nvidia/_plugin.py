"""The ``atrex.backends`` entry point of atrex-nvidia: a manifest, nothing heavy imported."""

from __future__ import annotations

from atrex.plugin import PLUGIN_API, ImplSpec, PluginManifest

IMPLS: tuple[ImplSpec, ...] = ()


def plugin() -> PluginManifest:
    return PluginManifest(name="nvidia", plugin_api=PLUGIN_API, families=("nvidia",), impls=IMPLS)
