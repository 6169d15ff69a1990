"""Every ``ATREX_*`` environment variable, parsed in one place.

Settings are read once, on first use, and cached (dispatch must stay within a few
microseconds). Call :func:`reload` after changing the environment in-process. This module imports
nothing from the rest of ATREX: what caches settings-derived state registers a callback with
:func:`on_reload`.

| Variable | Meaning |
|---|---|
| ``ATREX_STRICT_PLUGINS=1`` | a plugin that fails to load raises instead of being skipped |
| ``ATREX_EXTRA_PLUGINS=mod:attr,...`` | extra plugin factories (no entry point needed; development hosts) |
| ``ATREX_IMPL_<OP>=<id>`` | force one implementation for an operator, e.g. ``ATREX_IMPL_FLASH_ATTN_VARLEN=nvidia.fa4``; loud error if ineligible |
| ``ATREX_DISABLE=<id>,...`` | remove implementations from dispatch |
| ``ATREX_ALLOW_REFERENCE=1`` | allow the torch reference on an accelerator (never chosen silently) |
| ``ATREX_CHECK_VALUES=1`` | also check value-dependent preconditions (device->host reads; never under capture) |
| ``ATREX_PPU_EMULATE=1`` | let the PPU plugin claim the devices its device rule names as emulation hosts (an NVIDIA SM90 as ``ppu/zwm890p``), flagged emulated |
| ``ATREX_PPU_HGCC`` | path of the PPU compiler (HGCC) on a PPU host |
| ``ATREX_PPU_SDK`` | root of the PPU SDK headers on a PPU host |
| ``ATREX_CACHE_DIR`` | on-disk cache of compiled kernels (default ``~/.cache/atrex``) |
| ``ATREX_BENCH_COMMIT`` | commit recorded by ``atrex bench`` when the tree is not a git checkout (a copied tree on a test host) |
| ``ATREX_VLLM=0`` | the vLLM plugin (``atrex.integrations.vllm``) leaves vLLM untouched (default 1: on) |
| ``ATREX_VLLM_DISABLE=<op>,...`` | the vLLM plugin leaves these ops to vLLM: ``flash_attn``, ``gdn_prefill``, ``gdn_decode`` |
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["OPS", "Settings", "on_reload", "reload", "settings"]

#: Operator ids known to the core, with the suffix of their ``ATREX_IMPL_<OP>`` variable.
OPS: dict[str, str] = {
    "flash_attn_varlen": "FLASH_ATTN_VARLEN",
    "chunk_gated_delta_rule": "CHUNK_GATED_DELTA_RULE",
    "fused_recurrent_gated_delta_rule": "FUSED_RECURRENT_GATED_DELTA_RULE",
}

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"", "0", "false", "no", "off"}


def _flag(name: str) -> bool:
    raw = os.environ.get(name, "").strip().lower()
    if raw in _TRUE:
        return True
    if raw in _FALSE:
        return False
    raise ValueError(f"environment variable {name}={raw!r}: expected one of 0/1/true/false/yes/no/on/off")


def _list(name: str) -> tuple[str, ...]:
    return tuple(x.strip() for x in os.environ.get(name, "").split(",") if x.strip())


@dataclass(frozen=True)
class Settings:
    strict_plugins: bool = False
    extra_plugins: tuple[str, ...] = ()
    forced_impl: dict[str, str] = field(default_factory=dict)
    disabled: frozenset[str] = frozenset()
    allow_reference: bool = False
    check_values: bool = False
    ppu_emulate: bool = False
    ppu_hgcc: str | None = None
    ppu_sdk: str | None = None
    cache_dir: Path = field(default_factory=lambda: Path("~/.cache/atrex").expanduser())
    bench_commit: str | None = None
    vllm_enabled: bool = True
    vllm_disabled_ops: frozenset[str] = frozenset()

    @property
    def emulated_families(self) -> frozenset[str]:
        """Device families whose plugin may claim its emulation hosts (``ATREX_<FAMILY>_EMULATE=1``)."""
        return frozenset(("ppu",)) if self.ppu_emulate else frozenset()


def _read() -> Settings:
    forced = {}
    for op, suffix in OPS.items():
        val = os.environ.get(f"ATREX_IMPL_{suffix}", "").strip()
        if val:
            forced[op] = val
    return Settings(
        strict_plugins=_flag("ATREX_STRICT_PLUGINS"),
        extra_plugins=_list("ATREX_EXTRA_PLUGINS"),
        forced_impl=forced,
        disabled=frozenset(_list("ATREX_DISABLE")),
        allow_reference=_flag("ATREX_ALLOW_REFERENCE"),
        check_values=_flag("ATREX_CHECK_VALUES"),
        ppu_emulate=_flag("ATREX_PPU_EMULATE"),
        ppu_hgcc=os.environ.get("ATREX_PPU_HGCC") or None,
        ppu_sdk=os.environ.get("ATREX_PPU_SDK") or None,
        cache_dir=Path(os.environ.get("ATREX_CACHE_DIR") or "~/.cache/atrex").expanduser(),
        bench_commit=os.environ.get("ATREX_BENCH_COMMIT") or None,
        vllm_enabled=_flag("ATREX_VLLM") if os.environ.get("ATREX_VLLM", "").strip() else True,
        vllm_disabled_ops=frozenset(_list("ATREX_VLLM_DISABLE")),
    )


#: Replaced, never mutated, by reload(): the registry compares its identity on every dispatch to know
#: when to drop what it derived from the settings (no settings() call on the hot path).
_settings: Settings | None = None


def settings() -> Settings:
    global _settings
    if _settings is None:
        _settings = _read()
    return _settings


#: Called, in registration order, after every reload(): the dispatch modules drop what they derived.
_reload_hooks: list[Callable[[], None]] = []


def on_reload(hook: Callable[[], None]) -> Callable[[], None]:
    """Register ``hook`` to run after every :func:`reload` (a module's cache of settings-derived state)."""
    if hook not in _reload_hooks:
        _reload_hooks.append(hook)
    return hook


def reload() -> Settings:
    """Re-read the environment (tests, or a process that changed ``os.environ``)."""
    global _settings
    _settings = _read()
    for hook in tuple(_reload_hooks):
        hook()
    return _settings
