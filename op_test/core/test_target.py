"""Device classification with stubbed device properties and a fake vendor's device rule (no GPU needed).

The core knows no vendor's product names: a plugin declares them (``atrex.plugin.DeviceRule``). The rule
below has the shape of the PPU plugin's; ``op_test/ppu`` checks the real one.
"""

from __future__ import annotations

import dataclasses
import types

import pytest
import torch

from atrex import env
from atrex.dispatch import registry
from atrex.dispatch import target as T
from atrex.dispatch.plugins import PluginRecord
from atrex.dispatch.target import DeviceTarget, classify_device, classify_properties
from atrex.plugin import PLUGIN_API, DeviceRule, PluginManifest

RULES = (DeviceRule(family="ppu", arch="zwm890p", products=("ZW-M890P",), emulated_on=("nvidia/sm90",)),)


def nv(name, cap, **kw):
    kw.setdefault("devices", RULES)
    return classify_properties(name=name, capability=cap, cuda_version="13.0", **kw)


@pytest.mark.parametrize(
    ("name", "cap", "expected"),
    [
        ("NVIDIA L40S", (8, 9), "nvidia/sm89"),
        ("NVIDIA H100 80GB HBM3", (9, 0), "nvidia/sm90"),
        ("NVIDIA H200", (9, 0), "nvidia/sm90"),
        ("NVIDIA H20", (9, 0), "nvidia/sm90"),
        ("NVIDIA B200", (10, 0), "nvidia/sm100"),
        ("NVIDIA B300 SXM6 AC", (10, 3), "nvidia/sm103"),
        ("NVIDIA GeForce RTX 5090", (12, 0), "nvidia/sm120"),
        ("NVIDIA RTX PRO 6000 Blackwell Server Edition", (12, 0), "nvidia/sm120"),
        ("  NVIDIA H200  ", (9, 0), "nvidia/sm90"),  # the runtime's name is stripped
    ],
)
def test_nvidia_by_capability(name, cap, expected):
    t = nv(name, cap, sm_count=132)
    assert t.id == expected
    assert t.family == "nvidia" and not t.emulated
    assert t.capability == cap and t.runtime == "cuda 13.0"
    assert t.is_accelerator
    assert t.name == name.strip()


def test_ppu_by_exact_name_before_capability():
    # The PPU reports capability 8.9 through its CUDA-compatible runtime: it must never pass for sm89.
    t = nv("ZW-M890P", (8, 9))
    assert t.id == "ppu/zwm890p"
    assert (t.family, t.arch, t.emulated) == ("ppu", "zwm890p", False)
    assert nv(" ZW-M890P\n", (8, 9)).id == "ppu/zwm890p"
    # Whatever the capability, the exact name decides.
    assert nv("ZW-M890P", (9, 0)).id == "ppu/zwm890p"


def test_core_alone_knows_no_vendor_product():
    # Without the plugin's rule the name is just an unknown CUDA device, never an NVIDIA one.
    assert nv("ZW-M890P", (8, 9), devices=()).id == "unknown"
    assert nv("NVIDIA H200", (9, 0), devices=(), emulate=("ppu",)).id == "nvidia/sm90"


def test_first_matching_rule_wins_and_only_named_families_emulate():
    other = DeviceRule(family="ppu", arch="other", products=("ZW-M890P", "ZW-X"), emulated_on=("nvidia/sm100",))
    assert nv("ZW-M890P", (8, 9), devices=RULES + (other,)).arch == "zwm890p"
    assert nv("ZW-X", (8, 9), devices=RULES + (other,)).arch == "other"
    b200 = nv("NVIDIA B200", (10, 0), devices=RULES + (other,), emulate=("ppu",))
    assert (b200.id, b200.emulated) == ("ppu/other", True)
    assert nv("NVIDIA H200", (9, 0), emulate=("amd",)).id == "nvidia/sm90"


@pytest.mark.parametrize(
    "name", ["ZW-M890P-X", "ZW-M890P Pro", "XZW-M890P", "NVIDIA ZW-M890P", "zw-m890p", "ZW-M890"]
)
def test_ppu_table_is_exact_not_a_pattern(name):
    t = nv(name, (8, 9))
    assert t.family != "ppu"
    assert t.id == ("nvidia/sm89" if name.startswith("NVIDIA ") else "unknown")


@pytest.mark.parametrize(
    ("hip", "gcn", "expected"),
    [
        ("6.4.0", "gfx942:sramecc+:xnack-", "amd/gfx942"),
        ("6.2", "gfx90a", "amd/gfx90a"),
        ("6.4", None, "amd/unknown"),
        ("6.4", ":xnack-", "amd/unknown"),
    ],
)
def test_amd_from_hip(hip, gcn, expected):
    t = classify_properties(name="AMD Instinct MI300X", capability=(9, 4), cuda_version=None, hip_version=hip,
                            gcn_arch=gcn)
    assert t.id == expected and t.family == "amd"
    assert t.runtime == f"hip {hip}"


def test_hip_precedes_everything():
    # Even a name in the PPU table or one that looks NVIDIA: a HIP runtime means AMD.
    for name in ("ZW-M890P", "NVIDIA H200"):
        t = classify_properties(name=name, capability=(9, 0), cuda_version="13.0", hip_version="6.4",
                                gcn_arch="gfx950", devices=RULES)
        assert t.id == "amd/gfx950"


@pytest.mark.parametrize(
    ("name", "cap", "cuda"),
    [
        ("Tesla V100", (7, 0), "12.4"),  # no "NVIDIA " prefix
        ("Some Vendor X1", (9, 0), "13.0"),
        ("", (9, 0), "13.0"),
        ("NVIDIA H200", (9, 0), None),  # no CUDA runtime
        ("NVIDIA H200", None, "13.0"),  # no capability
    ],
)
def test_unknown(name, cap, cuda):
    t = classify_properties(name=name, capability=cap, cuda_version=cuda)
    assert t.id == "unknown" and (t.family, t.arch) == ("unknown", "unknown")
    assert t.is_accelerator  # not cpu: the reference does not silently run there
    assert t.runtime == (f"cuda {cuda}" if cuda else None)


def test_emulation_maps_only_the_rules_hosts():
    t = nv("NVIDIA H200", (9, 0), emulate=("ppu",))
    assert (t.id, t.emulated) == ("ppu/zwm890p", True)
    assert t.name == "NVIDIA H200" and t.capability == (9, 0)
    assert "EMULATED" in t.describe() and "ATREX_PPU_EMULATE=1" in t.describe()
    for name, cap, expected in [("NVIDIA B200", (10, 0), "nvidia/sm100"), ("NVIDIA L40S", (8, 9), "nvidia/sm89"),
                                ("NVIDIA GeForce RTX 5090", (12, 0), "nvidia/sm120")]:
        other = nv(name, cap, emulate=("ppu",))
        assert (other.id, other.emulated) == (expected, False)
        assert "EMULATED" not in other.describe()
    real = nv("ZW-M890P", (8, 9), emulate=("ppu",))
    assert (real.id, real.emulated) == ("ppu/zwm890p", False)
    assert "EMULATED" not in real.describe()
    assert "EMULATED" not in nv("NVIDIA H200", (9, 0)).describe()


def test_describe_and_ids():
    t = nv("NVIDIA H200", (9, 0), sm_count=132, index=1)
    d = t.describe()
    assert d.startswith("nvidia/sm90") and "'NVIDIA H200'" in d and "capability 9.0" in d
    assert "cuda 13.0" in d and "132 SMs" in d
    assert t.index == 1
    assert T.CPU.id == "cpu" and not T.CPU.is_accelerator


def test_cpu_device():
    t = classify_device(torch.device("cpu"))
    assert t.id == "cpu" and t.family == "cpu" and not t.is_accelerator
    assert classify_device(torch.empty(1).device) is t


def test_other_device_type_is_unknown():
    t = classify_device(torch.device("meta"))
    assert t.id == "unknown" and (t.family, t.arch) == ("unknown", "unknown") and t.is_accelerator


class FakeCuda:
    """A stub of torch.cuda that counts get_device_properties calls."""

    def __init__(self, names):
        self.names = names
        self.calls = 0
        self.current = 0

    def current_device(self):
        return self.current

    def get_device_properties(self, index):
        self.calls += 1
        name, (major, minor) = self.names[index]
        return types.SimpleNamespace(name=name, major=major, minor=minor, multi_processor_count=132)


@pytest.fixture
def fake_cuda(monkeypatch):
    """A stubbed torch.cuda, and a registry whose only plugin is a fake vendor with the rule above (kept
    across env.reload(), which would otherwise rediscover the installed plugins)."""
    fake = FakeCuda({0: ("NVIDIA H200", (9, 0)), 1: ("ZW-M890P", (8, 9)), 2: ("NVIDIA B200", (10, 0))})
    manifest = PluginManifest("ppu", PLUGIN_API, ("ppu",), (), RULES)
    reg = registry.build_registry([PluginRecord("ppu", "fake:plugin", "fake-ppu", "0", "loaded", None, manifest)])
    monkeypatch.setattr(registry, "get_registry", lambda: reg)
    monkeypatch.setattr(torch, "cuda", fake)
    monkeypatch.setattr(torch.version, "cuda", "13.0")
    monkeypatch.setattr(torch.version, "hip", None)
    T.clear_cache()
    yield fake
    T.clear_cache()


def test_classify_device_cached_per_device(fake_cuda):
    t0 = classify_device(torch.device("cuda", 0))
    assert t0.id == "nvidia/sm90" and t0.index == 0 and t0.sm_count == 132
    assert classify_device(torch.device("cuda", 0)) is t0
    assert fake_cuda.calls == 1
    t1 = classify_device(torch.device("cuda", 1))
    assert t1.id == "ppu/zwm890p" and t1.index == 1
    assert fake_cuda.calls == 2
    classify_device(torch.device("cuda", 1))
    assert fake_cuda.calls == 2


def test_classify_device_without_index_follows_current_device(fake_cuda):
    assert classify_device(torch.device("cuda")).index == 0
    fake_cuda.current = 2
    t = classify_device(torch.device("cuda"))
    assert (t.id, t.index) == ("nvidia/sm100", 2)
    assert classify_device(torch.device("cuda", 2)) is t


def test_emulation_through_env_and_cache_cleared_by_reload(fake_cuda, monkeypatch):
    assert classify_device(torch.device("cuda", 0)).id == "nvidia/sm90"
    monkeypatch.setenv("ATREX_PPU_EMULATE", "1")
    env.reload()  # clears the classification cache
    t = classify_device(torch.device("cuda", 0))
    assert (t.id, t.emulated) == ("ppu/zwm890p", True)
    assert classify_device(torch.device("cuda", 2)).id == "nvidia/sm100"
    monkeypatch.delenv("ATREX_PPU_EMULATE")
    env.reload()
    assert classify_device(torch.device("cuda", 0)).id == "nvidia/sm90"


def test_hip_device(fake_cuda, monkeypatch):
    monkeypatch.setattr(torch.version, "hip", "6.4.1")
    fake_cuda.names[3] = ("AMD Instinct MI300X", (9, 4))
    orig = fake_cuda.get_device_properties

    def props(index):
        p = orig(index)
        p.gcnArchName = "gfx942:sramecc+:xnack-"
        return p

    fake_cuda.get_device_properties = props
    t = classify_device(torch.device("cuda", 3))
    assert t.id == "amd/gfx942" and t.runtime == "hip 6.4.1"


def test_device_target_is_immutable():
    t = DeviceTarget("nvidia", "sm90", "NVIDIA H200", (9, 0))
    with pytest.raises(AttributeError):
        t.arch = "sm100"  # type: ignore[misc]


def test_id_is_derived_once_and_stays_out_of_eq_and_repr():
    t = DeviceTarget("nvidia", "sm90", "NVIDIA H200", (9, 0), "cuda 13.0", 132, False, 0)
    assert t.id == "nvidia/sm90" and "id=" not in repr(t)
    assert dataclasses.replace(t, arch="sm100").id == "nvidia/sm100"
    assert DeviceTarget("unknown", "unknown", "meta").id == "unknown"
    assert t == DeviceTarget("nvidia", "sm90", "NVIDIA H200", (9, 0), "cuda 13.0", 132, False, 0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        t.id = "cpu"


def test_registry_collects_the_loaded_plugins_rules():
    ok = PluginRecord("ppu", "a:b", "d", "1", "loaded", None, PluginManifest("ppu", PLUGIN_API, ("ppu",), (), RULES))
    bad = PluginRecord("x", "a:b", "d", "1", "failed", "ImportError", None)
    assert registry.build_registry([bad, ok]).device_rules == RULES
    assert registry.build_registry([bad]).device_rules == ()
