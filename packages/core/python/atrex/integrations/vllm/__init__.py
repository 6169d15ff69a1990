"""ATREX as a vLLM general plugin (entry point ``atrex`` in the ``vllm.general_plugins`` group).

vLLM calls :func:`register` in every process it starts (API server, engine core, workers). It imports nothing of
vLLM's model code and never initialises CUDA; it decides from the vLLM release, vLLM's platform (the GPU read through
NVML) and ATREX's registry which ops to route, then arranges the patches (docs/vllm.md):

- ``flash_attn``: vLLM's FLASH_ATTN backend calls ``atrex.flash_attn_varlen_func``;
- ``gdn_prefill``: the Qwen3-Next / Qwen3.5 GatedDeltaNet prefill calls ``atrex.chunk_gated_delta_rule``;
- ``gdn_decode``: their decode / MTP steps call ``atrex.fused_recurrent_gated_delta_rule``.

Calls ATREX declines run vLLM's own kernels, counted per reason (:func:`fallback_counts`) and logged once per
reason. ``ATREX_VLLM=0`` turns everything off, ``ATREX_VLLM_DISABLE=flash_attn,gdn_prefill,gdn_decode`` single ops.
Nothing here imports vLLM or torch at ``import``.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from atrex.integrations.vllm._fallback import LOG
from atrex.integrations.vllm._fallback import counts as fallback_counts
from atrex.integrations.vllm._versions import ATTN_MODULE, OPS, SUPPORTED, TESTED, Layout, layout_for

__all__ = ["BACKEND_CLASS", "OPS", "SUPPORTED", "TESTED", "Plan", "fallback_counts", "plan", "register", "status"]

#: What vLLM's registry resolves FLASH_ATTN to while attention is routed.
BACKEND_CLASS = "atrex.integrations.vllm.attn_backend.AtrexFlashAttentionBackend"


@dataclass
class Plan:
    """What the plugin does in this process: ``ops[name]`` is None when routed, else why not."""

    vllm_version: str | None
    layout: Layout | None
    target: str | None
    device: str
    ops: dict[str, str | None] = field(default_factory=dict)
    applied: bool = False

    @property
    def routed(self) -> list[str]:
        return [op for op, why in self.ops.items() if why is None]

    def describe(self) -> str:
        lines = [f"vLLM {self.vllm_version or '(not installed)'}: "
                 + ("supported" if self.layout else f"not supported (supported: {', '.join(SUPPORTED)})"),
                 f"device: {self.device}"]
        lines += [f"  {op:<12} {'routed to ATREX' if why is None else 'vLLM: ' + why}" for op, why in self.ops.items()]
        return "\n".join(lines)


_lock = threading.Lock()
_plan: Plan | None = None


def _vllm_version() -> str | None:
    """The installed vLLM distribution's version (its metadata; vLLM itself is not imported)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("vllm")
    except PackageNotFoundError:
        return None


def _everything_off(p: Plan, why: str) -> Plan:
    p.ops = dict.fromkeys(OPS, why)
    return p


def plan() -> Plan:
    """Decide, without patching anything, what :func:`register` does in this process."""
    from atrex import env

    settings = env.settings()
    p = Plan(_vllm_version(), None, None, "unknown")
    if not settings.vllm_enabled:
        return _everything_off(p, "ATREX_VLLM=0")
    if p.vllm_version is None:
        return _everything_off(p, "vLLM is not installed")
    p.layout = layout_for(p.vllm_version)
    if p.layout is None:
        return _everything_off(p, f"vLLM {p.vllm_version} is not a supported release")
    from atrex.integrations.vllm._platform import detect, served_ops

    p.target, p.device = detect()
    if p.target is None:
        return _everything_off(p, p.device)
    served = served_ops(p.target)
    for op in OPS:
        if op in settings.vllm_disabled_ops:
            p.ops[op] = "ATREX_VLLM_DISABLE"
        elif not served[op]:
            p.ops[op] = f"no ATREX implementation for {p.target}"
        else:
            p.ops[op] = None
    return p


def register() -> None:
    """The ``vllm.general_plugins`` entry point: idempotent, never raises (a failure leaves vLLM unchanged)."""
    global _plan
    with _lock:
        if _plan is not None:
            return
        try:
            _plan = plan()
            _apply(_plan)
        except Exception:
            _plan = _plan or Plan(None, None, None, "unknown", dict.fromkeys(OPS, "the plugin failed"))
            LOG.exception("ATREX: the vLLM plugin failed; vLLM runs unchanged")
            return
    _announce(_plan)


def status() -> Plan | None:
    """The plan :func:`register` applied in this process (None before vLLM loaded the plugin)."""
    return _plan


def _apply(p: Plan) -> None:
    """Arrange the patches of the routed ops; a group whose patching fails stays vLLM's (logged)."""
    for group, apply in ((("flash_attn",), _apply_attention), (("gdn_prefill", "gdn_decode"), _apply_gdn)):
        mine = [op for op in group if p.ops.get(op, "") is None]
        if not mine:
            continue
        try:
            apply(p, mine)
        except Exception as exc:
            LOG.exception("ATREX: routing %s failed; vLLM keeps its kernels there", ", ".join(mine))
            p.ops.update(dict.fromkeys(mine, f"patching failed ({type(exc).__name__})"))
    p.applied = True


def _apply_attention(p: Plan, ops: list[str]) -> None:
    from atrex.integrations.vllm import _attn, _hooks

    _register_backend()
    _hooks.when_imported(ATTN_MODULE, _attn.patch_module)


def _apply_gdn(p: Plan, ops: list[str]) -> None:
    from atrex.integrations.vllm import _gdn, _hooks

    layout = p.layout
    _hooks.when_imported(layout.gdn_layer, lambda module: _gdn.patch_layer_module(
        module, prefill="gdn_prefill" in ops, decode="gdn_decode" in ops, auto_to_triton=layout.prefill_auto_to_triton))


def _register_backend() -> None:
    from vllm.v1.attention.backends.registry import AttentionBackendEnum, register_backend

    backend = AttentionBackendEnum.FLASH_ATTN
    if backend.is_overridden() and backend.get_path() != BACKEND_CLASS:
        LOG.warning("ATREX: FLASH_ATTN is already overridden by %s; vLLM's registry keeps it (the kernel calls of "
                    "vLLM's FLASH_ATTN module are still routed)", backend.get_path())
        return
    register_backend(backend, BACKEND_CLASS)


def _announce(p: Plan) -> None:
    from atrex import env

    unknown = sorted(set(env.settings().vllm_disabled_ops) - set(OPS))
    if unknown:
        LOG.warning("ATREX: ATREX_VLLM_DISABLE names unknown ops %s (known: %s)", unknown, ", ".join(OPS))
    if p.layout is None and p.vllm_version is not None and env.settings().vllm_enabled:
        LOG.warning("ATREX: vLLM %s is not a release this atrex-core supports (%s); vLLM runs unchanged",
                    p.vllm_version, ", ".join(SUPPORTED))
    elif p.routed:
        LOG.info("ATREX: vLLM %s on %s: %s routed to ATREX%s", p.vllm_version, p.device, ", ".join(p.routed),
                 "".join(f"; {op} stays vLLM's ({why})" for op, why in p.ops.items() if why is not None))
    else:
        LOG.info("ATREX: vLLM %s runs unchanged: %s", p.vllm_version,
                 "; ".join(sorted({why for why in p.ops.values() if why})))


def _reset_for_tests() -> None:
    """Forget this process's plan, pending hooks and fallback counts (tests only; patched modules stay patched)."""
    global _plan
    from atrex.integrations.vllm import _fallback, _hooks

    with _lock:
        _plan = None
    _hooks._pending.clear()
    _fallback.reset()
