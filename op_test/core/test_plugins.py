"""Plugin discovery and isolation.

Fake distributions are real ``*.dist-info`` folders with an ``[atrex.backends]`` entry point,
put on ``PYTHONPATH`` (subprocess) or ``sys.path`` (in-process): a broken plugin is recorded with its
distribution, version, state and one-line error, and never breaks ``import atrex`` or other plugins.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import types
from pathlib import Path

import pytest

from atrex import env
from atrex.dispatch import plugins as P
from atrex.dispatch import registry
from atrex.errors import AtrexPluginError
from atrex.plugin import PLUGIN_API, DeviceRule, ImplSpec, PluginManifest, validate_manifest

HEADER = "from atrex.plugin import PLUGIN_API, ImplSpec, PluginManifest\n"


def _impl(plugin, name="x", op="flash_attn_varlen"):
    return (f"ImplSpec(op={op!r}, id='{plugin}.{name}', archs=('cpu',), priority=1, "
            f"check='fakeplug_impls:check_yes', run='fakeplug_impls:run_attn')")


def _factory(name, impls="()", api="PLUGIN_API"):
    return HEADER + textwrap.dedent(f"""
        def plugin():
            return PluginManifest(name={name!r}, plugin_api={api}, families=('nvidia',), impls={impls})
    """)


#: entry name -> (module source, expected state, a fragment of the one-line error)
CASES = {
    "fpgood": (_factory("fpgood", f"({_impl('fpgood')},)"), "loaded", None),
    "fpimporterr": ("raise ImportError('No module named vendor_sdk_runtime')\n", "failed",
                    "ImportError: No module named vendor_sdk_runtime"),
    "fpraises": (HEADER + "def plugin():\n    raise RuntimeError('factory exploded\\nsecond line')\n", "failed",
                 "RuntimeError: factory exploded"),
    "fpnotmanifest": ("def plugin():\n    return {'name': 'fpnotmanifest'}\n", "failed",
                      "factory returned dict, expected atrex.plugin.PluginManifest"),
    "fpapi": (_factory("fpapi", f"({_impl('fpapi')},)", api="999"), "incompatible", "plugin_api 999"),
    "fpbadop": (_factory("fpbadop", f"({_impl('fpbadop', op='matmul')},)"), "failed", "unknown op 'matmul'"),
    "fpprefix": (_factory("fpprefix", f"({_impl('nvidia')},)"), "failed", "must start with 'fpprefix.'"),
    "fpexit": ("import sys\nsys.exit(3)\n", "failed", "SystemExit: 3"),
    "fpbadarchs": (_factory("fpbadarchs", "(ImplSpec(op='flash_attn_varlen', id='fpbadarchs.x', archs=None, "
                                          "priority=1, check=None, run='m:f'),)"), "failed", "bad archs"),
    "core": (_factory("core", f"({_impl('core', 'reference')},)"), "failed", "reserved"),
}
DUP = "fpdup"


def _dist(site: Path, dist: str, entry: str, value: str, version="0.0.1"):
    info = site / f"{dist.replace('-', '_')}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
    (info / "entry_points.txt").write_text(f"[atrex.backends]\n{entry} = {value}\n")


@pytest.fixture(scope="module")
def fake_site(tmp_path_factory) -> Path:
    site = tmp_path_factory.mktemp("fake_site")
    for entry, (source, _, _) in CASES.items():
        module = f"fakeplug_{entry}"
        (site / f"{module}.py").write_text(source)
        _dist(site, f"atrex-fake-{entry}", entry, f"{module}:plugin")
    # two distributions claiming one entry name
    (site / "fakeplug_dup_a.py").write_text(_factory(DUP))
    (site / "fakeplug_dup_b.py").write_text(_factory(DUP))
    _dist(site, "atrex-fake-dup-a", DUP, "fakeplug_dup_a:plugin", "1.0")
    _dist(site, "atrex-fake-dup-b", DUP, "fakeplug_dup_b:plugin", "2.0")
    return site


def _clean_env(site: Path | None, **extra) -> dict:
    e = {k: v for k, v in os.environ.items() if not k.startswith("ATREX_")}
    if site is not None:
        e["PYTHONPATH"] = os.pathsep.join([str(site), *filter(None, [os.environ.get("PYTHONPATH")])])
    e.update(extra)
    return e


def _run(args, env_vars, timeout=120):
    return subprocess.run([sys.executable, *args], env=env_vars, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def env_json(fake_site):
    proc = _run(["-m", "atrex", "env", "--json"], _clean_env(fake_site))
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout), proc.stderr


def _by_name(report):
    out = {}
    for p in report["plugins"]:
        out.setdefault(p["name"], []).append(p)
    return out


# ------------------------------------------------------------------------------ subprocess: env


@pytest.mark.parametrize("entry", sorted(CASES))
def test_each_plugin_recorded(env_json, entry):
    report, stderr = env_json
    _, state, fragment = CASES[entry]
    [rec] = _by_name(report)[entry]
    assert rec["state"] == state
    assert rec["distribution"] == f"atrex-fake-{entry}" and rec["version"] == "0.0.1"
    assert rec["entry_point"] == f"fakeplug_{entry}:plugin"
    if fragment is None:
        assert rec["error"] is None
        assert rec["implementations"] == [f"{entry}.x"]
    else:
        assert fragment in rec["error"]
        assert "\n" not in rec["error"]  # one line
        assert rec["implementations"] == []
        # logged once, with distribution and version
        lines = [ln for ln in stderr.splitlines() if f"atrex plugin {entry!r}" in ln]
        assert len(lines) == 1, stderr
        assert f"atrex-fake-{entry} 0.0.1" in lines[0]


def test_duplicates_are_both_refused(env_json):
    report, _ = env_json
    recs = _by_name(report)[DUP]
    assert sorted(r["distribution"] for r in recs) == ["atrex-fake-dup-a", "atrex-fake-dup-b"]
    for r in recs:
        assert r["state"] == "duplicate"
        assert "atrex-fake-dup-a 1.0" in r["error"] and "atrex-fake-dup-b 2.0" in r["error"]
    ids = [i["id"] for lst in report["implementations"].values() for i in lst]
    assert not any(i.startswith(f"{DUP}.") for i in ids)


def test_others_keep_working(env_json):
    report, _ = env_json
    names = _by_name(report)
    for real, dist in (("nvidia", "atrex-nvidia"), ("ppu", "atrex-ppu")):
        [rec] = names[real]
        assert (rec["state"], rec["distribution"]) == ("loaded", dist)
    attn = {i["id"]: i for i in report["implementations"]["flash_attn_varlen"]}
    assert attn["fpgood.x"]["candidate_here"] and attn["fpgood.x"]["plugin"] == "fpgood"
    assert attn["core.reference"]["plugin"] == "core"
    # only the good plugin (and the core) contributed implementations; the reserved name took nothing
    fake = sorted(i for i in attn if not i.startswith(("nvidia.", "ppu.")))
    assert fake == ["core.reference", "fpgood.x"]
    assert report["target"]["id"] == "cpu"


def test_strict_plugins_raises(fake_site):
    proc = _run(["-m", "atrex", "env", "--json"], _clean_env(fake_site, ATREX_STRICT_PLUGINS="1"))
    assert proc.returncode != 0
    assert "AtrexPluginError" in proc.stderr and "ATREX_STRICT_PLUGINS=1" in proc.stderr
    assert proc.stdout == ""


def test_import_atrex_is_unaffected_by_broken_plugins(fake_site):
    code = "import atrex, sys; print(atrex.AtrexError.__name__, 'torch' in sys.modules)"
    proc = _run(["-c", code], _clean_env(fake_site, ATREX_STRICT_PLUGINS="1"))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["AtrexError", "False"]


# ------------------------------------------------------------------ in-process, same distributions


@pytest.fixture
def on_path(fake_site, monkeypatch):
    monkeypatch.syspath_prepend(str(fake_site))
    yield fake_site


def test_discover_in_process(on_path, caplog):
    with caplog.at_level("WARNING", logger="atrex.plugins"):
        records = P.discover()
    states = {}
    for r in records:
        states.setdefault(r.name, []).append(r.state)
    for entry, (_, state, _) in CASES.items():
        assert states[entry] == [state], entry
    assert states[DUP] == ["duplicate", "duplicate"]
    assert states["nvidia"] == ["loaded"] and states["ppu"] == ["loaded"]
    failed = sum(1 for _, s, _ in CASES.values() if s != "loaded") + 2
    assert len([r for r in caplog.records if r.name == "atrex.plugins"]) == failed


def test_text_env_shows_states(on_path):
    from click.testing import CliRunner

    from atrex.cli import main

    env.reload()
    result = CliRunner().invoke(main, ["env", "--device", "cpu"])
    assert result.exit_code == 0, result.output
    out = result.output
    assert "[incompatible]" in out and "[duplicate]" in out and "[failed]" in out
    assert "nvidia   atrex-nvidia" in out and "[loaded]" in out
    assert "ImportError: No module named vendor_sdk_runtime" in out
    assert "fpgood.x" in out


def test_registry_with_broken_plugins_still_dispatches(on_path, monkeypatch):
    import atrex
    from atrex.inputs import attn_inputs

    env.reload()
    reg = registry.get_registry()
    assert {p.name for p in reg.failed_plugins} >= {"fpimporterr", "fpraises", "fpapi", DUP}
    kw = attn_inputs([2], [9], num_heads_q=4, num_heads_k=2, head_dim=16)
    trace = atrex.explain_flash_attn_varlen_func(**kw)
    assert trace.chosen == "fpgood.x"
    assert "! plugin fpimporterr" in str(trace)
    # a refusal names the failed plugins too
    monkeypatch.setenv("ATREX_DISABLE", "fpgood.x,core.reference")
    env.reload()
    with pytest.raises(atrex.AtrexNotSupportedError) as info:
        atrex.flash_attn_varlen_func(**kw)
    assert "fpimporterr" in {p.name for p in info.value.failed_plugins}


def test_strict_in_process(on_path, monkeypatch):
    monkeypatch.setenv("ATREX_STRICT_PLUGINS", "1")
    env.reload()
    with pytest.raises(AtrexPluginError, match="ATREX_STRICT_PLUGINS=1"):
        P.discover()


# ------------------------------------------------------------------------ in-process, fake sources


def _src(name, factory=None, *, dist=None, version="1.0", load=None):
    def default_load():
        return factory

    return types.SimpleNamespace(name=name, value=f"{name}_mod:plugin", dist=dist or f"atrex-{name}",
                                 version=version, load=load or default_load)


def _manifest(name, *impls, api=PLUGIN_API):
    return lambda: PluginManifest(name, api, ("nvidia",), tuple(impls))


def _spec(impl_id, **over):
    kw = dict(op="flash_attn_varlen", id=impl_id, archs=("nvidia/sm90",), priority=1,
              check="fakeplug_impls:check_yes", run="fakeplug_impls:run_attn")
    kw.update(over)
    return ImplSpec(**kw)


def _boom():
    raise ImportError("cannot import name 'kernel' from 'vendor'")


def test_discover_fake_sources():
    recs = P.discover(sources=[
        _src("good", _manifest("good", _spec("good.a"))),
        _src("loadfail", load=_boom),
        _src("notcallable", 42),
        _src("renamed", _manifest("other", _spec("other.a"))),
        _src("api", _manifest("api", _spec("api.a"), api=0)),
        _src("dup", _manifest("dup"), dist="atrex-dup-one"),
        _src("dup", _manifest("dup"), dist="atrex-dup-two"),
        _src("twice", _manifest("twice", _spec("twice.a"), _spec("twice.a"))),
        _src("notspec", _manifest("notspec", "notspec.a")),
        _src("badref", _manifest("badref", _spec("badref.a", run="no colon"))),
        _src("badprio", _manifest("badprio", _spec("badprio.a", priority="1"))),
    ])
    by = {}
    for r in recs:
        by.setdefault(r.name, []).append(r)
    assert by["good"][0].ok and by["good"][0].manifest.impls[0].id == "good.a"
    assert by["good"][0].as_dict()["implementations"] == ["good.a"]
    expect = {
        "loadfail": ("failed", "ImportError: cannot import name 'kernel'"),
        "notcallable": ("failed", "TypeError"),
        "renamed": ("failed", "differs from entry-point name 'renamed'"),
        "api": ("incompatible", "incompatible plugin_api 0"),
        "twice": ("failed", "declared twice"),
        "notspec": ("failed", "is not an ImplSpec"),
        "badref": ("failed", "run='no colon' is not 'module:attr'"),
        "badprio": ("failed", "priority must be an int"),
    }
    for name, (state, fragment) in expect.items():
        [r] = by[name]
        assert r.state == state and fragment in r.error, (name, r.error)
        assert not r.ok and r.manifest is None
    assert [r.state for r in by["dup"]] == ["duplicate", "duplicate"]
    assert {r.distribution for r in by["dup"]} == {"atrex-dup-one", "atrex-dup-two"}
    reg = registry.build_registry(recs)
    assert [i.id for i in reg.candidates("flash_attn_varlen", "nvidia/sm90")] == ["good.a", "core.reference"]
    assert len(reg.failed_plugins) == len(recs) - 1


def test_extra_plugins_env(monkeypatch):
    monkeypatch.setenv("ATREX_EXTRA_PLUGINS", "atrex_nvidia._plugin:plugin")
    env.reload()
    recs = P.discover()
    # the installed entry point and the extra item claim the same name: both refused
    nv = [r for r in recs if r.name == "nvidia"]
    assert len(nv) == 2 and {r.state for r in nv} == {"duplicate"}
    monkeypatch.setenv("ATREX_EXTRA_PLUGINS", "fakeplug_impls_nowhere:plugin")
    env.reload()
    [extra] = [r for r in P.discover() if "ATREX_EXTRA_PLUGINS" in (r.distribution or "")]
    assert extra.state == "failed" and "ModuleNotFoundError" in extra.error


def test_validate_manifest_never_raises():
    weird = PluginManifest(name=["x"], plugin_api=PLUGIN_API, families=(), impls=None)  # type: ignore[arg-type]
    problems = validate_manifest(weird, "x")
    assert any("impls must be a tuple" in p for p in problems)
    assert validate_manifest(PluginManifest("ok", PLUGIN_API, ("nvidia",), ()), "ok") == []


@pytest.mark.parametrize(("bind", "problem"), [(None, None), ("m.n:f", None), ("m.f", "bind='m.f'"),
                                               (3, "bind=3")])
def test_validate_manifest_checks_bind(bind, problem):
    spec = ImplSpec("flash_attn_varlen", "ok.x", ("cpu",), 1, "m:check", "m:run", bind=bind)
    problems = validate_manifest(PluginManifest("ok", PLUGIN_API, ("nvidia",), (spec,)), "ok")
    assert problems == [] if problem is None else any(problem in p for p in problems), problems


@pytest.mark.parametrize(("rule", "problem"), [
    (DeviceRule("ppu", "x1", ("X1",)), None),
    (DeviceRule("ppu", "x1", (), ("nvidia/sm90",)), None),
    (DeviceRule("nvidia", "x1", ("X1",)), "family must be one of"),
    (DeviceRule("ppu", "X 1", ("X1",)), "arch lower-case"),
    (DeviceRule("ppu", "x1", ("X1 ",)), "exact, stripped names"),
    (DeviceRule("ppu", "x1", "X1"), "exact, stripped names"),  # type: ignore[arg-type]
    (DeviceRule("ppu", "x1", ("X1",), ("sm90",)), "emulated_on"),
    (DeviceRule("ppu", "x1"), "names no product"),
    ("ZW", "not a DeviceRule"),
])
def test_validate_device_rules(rule, problem):
    """A plugin's device rules: its own family, exact stripped product names, target ids as emulation hosts."""
    problems = validate_manifest(PluginManifest("ppu", PLUGIN_API, ("ppu",), (), (rule,)), "ppu")
    if problem is None:
        assert problems == []
    else:
        assert len(problems) == 1 and problem in problems[0], problems


# ------------------------------------------------------------------------ the real distributions


def test_real_distributions_load():
    recs = {r.name: r for r in P.discover()}
    assert recs["nvidia"].state == "loaded" and recs["nvidia"].distribution == "atrex-nvidia"
    assert recs["ppu"].state == "loaded" and recs["ppu"].distribution == "atrex-ppu"
    for r in recs.values():
        assert r.ok, r.as_dict()
        assert all(s.id.startswith(f"{r.name}.") for s in r.manifest.impls)
    assert "nvidia" in recs["nvidia"].manifest.families and "ppu" in recs["ppu"].manifest.families
    assert [d.products for d in recs["ppu"].manifest.devices] == [("ZW-M890P",)]
