"""Run a function right after a module is imported, without importing it (or at once if it already is).

The plugin patches vLLM modules that only worker processes import (the attention backend, the GatedDeltaNet layer).
Importing them from the plugin itself would load them into every vLLM process, the API server included; a
post-import hook patches each module in exactly the processes that import it, before any of its code runs a call.
"""

from __future__ import annotations

import importlib.abc
import sys
import threading
from collections.abc import Callable

from atrex.integrations.vllm._fallback import LOG

__all__ = ["pending", "when_imported"]

_pending: dict[str, list[Callable]] = {}
_lock = threading.RLock()


def when_imported(name: str, fn: Callable) -> None:
    """Call ``fn(module)`` once module ``name`` has executed: now when it is imported already, else right after its
    import. ``fn`` must not raise into the importer: an exception is logged and swallowed."""
    with _lock:
        module = sys.modules.get(name)
        if module is None:
            _pending.setdefault(name, []).append(fn)
            _install()
            return
    _call(name, fn, module)


def pending() -> dict[str, int]:
    """Module name -> hooks still waiting for its import (for status and tests)."""
    with _lock:
        return {k: len(v) for k, v in _pending.items() if v}


def _call(name: str, fn: Callable, module) -> None:
    try:
        fn(module)
    except Exception:  # a broken patch must never break vLLM's import
        LOG.exception("ATREX: patching %s failed; vLLM keeps its own kernels there", name)


def _run(name: str, module) -> None:
    with _lock:
        hooks = _pending.pop(name, [])
    for fn in hooks:
        _call(name, fn, sys.modules.get(name, module))


class _Loader(importlib.abc.Loader):
    """Wraps the real loader: execute the module, then run its hooks."""

    def __init__(self, inner, name: str):
        self._inner = inner
        self._name = name

    def create_module(self, spec):
        return self._inner.create_module(spec)

    def exec_module(self, module) -> None:
        module.__loader__ = self._inner  # later reloads and source lookups see the real loader
        if getattr(module, "__spec__", None) is not None:
            module.__spec__.loader = self._inner
        self._inner.exec_module(module)
        _run(self._name, module)

    def __getattr__(self, attr):
        return getattr(self._inner, attr)


class _Finder(importlib.abc.MetaPathFinder):
    """First on ``sys.meta_path``: for a hooked name, asks the other finders for the spec and wraps its loader."""

    def find_spec(self, fullname, path, target=None):
        with _lock:
            if not _pending.get(fullname):
                return None
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            if finder is self or find is None:
                continue
            spec = find(fullname, path, target)
            if spec is not None:
                break
        else:
            return None
        if spec.loader is not None and hasattr(spec.loader, "exec_module"):
            spec.loader = _Loader(spec.loader, fullname)
        return spec


_finder = _Finder()


def _install() -> None:
    if _finder not in sys.meta_path:
        sys.meta_path.insert(0, _finder)
