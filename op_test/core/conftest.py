"""Shared fixtures for the CPU tier."""

from __future__ import annotations

import os

import pytest

from atrex import env
from atrex.dispatch import registry


@pytest.fixture(autouse=True)
def _fresh_settings(monkeypatch):
    """Each test starts without ATREX_* settings (nox sets ATREX_STRICT_PLUGINS=1 for the session; tests
    that need a setting set it themselves), with caches cleared before and after. ``ATREX_CACHE_DIR`` stays: it is
    the temporary directory ``op_test/conftest.py`` points it at, so no test writes under the home directory."""
    for name in [n for n in os.environ if n.startswith("ATREX_") and n != "ATREX_CACHE_DIR"]:
        monkeypatch.delenv(name)
    env.reload()
    yield
    monkeypatch.undo()
    env.reload()
    registry.set_registry_for_tests(None)


