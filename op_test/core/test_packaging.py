"""Workspace packaging rules."""

from __future__ import annotations

from pathlib import Path

import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

ROOT = Path(__file__).resolve().parents[2]
MEMBERS = {"core": "atrex-core", "nvidia": "atrex-nvidia", "ppu": "atrex-ppu"}
ENTRY_POINTS = {"nvidia": ("nvidia", "atrex_nvidia._plugin:plugin"), "ppu": ("ppu", "atrex_ppu._plugin:plugin")}


def load(path: Path) -> dict:
    with path.open("rb") as f:
        return tomllib.load(f)


@pytest.fixture(scope="module")
def root() -> dict:
    return load(ROOT / "pyproject.toml")


def _version_tuple(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in v.split(".")[:3])


def _range(req: str, name: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """``name>=a,<b`` -> (a, b)."""
    spec = req.replace(" ", "")
    assert spec.startswith(name), req
    parts = spec[len(name):].split(",")
    lo = [p[2:] for p in parts if p.startswith(">=")]
    hi = [p[1:] for p in parts if p.startswith("<") and not p.startswith("<=")]
    assert lo and hi, f"{req!r}: expected a bounded range '{name}>=x,<y'"
    return _version_tuple(lo[0]), _version_tuple(hi[0])


@pytest.mark.parametrize("member", sorted(MEMBERS))
@pytest.mark.parametrize("name", ["LICENSE", "NOTICE"])
def test_license_copies_are_byte_identical(member, name):
    ref = (ROOT / name).read_bytes()
    assert ref.strip(), f"root {name} is empty"
    copy = ROOT / "packages" / member / name
    assert copy.is_file(), f"{copy} missing"
    assert copy.read_bytes() == ref, f"{copy} differs from the root {name}"


@pytest.mark.parametrize("member", sorted(MEMBERS))
def test_member_metadata(member):
    proj = load(ROOT / "packages" / member / "pyproject.toml")["project"]
    assert proj["name"] == MEMBERS[member]
    assert "version" in proj and "version" not in proj.get("dynamic", []), "each member has its own version"
    _version_tuple(proj["version"])
    assert proj["license"] == "Apache-2.0"
    assert set(proj.get("license-files", [])) >= {"LICENSE", "NOTICE"}


@pytest.mark.parametrize("member", ["nvidia", "ppu"])
def test_vendor_pins_a_compatible_core_range(member):
    proj = load(ROOT / "packages" / member / "pyproject.toml")["project"]
    core_version = _version_tuple(load(ROOT / "packages/core/pyproject.toml")["project"]["version"])
    [req] = [d for d in proj["dependencies"] if d.replace(" ", "").startswith("atrex-core")]
    lo, hi = _range(req, "atrex-core")
    assert lo <= core_version < hi, f"{member} pins {req!r}, core is {core_version}"


@pytest.mark.parametrize("member", ["nvidia", "ppu"])
def test_vendor_entry_points(member):
    proj = load(ROOT / "packages" / member / "pyproject.toml")["project"]
    eps = proj["entry-points"]["atrex.backends"]
    name, value = ENTRY_POINTS[member]
    assert eps == {name: value}
    module, _, attr = value.partition(":")
    path = ROOT / "packages" / member / "src" / (module.replace(".", "/") + ".py")
    assert path.is_file(), path
    assert f"def {attr}(" in path.read_text()


def test_core_has_no_entry_point_and_ships_the_cli():
    proj = load(ROOT / "packages/core/pyproject.toml")["project"]
    assert "atrex.backends" not in proj.get("entry-points", {})
    assert proj["scripts"]["atrex"] == "atrex.cli:main"


def test_root_meta_package_extras(root):
    proj = root["project"]
    assert proj["name"] == "atrex"
    extras = proj["optional-dependencies"]
    assert set(extras) >= {"nvidia", "ppu"}
    for extra in ("nvidia", "ppu"):
        dist = MEMBERS[extra]
        [req] = extras[extra]
        lo, hi = _range(req, dist)
        version = _version_tuple(load(ROOT / "packages" / extra / "pyproject.toml")["project"]["version"])
        assert lo <= version < hi, f"extra {extra}: {req!r} does not admit {dist} {version}"
    [core_req] = [d for d in proj["dependencies"] if d.replace(" ", "").startswith("atrex-core")]
    lo, hi = _range(core_req, "atrex-core")
    core_version = _version_tuple(load(ROOT / "packages/core/pyproject.toml")["project"]["version"])
    assert lo <= core_version < hi


def test_workspace_members_and_sources(root):
    uv = root["tool"]["uv"]
    assert sorted(uv["workspace"]["members"]) == sorted(f"packages/{m}" for m in MEMBERS)
    for dist in MEMBERS.values():
        assert uv["sources"][dist] == {"workspace": True}
    assert uv["python-downloads"] == "never"
    assert any("3.15" in e for e in uv["environments"])


def test_plain_uv_sync_installs_every_member(root):
    """`uv sync` / `uv run` in the workspace keep both vendor plugins (a default group names them)."""
    groups = root["dependency-groups"]
    default = root["tool"]["uv"]["default-groups"]
    named = {g for name in default for g in groups[name] if isinstance(g, str)}
    assert {"atrex-nvidia", "atrex-ppu"} <= named
    dev = (ROOT / "requirements-dev.txt").read_text()
    assert all(f"-e ./packages/{m}" in dev for m in MEMBERS)


def test_pytest_config(root):
    ini = root["tool"]["pytest"]["ini_options"]
    assert "--import-mode=importlib" in ini["addopts"]
    assert ini["pythonpath"][0] == "op_test"  # testlib, cases; then the vendor case-module folders
    assert all(p.startswith("op_test") for p in ini["pythonpath"])
