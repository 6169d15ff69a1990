"""Qwen3-Next / Qwen3.5 GatedDeltaNet layers in vLLM calling ATREX's Gated DeltaNet operators.

The layer module (``Layout.gdn_layer``) is patched right after vLLM imports it:

- prefill: its ``ChunkGatedDeltaRule`` CustomOp is replaced through ``CustomOp.register_oot`` by a subclass whose
  forward calls ``atrex.chunk_gated_delta_rule`` with ``state_v_first=True`` (vLLM's SSM state is ``[HV, V, K]`` in
  every supported release), and vLLM's own forward for calls ATREX declines;
- decode: the module globals ``fused_sigmoid_gating_delta_rule_update`` (decode and MTP steps) and
  ``fused_recurrent_gated_delta_rule_packed_decode`` (vLLM's packed decode) become wrappers that compute the gate
  and beta vLLM's kernels compute inside (``g = -exp(A_log) * softplus(a + dt_bias)``, ``beta = sigmoid(b)``, in
  fp32) and call ``atrex.fused_recurrent_gated_delta_rule``. vLLM marks padded batch entries with state slot 0
  (``NULL_BLOCK_ID``) and its kernels skip slots <= 0; ATREX skips negative slots, so slots <= 0 become -1.
"""

from __future__ import annotations

import inspect

from atrex.integrations.vllm import _fallback

__all__ = ["PACKED_ARGS", "PREFILL_ARGS", "SIGMOID_ARGS", "make_chunk_op", "patch_layer_module"]

PREFILL, DECODE = "gdn_prefill", "gdn_decode"

#: ``ChunkGatedDeltaRule.forward`` parameters (0.20 .. 0.34: the last two from 0.21 and 0.32) and their defaults.
PREFILL_ARGS = ("q", "k", "v", "g", "beta", "initial_state", "output_final_state", "cu_seqlens", "chunk_indices",
                "chunk_offsets", "use_qk_l2norm_in_kernel", "core_attn_out", "aiter_prefill_metadata")
_PREFILL_DEFAULTS = {"cu_seqlens": None, "chunk_indices": None, "chunk_offsets": None,
                     "use_qk_l2norm_in_kernel": True, "core_attn_out": None, "aiter_prefill_metadata": None}
#: ``fused_sigmoid_gating_delta_rule_update`` and ``fused_recurrent_gated_delta_rule_packed_decode`` parameters,
#: identical in 0.20 .. 0.34; a module whose function has other parameters keeps vLLM's.
SIGMOID_ARGS = ("A_log", "a", "b", "dt_bias", "q", "k", "v", "beta", "threshold", "scale", "initial_state",
                "inplace_final_state", "cu_seqlens", "ssm_state_indices", "num_accepted_tokens",
                "use_qk_l2norm_in_kernel", "is_kda")
PACKED_ARGS = ("mixed_qkv", "a", "b", "A_log", "dt_bias", "scale", "initial_state", "out", "ssm_state_indices",
               "use_qk_l2norm_in_kernel")


def _bind(names: tuple[str, ...], defaults: dict, args: tuple, kwargs: dict) -> dict | None:
    """vLLM's arguments by name (None when they do not bind: vLLM's own function then raises its error)."""
    if len(args) > len(names) or any(n in kwargs for n in names[:len(args)]) or set(kwargs) - set(names):
        return None
    bound = {**defaults, **dict(zip(names, args)), **kwargs}
    return bound if all(n in bound for n in names) else None


def _serve(op: str, fallback, args, kwargs, reason: str | None, run):
    """``run()`` when ``reason`` is None and ATREX accepts the call, else ``fallback(*args, **kwargs)`` (counted)."""
    from atrex.errors import AtrexError

    detail = None
    if reason is None:
        try:  # ATREX errors are raised before anything runs: inputs and the state pool untouched
            return run()
        except AtrexError as exc:
            reason, detail = _fallback.reason_of(exc)
    _fallback.record(op, reason, detail)
    return fallback(*args, **kwargs)


# ---------------------------------------------------------------- prefill


def _prefill_reason(kw: dict | None) -> str | None:
    if kw is None:
        return "vLLM's arguments do not bind to ChunkGatedDeltaRule.forward as the integration knows it"
    if kw["aiter_prefill_metadata"] is not None:
        return "aiter_prefill_metadata given (ROCm AITER prefill)"
    if kw["core_attn_out"] is not None and not kw["core_attn_out"].is_contiguous():
        return "core_attn_out is not contiguous"
    return None


def chunk_forward(fallback, args: tuple, kwargs: dict):
    """ChunkGatedDeltaRule's forward through ATREX: vLLM's log-space ``g``, its ``[N, HV, V, K]`` state."""
    from atrex.api.chunk_gdn import chunk_gated_delta_rule

    kw = _bind(PREFILL_ARGS, _PREFILL_DEFAULTS, args, kwargs)

    def run():
        o, state = chunk_gated_delta_rule(  # keywords only: ATREX's call memo serves keyword calls
            q=kw["q"], k=kw["k"], v=kw["v"], g=kw["g"], beta=kw["beta"], initial_state=kw["initial_state"],
            output_final_state=kw["output_final_state"], use_qk_l2norm_in_kernel=kw["use_qk_l2norm_in_kernel"],
            state_v_first=True, cu_seqlens=kw["cu_seqlens"])
        out = kw["core_attn_out"]
        if out is None:
            return o, state
        view = out.view(-1)[:o.numel()].view(o.shape)  # vLLM's contract: o fills the buffer's first elements
        view.copy_(o)
        return view, state

    return _serve(PREFILL, fallback, args, kwargs, _prefill_reason(kw), run)


def _requested_prefill_backend() -> str:
    from vllm.config import get_current_vllm_config

    extra = getattr(get_current_vllm_config(), "additional_config", None)
    return str(extra.get("gdn_prefill_backend", "auto") if isinstance(extra, dict) else "auto").strip().lower()


def make_chunk_op(base):
    """A subclass of vLLM's ``ChunkGatedDeltaRule`` that serves its forward with ATREX, keeping vLLM's chosen
    forward as the fallback. An explicitly requested backend other than auto / triton (FlashInfer, CuTe DSL,
    ROCm's) is respected: the op then stays vLLM's."""

    class AtrexChunkGatedDeltaRule(base):
        __atrex__ = True

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            requested = _requested_prefill_backend()
            if requested not in ("auto", "triton"):
                _fallback.note_once(f"prefill-backend-{requested}", "ATREX: gdn_prefill_backend=%r was requested "
                                    "explicitly: GDN prefill stays with vLLM's kernel", requested)
                return
            fallback = self._forward_method
            self._forward_method = lambda *a, **kw: chunk_forward(fallback, a, kw)

    AtrexChunkGatedDeltaRule.__doc__ = make_chunk_op.__doc__
    return AtrexChunkGatedDeltaRule


# ---------------------------------------------------------------- decode


def _gates(A_log, a, dt_bias, b, softplus_beta: float, threshold: float, shape: tuple):
    """vLLM's in-kernel gating, in fp32: ``g = -exp(A_log) * softplus(a + dt_bias)``, ``beta = sigmoid(b)``."""
    import torch
    import torch.nn.functional as F

    g = -torch.exp(A_log.float()) * F.softplus(a.float() + dt_bias.float(), beta=softplus_beta, threshold=threshold)
    return g.reshape(shape), torch.sigmoid(b.float()).reshape(shape)


def _slots(indices):
    """vLLM's null slot (0, NULL_BLOCK_ID) and negative slots -> -1, ATREX's padding."""
    return indices.masked_fill(indices <= 0, -1)


def _sigmoid_reason(kw: dict | None) -> str | None:
    if kw is None:
        return "vLLM's arguments do not bind to fused_sigmoid_gating_delta_rule_update as the integration knows it"
    if kw["is_kda"]:
        return "is_kda=True (per-channel KDA gate)"
    if not kw["inplace_final_state"]:
        return "inplace_final_state=False (vLLM's per-token state output is not ATREX's contract)"
    if kw["initial_state"] is None or kw["ssm_state_indices"] is None:
        return "no state pool or no ssm_state_indices"
    q, v = kw["q"], kw["v"]
    if q.dim() != 4 or v.dim() != 4:
        return "q/v are not [B, T, heads, dim]"
    n = q.shape[0] * q.shape[1] * v.shape[2]
    if kw["a"].numel() != n or kw["b"].numel() != n or kw["A_log"].numel() != v.shape[2] \
            or kw["dt_bias"].numel() != v.shape[2]:
        return "a/b/A_log/dt_bias shapes do not match the value heads"
    return None


def make_sigmoid_update(original):
    """A drop-in for vLLM's ``fused_sigmoid_gating_delta_rule_update`` (in-place decode / MTP step)."""
    from atrex.api.gdn_decode import fused_recurrent_gated_delta_rule

    defaults = {k: p.default for k, p in inspect.signature(original).parameters.items() if p.default is not p.empty}

    def fused_sigmoid_gating_delta_rule_update(*args, **kwargs):
        kw = _bind(SIGMOID_ARGS, defaults, args, kwargs)

        def run():
            q, v, cu = kw["q"], kw["v"], kw["cu_seqlens"]
            g, beta = _gates(kw["A_log"], kw["a"], kw["dt_bias"], kw["b"], kw["beta"], kw["threshold"],
                             (q.shape[0], q.shape[1], v.shape[2]))
            n = q.shape[0] if cu is None else cu.shape[0] - 1
            accepted = kw["num_accepted_tokens"]
            return fused_recurrent_gated_delta_rule(
                q=q, k=kw["k"], v=v, g=g, beta=beta, scale=kw["scale"], initial_state=kw["initial_state"],
                inplace_final_state=True, cu_seqlens=cu, ssm_state_indices=_slots(kw["ssm_state_indices"][:n]),
                num_accepted_tokens=None if accepted is None else accepted[:n],
                use_qk_l2norm_in_kernel=kw["use_qk_l2norm_in_kernel"], state_v_first=True)

        return _serve(DECODE, original, args, kwargs, _sigmoid_reason(kw), run)

    fused_sigmoid_gating_delta_rule_update.__atrex_original__ = original
    fused_sigmoid_gating_delta_rule_update.__doc__ = make_sigmoid_update.__doc__
    return fused_sigmoid_gating_delta_rule_update


def _packed_heads(kw: dict | None):
    """``(H, K, HV, V)`` of a packed decode call, or a reason string."""
    if kw is None:
        return "vLLM's arguments do not bind to fused_recurrent_gated_delta_rule_packed_decode as the integration knows it"
    qkv, state, out = kw["mixed_qkv"], kw["initial_state"], kw["out"]
    if qkv.dim() != 2 or state.dim() != 4:
        return "mixed_qkv is not [B, qkv_dim] or the state pool is not [P, HV, V, K]"
    hv, vd, kd = state.shape[1:]
    qk = qkv.shape[1] - hv * vd
    if qk <= 0 or qk % (2 * kd):
        return "mixed_qkv's width does not split into q, k, v for this state pool"
    if tuple(out.shape) != (qkv.shape[0], 1, hv, vd) or kw["a"].shape != (qkv.shape[0], hv) or \
            kw["b"].shape != (qkv.shape[0], hv):
        return "out/a/b shapes do not match the packed batch"
    return qk // (2 * kd), kd, hv, vd


def make_packed_decode(original):
    """A drop-in for vLLM's ``fused_recurrent_gated_delta_rule_packed_decode``: one token per sequence, q/k/v read
    as strided views of the packed projection, the result copied into vLLM's ``out``."""
    from atrex.api.gdn_decode import fused_recurrent_gated_delta_rule

    defaults = {k: p.default for k, p in inspect.signature(original).parameters.items() if p.default is not p.empty}

    def fused_recurrent_gated_delta_rule_packed_decode(*args, **kwargs):
        kw = _bind(PACKED_ARGS, defaults, args, kwargs)
        heads = _packed_heads(kw)

        def run():
            h, kd, hv, vd = heads
            qkv = kw["mixed_qkv"]
            q = qkv[:, :h * kd].unflatten(-1, (h, kd)).unsqueeze(1)
            k = qkv[:, h * kd:2 * h * kd].unflatten(-1, (h, kd)).unsqueeze(1)
            v = qkv[:, 2 * h * kd:2 * h * kd + hv * vd].unflatten(-1, (hv, vd)).unsqueeze(1)
            g, beta = _gates(kw["A_log"], kw["a"], kw["dt_bias"], kw["b"], 1.0, 20.0, (qkv.shape[0], 1, hv))
            o, state = fused_recurrent_gated_delta_rule(
                q=q, k=k, v=v, g=g, beta=beta, scale=kw["scale"], initial_state=kw["initial_state"], inplace_final_state=True,
                ssm_state_indices=_slots(kw["ssm_state_indices"]),
                use_qk_l2norm_in_kernel=kw["use_qk_l2norm_in_kernel"], state_v_first=True)
            kw["out"].copy_(o)
            return kw["out"], state

        reason = heads if isinstance(heads, str) else None
        return _serve(DECODE, original, args, kwargs, reason, run)

    fused_recurrent_gated_delta_rule_packed_decode.__atrex_original__ = original
    fused_recurrent_gated_delta_rule_packed_decode.__doc__ = make_packed_decode.__doc__
    return fused_recurrent_gated_delta_rule_packed_decode


# ---------------------------------------------------------------- patching


def _register_chunk_op(module) -> None:
    from vllm.model_executor.custom_op import op_registry_oot

    base = module.ChunkGatedDeltaRule
    current = op_registry_oot.get(base.__name__)
    if current is not None:
        if not getattr(current, "__atrex__", False):
            _fallback.LOG.warning("ATREX: %s is already replaced by %s (another plugin); GDN prefill stays with it",
                                  base.__name__, current)
        return
    cls = make_chunk_op(base)
    base.register_oot(cls)
    cls.name = base.name  # register_oot renames it; vLLM's custom_ops directives use the registered op name


def _route_auto_prefill(module) -> None:
    original = module._resolve_gdn_prefill_backend
    if hasattr(original, "__atrex_original__"):
        return

    def _resolve_gdn_prefill_backend(vllm_config):
        requested, active = original(vllm_config)
        return (requested, "triton") if requested == "auto" and active == "flashinfer" else (requested, active)

    _resolve_gdn_prefill_backend.__atrex_original__ = original
    module._resolve_gdn_prefill_backend = _resolve_gdn_prefill_backend


def _patch_decode(module) -> None:
    for name, make, expected in (("fused_sigmoid_gating_delta_rule_update", make_sigmoid_update, SIGMOID_ARGS),
                                 ("fused_recurrent_gated_delta_rule_packed_decode", make_packed_decode, PACKED_ARGS)):
        original = module.__dict__.get(name)
        if original is None or hasattr(original, "__atrex_original__"):
            continue
        if tuple(inspect.signature(original).parameters) != expected:
            _fallback.LOG.warning("ATREX: %s.%s has parameters this integration does not know; vLLM keeps it",
                                  module.__name__, name)
            continue
        setattr(module, name, make(original))


def patch_layer_module(module, *, prefill: bool, decode: bool, auto_to_triton: bool) -> None:
    """Patch vLLM's Qwen GatedDeltaNet layer module (idempotent)."""
    if prefill:
        _register_chunk_op(module)
        if auto_to_triton:
            _route_auto_prefill(module)
    if decode:
        _patch_decode(module)
