"""Registry and selection with fake plugins (docs/errors.md).

The fake implementations live in ``op_test/fakeplug_impls.py``; their check/run strings point there.
"""

from __future__ import annotations

import fakeplug_impls as F
import pytest
import torch

import atrex
from atrex import env
from atrex.api import chunk_gdn as gdn_api
from atrex.api import flash_attn as attn_api
from atrex.api.chunk_gdn import normalize_gdn_call
from atrex.api.flash_attn import normalize_flash_attn_call
from atrex.dispatch import registry
from atrex.dispatch.plugins import PluginRecord
from atrex.dispatch.registry import Registry, build_registry
from atrex.dispatch.target import DeviceTarget
from atrex.eligibility import Eligibility
from atrex.errors import AtrexError, AtrexNotSupportedError
from atrex.inputs import attn_inputs, gdn_inputs
from atrex.plugin import PLUGIN_API, ImplSpec, PluginManifest

OP = "flash_attn_varlen"
GDN = "chunk_gated_delta_rule"
M = "fakeplug_impls"
SM90 = DeviceTarget("nvidia", "sm90", "NVIDIA H200", (9, 0), "cuda 13.0", 132, False, 0)
EMU = DeviceTarget("ppu", "zwm890p", "NVIDIA H200", (9, 0), "cuda 13.0", 132, True, 0)


def spec(impl_id, prio, check="check_yes", *, op=OP, archs=("cpu",), run=None, prewarm=None, bind=None):
    return ImplSpec(op=op, id=impl_id, archs=archs, priority=prio, check=f"{M}:{check}",
                    run=f"{M}:{run or ('run_attn' if op == OP else 'run_gdn')}",
                    prewarm=f"{M}:{prewarm}" if prewarm else None, summary=f"fake {impl_id}",
                    bind=f"{M}:{bind}" if bind else None)


def record(name, *impls, state="loaded", error=None):
    manifest = PluginManifest(name, PLUGIN_API, ("nvidia",), tuple(impls)) if state == "loaded" else None
    return PluginRecord(name, f"{name}_pkg._plugin:plugin", f"atrex-{name}", "9.9.9", state, error, manifest)


BROKEN = record("broken", state="failed", error="ImportError: No module named 'broken_kernels'")


def install(*records) -> Registry:
    """Build a registry from fake records and make it the process registry (call after env.reload())."""
    reg = build_registry(list(records))
    registry.set_registry_for_tests(reg)
    return reg


def setenv(monkeypatch, **values):
    for k, v in values.items():
        monkeypatch.setenv(k, v)
    env.reload()  # also drops the registry: install() afterwards


@pytest.fixture(autouse=True)
def _reset_fake_calls():
    F.reset()
    yield
    F.reset()


@pytest.fixture(scope="module")
def attn_kw():
    return attn_inputs([1, 3], [40, 7], num_heads_q=8, num_heads_k=2, head_dim=32, page_size=16, seed=1)


@pytest.fixture
def attn_call(attn_kw):
    return normalize_flash_attn_call(**attn_kw)


@pytest.fixture(scope="module")
def gdn_kw():
    return gdn_inputs([10, 1, 7], num_heads=2, num_v_heads=4, head_k_dim=16, head_v_dim=16)


@pytest.fixture
def gdn_call(gdn_kw):
    return normalize_gdn_call(**gdn_kw)


def ordered_registry():
    return install(
        record("beta", spec("beta.c", 10), spec("beta.a", 5, "check_no")),
        record("alpha", spec("alpha.z", 20), spec("alpha.b", 10), spec("alpha.a", 10, "check_no")),
        record("gamma", spec("gamma.other_op", 0, op=GDN)),
        record("delta", spec("delta.sm90_only", 0, archs=("nvidia/sm90",))),
    )


# ------------------------------------------------------------------------------------------ order


def test_candidates_ordered_by_priority_plugin_id(attn_call):
    reg = ordered_registry()
    ids = [i.id for i in reg.candidates(OP, "cpu")]
    assert ids == ["beta.a", "alpha.a", "alpha.b", "beta.c", "alpha.z", "core.reference"]
    # Another target and another operator have their own lists.
    assert [i.id for i in reg.candidates(OP, "nvidia/sm90")] == ["delta.sm90_only", "core.reference"]
    assert [i.id for i in reg.candidates(GDN, "cpu")] == ["gamma.other_op", "core.reference"]
    assert [i.id for i in reg.candidates(OP, "ppu/zwm890p")] == ["core.reference"]
    assert reg.find(OP, "alpha.b").plugin == "alpha"
    assert reg.find(OP, "gamma.other_op") is None


def test_first_eligible_wins(attn_call):
    reg = ordered_registry()
    chosen = reg.select(OP, attn_call)
    assert chosen.id == "alpha.b"
    # beta.a and alpha.a declined first, nothing after the winner was consulted.
    assert F.CALLS == [("check", "no"), ("check", "no"), ("check", "yes")]


def test_selection_goes_through_the_public_operator(attn_kw):
    install(record("alpha", spec("alpha.fake", 1)))
    out = atrex.flash_attn_varlen_func(**attn_kw)
    assert ("run", "attn") in F.CALLS
    assert torch.count_nonzero(out) == 0  # the fake wrote zeros: the reference did not run
    assert atrex.can_use_flash_attn_varlen_func(**attn_kw) is True


def test_reference_is_the_last_resort_on_cpu(attn_call, attn_kw):
    reg = install(record("alpha", spec("alpha.a", 1, "check_no")))
    assert reg.select(OP, attn_call).id == "core.reference"
    assert atrex.can_use_flash_attn_varlen_func(**attn_kw) is True  # CPU: the reference counts


def test_domain_boundary_on_a_host_int(attn_kw):
    install(record("alpha", spec("alpha.small", 1, "check_small_heads")))
    call4 = normalize_flash_attn_call(**attn_inputs([2], [9], num_heads_q=4, num_heads_k=2, head_dim=16))
    call8 = normalize_flash_attn_call(**attn_kw)
    reg = registry.get_registry()
    assert reg.select(OP, call4).id == "alpha.small"
    assert reg.select(OP, call8).id == "core.reference"


# --------------------------------------------------------------------------------- ATREX_DISABLE


def test_disable_removes(monkeypatch, attn_call):
    setenv(monkeypatch, ATREX_DISABLE="alpha.b, beta.c")
    reg = ordered_registry()
    assert [i.id for i in reg.candidates(OP, "cpu")] == ["beta.a", "alpha.a", "alpha.z", "core.reference"]
    assert reg.select(OP, attn_call).id == "alpha.z"
    trace = reg.explain(OP, attn_call)
    text = str(trace)
    assert "disabled (ATREX_DISABLE)" in text
    rows = {c["id"]: c for c in trace.as_dict()["candidates"]}
    assert rows["alpha.b"]["eligible"] is None and "disabled" in rows["alpha.b"]["note"]
    assert rows["alpha.z"]["note"] == "CHOSEN"
    assert trace.chosen == "alpha.z"


def test_disabling_everything_names_the_disabled(monkeypatch, attn_call):
    setenv(monkeypatch, ATREX_DISABLE="alpha.a,core.reference")
    reg = install(record("alpha", spec("alpha.a", 1)))
    with pytest.raises(AtrexNotSupportedError) as info:
        reg.select(OP, attn_call)
    assert "disabled by ATREX_DISABLE: alpha.a, core.reference" in str(info.value)
    assert info.value.rejections == []


# -------------------------------------------------------------------------------- ATREX_IMPL_<OP>


def test_force_picks_a_lower_priority_one(monkeypatch, attn_call):
    setenv(monkeypatch, ATREX_IMPL_FLASH_ATTN_VARLEN="alpha.z")
    reg = ordered_registry()
    assert reg.select(OP, attn_call).id == "alpha.z"
    assert F.CALLS == [("check", "yes")]  # only the forced one is consulted
    trace = reg.explain(OP, attn_call)
    assert trace.forced == "alpha.z" and trace.chosen == "alpha.z"
    text = str(trace)
    assert "forced by ATREX_IMPL_FLASH_ATTN_VARLEN=alpha.z" in text
    assert "skipped: ATREX_IMPL_FLASH_ATTN_VARLEN=alpha.z" in text
    assert text.rstrip().endswith("=> alpha.z")


def test_force_only_applies_to_its_operator(monkeypatch, gdn_call):
    setenv(monkeypatch, ATREX_IMPL_FLASH_ATTN_VARLEN="alpha.z")
    reg = ordered_registry()
    assert reg.select(GDN, gdn_call).id == "gamma.other_op"


def test_forced_ineligible_fails_loudly(monkeypatch, attn_call, attn_kw):
    setenv(monkeypatch, ATREX_IMPL_FLASH_ATTN_VARLEN="beta.a")
    reg = install(record("beta", spec("beta.a", 5, "check_no")), BROKEN)
    with pytest.raises(AtrexNotSupportedError) as info:
        reg.select(OP, attn_call)
    err = info.value
    assert isinstance(err, NotImplementedError)
    assert "beta.a" in str(err) and "ATREX_IMPL_FLASH_ATTN_VARLEN" in str(err) and "[fake.never]" in str(err)
    assert [i for i, _ in err.rejections] == ["beta.a"]
    assert err.failed_plugins == [BROKEN]
    # ...never a silent fallback onto the reference, through the public API too.
    with pytest.raises(AtrexNotSupportedError):
        atrex.flash_attn_varlen_func(**attn_kw)
    assert atrex.can_use_flash_attn_varlen_func(**attn_kw) is False
    assert reg.explain(OP, attn_call).chosen is None


def test_forced_overrides_a_policy_reason_only(monkeypatch, attn_call):
    """policy.* reasons are preferences: unforced dispatch skips the impl, forcing runs it; a forced
    impl with any domain reason still refuses (previous test)."""
    env.reload()
    reg = install(record("beta", spec("beta.p", 5, "check_policy_only"), spec("beta.y", 6)))
    assert reg.select(OP, attn_call).id == "beta.y"
    setenv(monkeypatch, ATREX_IMPL_FLASH_ATTN_VARLEN="beta.p")
    reg = install(record("beta", spec("beta.p", 5, "check_policy_only"), spec("beta.y", 6)))
    assert reg.select(OP, attn_call).id == "beta.p"
    trace = reg.explain(OP, attn_call)
    assert trace.chosen == "beta.p" and "forced over its policy" in str(trace)


def test_forced_unknown_fails_loudly(monkeypatch, attn_call):
    setenv(monkeypatch, ATREX_IMPL_FLASH_ATTN_VARLEN="nvidia.nope")
    reg = ordered_registry()
    with pytest.raises(AtrexNotSupportedError, match="names no registered implementation") as info:
        reg.select(OP, attn_call)
    assert "alpha.b" in str(info.value) and "core.reference" in str(info.value)
    assert reg.explain(OP, attn_call).chosen is None


def test_forced_for_another_target_fails_loudly(monkeypatch, attn_call):
    setenv(monkeypatch, ATREX_IMPL_FLASH_ATTN_VARLEN="delta.sm90_only")
    reg = ordered_registry()
    with pytest.raises(AtrexNotSupportedError, match="does not serve target cpu"):
        reg.select(OP, attn_call)
    assert F.CALLS == []
    # explain agrees with select: nothing is chosen
    assert reg.explain(OP, attn_call).chosen is None
    assert reg.select(OP, attn_call._replace(target=SM90)).id == "delta.sm90_only"


def test_forced_reference_on_cpu(monkeypatch, attn_call):
    setenv(monkeypatch, ATREX_IMPL_FLASH_ATTN_VARLEN="core.reference")
    reg = ordered_registry()
    assert reg.select(OP, attn_call).is_reference


# ---------------------------------------------------------------------------- not-supported error


def test_not_supported_carries_every_reason(attn_call):
    reg = install(
        record("nvidia", spec("nvidia.a", 1, "check_two_reasons", archs=("nvidia/sm90",)),
               spec("nvidia.b", 2, "check_no", archs=("nvidia/sm90",))),
        BROKEN,
    )
    call = attn_call._replace(target=SM90)
    with pytest.raises(AtrexNotSupportedError) as info:
        reg.select(OP, call)
    err = info.value
    assert isinstance(err, NotImplementedError) and isinstance(err, AtrexError)
    assert err.op == OP and err.target == "nvidia/sm90"
    assert [i for i, _ in err.rejections] == ["nvidia.a", "nvidia.b", "core.reference"]
    codes = {i: [r.code for r in e.reasons] for i, e in err.rejections}
    assert codes == {"nvidia.a": ["dtype", "head_dim"], "nvidia.b": ["fake.never"],
                     "core.reference": ["reference_on_accelerator"]}
    assert all(isinstance(e, Eligibility) and not e.ok for _, e in err.rejections)
    assert err.failed_plugins == [BROKEN]
    msg = str(err)
    for needle in ("nvidia/sm90", "NVIDIA H200", "[dtype]", "[head_dim]", "[fake.never]",
                   "[reference_on_accelerator]", "plugin broken (atrex-broken 9.9.9) failed",
                   "No module named 'broken_kernels'"):
        assert needle in msg, needle


def test_not_supported_names_the_extra_when_no_vendor_impl(attn_call):
    reg = install()
    with pytest.raises(AtrexNotSupportedError) as info:
        reg.select(OP, attn_call._replace(target=SM90))
    assert "pip install 'atrex[nvidia]'" in str(info.value)
    with pytest.raises(AtrexNotSupportedError) as info:
        reg.select(OP, attn_call._replace(target=EMU))
    assert "atrex[ppu]" in str(info.value) and "EMULATED" in str(info.value)


def test_unknown_target_has_only_the_declining_reference(attn_call):
    reg = install(record("alpha", spec("alpha.a", 1)))
    unknown = DeviceTarget("unknown", "unknown", "Some Vendor X1", (9, 0), "cuda 13.0")
    with pytest.raises(AtrexNotSupportedError) as info:
        reg.select(OP, attn_call._replace(target=unknown))
    assert info.value.target == "unknown"
    assert [i for i, _ in info.value.rejections] == ["core.reference"]


# ------------------------------------------------------------------------------ broken checks


def test_check_that_raises_becomes_a_reason(attn_call):
    reg = install(record("alpha", spec("alpha.boom", 1, "check_raises"), spec("alpha.ok", 2)))
    assert reg.select(OP, attn_call).id == "alpha.ok"
    elig = reg.find(OP, "alpha.boom").safe_check(attn_call)
    assert not elig.ok and elig.reasons[0].code == "check_failed"
    assert "kaboom" in str(elig.reasons[0].got) and elig.reasons[0].argument == "alpha.boom"


def test_check_that_returns_a_non_eligibility_becomes_a_reason(attn_call):
    reg = install(record("alpha", spec("alpha.bool", 1, "check_returns_bool"), spec("alpha.ok", 2)))
    assert reg.select(OP, attn_call).id == "alpha.ok"
    elig = reg.find(OP, "alpha.bool").safe_check(attn_call)
    assert not elig.ok and elig.reasons[0].code == "check_failed" and "bool" in str(elig.reasons[0].got)


def test_check_that_cannot_be_imported_becomes_a_reason(attn_call):
    bad = ImplSpec(op=OP, id="alpha.gone", archs=("cpu",), priority=1, check="fakeplug_nowhere:check",
                   run=f"{M}:run_attn")
    reg = install(record("alpha", bad))
    assert reg.select(OP, attn_call).is_reference
    trace = reg.explain(OP, attn_call)
    row = trace.as_dict()["candidates"][0]
    assert row["id"] == "alpha.gone" and row["eligible"] is False
    assert row["reasons"][0]["code"] == "check_failed" and "fakeplug_nowhere" in row["reasons"][0]["got"]


# ------------------------------------------------------------------------------------- explain


def test_explain_shows_every_candidate(monkeypatch, attn_call):
    setenv(monkeypatch, ATREX_DISABLE="beta.c")
    reg = ordered_registry()
    reg.plugins.append(BROKEN)
    trace = reg.explain(OP, attn_call)
    text = str(trace)
    assert text.splitlines()[0].startswith("flash_attn_varlen on cpu")
    for impl_id in ("beta.a", "alpha.a", "alpha.b", "beta.c", "alpha.z", "core.reference"):
        assert impl_id in text
    assert "[fake.never]" in text and "declined" in text
    assert "CHOSEN" in text and "disabled (ATREX_DISABLE)" in text
    assert "! plugin broken" in text
    assert text.rstrip().endswith("=> alpha.b")
    d = trace.as_dict()
    assert d["op"] == OP and d["target"] == "cpu" and d["chosen"] == "alpha.b" and d["forced"] is None
    assert [c["id"] for c in d["candidates"]] == ["beta.a", "alpha.a", "alpha.b", "beta.c", "alpha.z",
                                                  "core.reference"]
    notes = {c["id"]: c["note"] for c in d["candidates"]}
    assert notes["alpha.b"] == "CHOSEN" and notes["alpha.z"] == "" and notes["core.reference"] == ""
    assert [r["code"] for r in d["candidates"][0]["reasons"]] == ["fake.never"]
    assert d["failed_plugins"][0]["name"] == "broken" and d["failed_plugins"][0]["state"] == "failed"
    # explain runs nothing
    assert not any(kind == "run" for kind, _ in F.CALLS)


def test_explain_not_supported(attn_call):
    reg = install(record("nvidia", spec("nvidia.a", 1, "check_no", archs=("nvidia/sm90",))))
    trace = reg.explain(OP, attn_call._replace(target=SM90))
    assert trace.chosen is None and str(trace).rstrip().endswith("=> NOT SUPPORTED")
    assert "[reference_on_accelerator]" in str(trace)


def test_explain_without_candidates_and_emulated(attn_call):
    reg = install()
    registry.get_registry()
    trace = reg.explain(OP, attn_call._replace(target=DeviceTarget("amd", "gfx942", "AMD Instinct MI300X")))
    assert trace.chosen is None
    # the reference serves every target ("*"), so there is always at least that row
    assert [r[0] for r in trace.rows] == ["core.reference"]
    emu = str(reg.explain(OP, attn_call._replace(target=EMU)))
    assert "EMULATED" in emu


def test_public_explain_matches_select(attn_kw):
    install(record("alpha", spec("alpha.a", 1, "check_no"), spec("alpha.b", 2)))
    trace = atrex.explain_flash_attn_varlen_func(**attn_kw)
    assert trace.chosen == "alpha.b"
    assert F.CALLS.count(("run", "attn")) == 0


# ---------------------------------------------------------- the reference on an accelerator target


def test_reference_on_accelerator_needs_allow(monkeypatch, attn_call):
    reg = install()
    ref = reg.find(OP, "core.reference")
    call = attn_call._replace(target=SM90)
    assert not ref.safe_check(call).ok
    setenv(monkeypatch, ATREX_ALLOW_REFERENCE="1")
    reg = install()
    chosen = reg.select(OP, call)
    assert chosen.is_reference and call.target.is_accelerator  # can_use_* counts this as False
    assert reg.find(GDN, "core.reference").is_reference


@pytest.fixture
def fake_sm90(monkeypatch):
    """Make the API modules classify every device as an H200 (the tensors stay on the CPU)."""
    monkeypatch.setattr(attn_api, "classify_device", lambda device: SM90)
    monkeypatch.setattr(gdn_api, "classify_device", lambda device: SM90)
    # no CUDA driver here: capture detection must not touch the runtime for these CPU tensors
    monkeypatch.setattr(torch.cuda, "is_current_stream_capturing", lambda: False)


@pytest.mark.parametrize("allow", ["0", "1"])
def test_can_use_ignores_the_reference_on_an_accelerator(monkeypatch, fake_sm90, attn_kw, gdn_kw, allow):
    setenv(monkeypatch, ATREX_ALLOW_REFERENCE=allow)
    install()
    assert atrex.explain_flash_attn_varlen_func(**attn_kw).target.id == "nvidia/sm90"  # the fake took effect
    assert atrex.can_use_flash_attn_varlen_func(**attn_kw) is False
    assert atrex.can_use_chunk_gated_delta_rule(**gdn_kw) is False
    expected = "core.reference" if allow == "1" else None
    assert atrex.explain_flash_attn_varlen_func(**attn_kw).chosen == expected
    assert atrex.explain_chunk_gated_delta_rule(**gdn_kw).chosen == expected


def test_can_use_counts_a_vendor_impl_on_an_accelerator(monkeypatch, fake_sm90, attn_kw, gdn_kw):
    install(record("nvidia", spec("nvidia.fake", 1, archs=("nvidia/sm90",)),
                   spec("nvidia.gdn", 1, op=GDN, archs=("nvidia/sm90",))))
    assert atrex.can_use_flash_attn_varlen_func(**attn_kw) is True
    assert atrex.can_use_chunk_gated_delta_rule(**gdn_kw) is True
    out = atrex.flash_attn_varlen_func(**attn_kw)
    assert torch.count_nonzero(out) == 0 and ("run", "attn") in F.CALLS
    _, state = atrex.chunk_gated_delta_rule(**gdn_kw)
    assert ("run", "gdn") in F.CALLS and state is None


def test_operator_refuses_on_accelerator_without_vendor_impl(fake_sm90, attn_kw):
    install(BROKEN)
    with pytest.raises(AtrexNotSupportedError) as info:
        atrex.flash_attn_varlen_func(**attn_kw)
    assert info.value.target == "nvidia/sm90"
    assert [i for i, _ in info.value.rejections] == ["core.reference"]
    assert info.value.failed_plugins == [BROKEN]
    assert "atrex[nvidia]" in str(info.value)


# ----------------------------------------------------------------------------------- GDN, prewarm


def test_gdn_selection(gdn_call):
    reg = install(record("alpha", spec("alpha.g1", 3, "check_small_heads", op=GDN),
                         spec("alpha.g0", 1, "check_no", op=GDN)))
    assert [i.id for i in reg.candidates(GDN, "cpu")] == ["alpha.g0", "alpha.g1", "core.reference"]
    assert reg.select(GDN, gdn_call).id == "alpha.g1"  # 2 q/k heads


def test_prewarm_uses_the_selected_impl(attn_kw):
    install(record("alpha", spec("alpha.warm", 1, prewarm="prewarm_noop")))
    assert atrex.prewarm("flash_attn_varlen", [attn_kw, attn_kw]) == [("alpha.warm", "compiled")] * 2
    assert F.CALLS.count(("prewarm", "noop")) == 2
    install()
    assert atrex.prewarm("flash_attn_varlen_func", [attn_kw]) == [("core.reference", "nothing to compile")]


def test_env_reload_drops_the_registry():
    reg = install()
    assert registry.get_registry() is reg
    env.reload()
    assert registry.get_registry() is not reg


def test_a_held_registry_follows_env_reload_without_reading_settings_per_call(monkeypatch, attn_call):
    """select() caches what it derives from ATREX_DISABLE / ATREX_IMPL_<OP> and re-derives it once the
    settings object changes (env.reload()), even on a registry object kept across the reload."""
    reg = install(record("alpha", spec("alpha.a", 1), spec("alpha.b", 2)))
    assert reg.select(OP, attn_call).id == "alpha.a"
    monkeypatch.setenv("ATREX_DISABLE", "alpha.a")
    env.reload()
    assert reg.select(OP, attn_call).id == "alpha.b"
    assert [i.id for i in reg.candidates(OP, "cpu")] == ["alpha.b", "core.reference"]
    monkeypatch.setenv("ATREX_IMPL_FLASH_ATTN_VARLEN", "core.reference")
    env.reload()
    assert reg.select(OP, attn_call).is_reference
    monkeypatch.delenv("ATREX_DISABLE")
    monkeypatch.delenv("ATREX_IMPL_FLASH_ATTN_VARLEN")
    env.reload()
    assert reg.select(OP, attn_call).id == "alpha.a"

    def no_settings_on_the_hot_path():
        raise AssertionError("select() read the settings although they did not change")

    monkeypatch.setattr(env, "settings", no_settings_on_the_hot_path)
    assert reg.select(OP, attn_call).id == "alpha.a"


# ----------------------------------------------------------------------------------- bound runners


def test_a_bound_runner_serves_its_class_and_per_call_key(attn_kw):
    """``ImplSpec.bind``: the operator binds the chosen implementation once per memo class and per-call key (the
    second call of a class, the first one the memo serves) and then calls the runner instead of ``run``; other
    per-call values bind again; the implementation still reports as itself."""
    from atrex.api import _fa_fast
    from atrex.api._memo import guards_available

    if not guards_available():
        pytest.skip("no torch guard code: no memo, every call validates in full")
    install(record("alpha", spec("alpha.b", 1, bind="bind_attn")))
    _fa_fast.MEMO.clear()
    kw = dict(attn_kw, out=torch.ones_like(attn_kw["q"]))
    longer = dict(kw, max_seqlen_k=kw["max_seqlen_k"] + 1)
    for args in (kw, kw, kw, longer, longer):
        atrex.flash_attn_varlen_func(**args)
    assert torch.count_nonzero(kw["out"]) == 0
    n = (attn_kw["q"].shape[0], attn_kw["max_seqlen_k"])
    m = (n[0], n[1] + 1)
    assert [c for c in F.CALLS if c[0] != "check"] == [
        ("run", "attn"), ("bind", n), ("runner", n), ("runner", n), ("bind", m), ("runner", m), ("runner", m)]
    (entry,) = _fa_fast.MEMO.by_count[len(kw)]
    assert {i.id for i in entry.chosen.values()} == {"alpha.b"} and not any(i.is_reference for i in
                                                                            entry.chosen.values())
    assert atrex.explain_flash_attn_varlen_func(**kw).chosen == "alpha.b"


def test_a_bind_without_a_runner_keeps_run(attn_kw):
    from atrex.api import _fa_fast
    from atrex.api._memo import guards_available

    if not guards_available():
        pytest.skip("no torch guard code: no memo, every call validates in full")
    install(record("alpha", spec("alpha.b", 1, bind="bind_none")))
    _fa_fast.MEMO.clear()
    for _ in range(3):
        atrex.flash_attn_varlen_func(**attn_kw)
    assert [c for c in F.CALLS if c[0] != "check"] == [("run", "attn"), ("bind", None), ("run", "attn"),
                                                        ("run", "attn")]
