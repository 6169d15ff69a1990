"""Shared by the vLLM plugin tests: the fake vLLM package, a fake ATREX registry, float64 oracles.

The fake vLLM (``op_test/core/fake_vllm``) has only what ``atrex.integrations.vllm`` touches; its kernels record that
they ran. The registry gets a fake vendor plugin whose implementations serve the chosen targets (never run here:
CPU tensors dispatch to ATREX's torch reference). The oracles restate vLLM's kernel semantics as read in its sources
(in-kernel gate, null slot 0, V-first state) in float64, independently of ATREX and of the integration.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

from atrex import env
from atrex.dispatch import registry
from atrex.dispatch.plugins import PluginRecord
from atrex.dispatch.registry import build_registry
from atrex.plugin import PLUGIN_API, ImplSpec, PluginManifest

FAKE = Path(__file__).resolve().parent / "core" / "fake_vllm"
ALL_OPS = ("flash_attn_varlen", "chunk_gated_delta_rule", "fused_recurrent_gated_delta_rule")


def drop_vllm_modules() -> None:
    for name in [m for m in sys.modules if m == "vllm" or m.startswith("vllm.")]:
        del sys.modules[name]
    sys.modules.pop("atrex.integrations.vllm.attn_backend", None)


def install_registry(served: dict[str, tuple[str, ...]] | None = None) -> None:
    """A registry whose fake ``fakevendor`` plugin serves ``served[op]`` targets (default: every op on nvidia/sm90)."""
    served = {op: ("nvidia/sm90",) for op in ALL_OPS} if served is None else served
    impls = tuple(ImplSpec(op=op, id=f"fakevendor.{op}", archs=archs, priority=10,
                           check="fakeplug_impls:check_yes", run="fakeplug_impls:run_attn")
                  for op, archs in served.items() if archs)
    manifest = PluginManifest("fakevendor", PLUGIN_API, ("nvidia",), impls)
    record = PluginRecord("fakevendor", "fakevendor._plugin:plugin", "atrex-fakevendor", "9.9.9", "loaded", None,
                          manifest)
    registry.set_registry_for_tests(build_registry([record]))


def setenv(monkeypatch, served=None, **values) -> None:
    for k, v in values.items():
        monkeypatch.setenv(k, v)
    env.reload()  # drops the registry
    install_registry(served)


def fake_vllm_env(monkeypatch):
    """For a fixture (``yield from``): the fake vLLM importable as ``vllm`` (fresh modules per test), the plugin's process state reset, the fake
    registry installed. Yields ``atrex.integrations.vllm``."""
    import atrex.integrations.vllm as integ

    monkeypatch.syspath_prepend(str(FAKE))
    importlib.invalidate_caches()
    drop_vllm_modules()
    integ._reset_for_tests()
    install_registry()
    monkeypatch.setattr(integ, "_vllm_version", lambda: importlib.import_module("vllm").__version__)
    yield integ
    drop_vllm_modules()
    integ._reset_for_tests()


def platform():
    return importlib.import_module("vllm.platforms").current_platform


# ------------------------------------------------------------------ oracles (float64)


def delta_rule(q, k, v, g, beta, h, *, scale, l2):
    """One sequence: q, k ``[T, H, K]``, v ``[T, HV, V]``, g (log decay) and beta ``[T, HV]``, state ``h``
    ``[HV, V, K]`` (V-first, vLLM's layout). Returns (o ``[T, HV, V]``, the state after each token)."""
    q, k, v, g, beta, h = (x.double() for x in (q, k, v, g, beta, h))
    h = h.clone()
    hv_n, group = v.shape[1], v.shape[1] // q.shape[1]
    o, states = torch.zeros(v.shape, dtype=torch.float64), []
    for t in range(q.shape[0]):
        for hv in range(hv_n):
            qt, kt = q[t, hv // group], k[t, hv // group]
            if l2:
                qt, kt = qt / torch.sqrt((qt * qt).sum() + 1e-6), kt / torch.sqrt((kt * kt).sum() + 1e-6)
            s = h[hv] * torch.exp(g[t, hv])
            u = beta[t, hv] * (v[t, hv] - s @ kt)
            h[hv] = s + torch.outer(u, kt)
            o[t, hv] = h[hv] @ (qt * scale)
        states.append(h.clone())
    return o, states


def vllm_gates(A_log, a, dt_bias, b):
    """vLLM's in-kernel gating (softplus with beta 1, threshold 20), float64."""
    x = a.double() + dt_bias.double()
    return -torch.exp(A_log.double()) * F.softplus(x, beta=1.0, threshold=20.0), torch.sigmoid(b.double())


def vllm_decode(pool, slots, tokens, q, k, v, g, beta, *, scale, l2, accepted=None):
    """vLLM's in-place pool update. ``tokens[n]`` is sequence n's token range, ``slots`` ``[N]`` or ``[N, T]``;
    a start slot <= 0 means padding (no read, no write, output left alone), a per-token slot <= 0 is not written.
    Returns (o, pool) in float64; o rows of padded sequences are 0."""
    pool, o = pool.double().clone(), torch.zeros(v.shape, dtype=torch.float64)
    for n, (lo, hi) in enumerate(tokens):
        per_token = slots.dim() == 2
        start = int(slots[n, int(accepted[n]) - 1] if accepted is not None else (slots[n, 0] if per_token else slots[n]))
        if start <= 0:
            continue
        on, states = delta_rule(q[lo:hi], k[lo:hi], v[lo:hi], g[lo:hi], beta[lo:hi], pool[start], scale=scale, l2=l2)
        o[lo:hi] = on
        for j, state in enumerate(states):
            dest = int(slots[n, j]) if per_token else (start if j == len(states) - 1 else 0)
            if dest > 0:
                pool[dest] = state
    return o, pool
