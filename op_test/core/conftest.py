"""Shared fixtures for the CPU tier."""

from __future__ import annotations

import pytest

from atrex import env
from atrex.dispatch import registry


@pytest.fixture(autouse=True)
def _fresh_settings(monkeypatch):
    """Each test starts from the process environment, with caches cleared before and after."""
    env.reload()
    yield
    monkeypatch.undo()
    env.reload()
    registry.set_registry_for_tests(None)


