"""What a user gets without ATREX, called the way its own documentation says: the comparison rows
of ``atrex bench``. Never an ATREX dependency: each library is imported lazily, inside its maker.

A maker ``make(kw, target, graph=False)`` takes the case's call (ATREX's keyword arguments) and returns
either a :class:`Baseline` (the timed zero-argument callable, plus how to read its result) or a
:class:`Skip` with a one-line reason (library missing, another device, an argument it cannot express).
Anything a baseline needs besides the timed call (plans, layout conversions, copies) happens in the
maker, outside the timing."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from dataclasses import dataclass

import torch


class Skip(str):
    """Why a baseline does not apply to a call: a one-line reason shown in the bench output."""


@dataclass
class Baseline:
    """One baseline call. ``result`` maps what ``fn`` returns onto ATREX's comparable form (``(out, lse)``
    for attention, ``(o, state)`` for GDN; None: the default reading); ``ref_kw`` is the call whose
    reference result the output must match (None: the case's own call)."""

    fn: Callable[[], object]
    result: Callable[[object], tuple] | None = None
    ref_kw: dict | None = None


def available(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def needs(target, module: str, what: str) -> Skip | None:
    """The common preconditions: an NVIDIA device and ``module`` importable (``what`` names it)."""
    if target.family != "nvidia":
        return Skip(f"needs an NVIDIA GPU (device here: {target.id})")
    if not available(module):
        return Skip(f"{what} is not installed")
    return None


def fa4_direct(kw: dict, target, graph: bool = False) -> Baseline | Skip:
    """FlashAttention-4's public varlen API with the vLLM arguments mapped as
    docs/flash_attn_varlen_func.md says ("Notes for FlashAttention-4-backed implementations")."""
    miss = needs(target, "flash_attn.cute", "flash-attn-4 (flash_attn.cute)")
    if miss:
        return miss
    if kw["q"].dtype not in (torch.float16, torch.bfloat16):
        return Skip(f"q dtype {kw['q'].dtype} (FA4 on this path: fp16/bf16)")
    from flash_attn.cute import flash_attn_varlen_func as fa4

    left, right = kw.get("window_size") or (-1, -1)
    args = dict(
        cu_seqlens_q=kw["cu_seqlens_q"], cu_seqlens_k=kw.get("cu_seqlens_k"), max_seqlen_q=kw["max_seqlen_q"],
        max_seqlen_k=kw["max_seqlen_k"], seqused_k=kw.get("seqused_k"), page_table=kw.get("block_table"),
        softmax_scale=kw.get("softmax_scale"), causal=kw.get("causal", False),
        window_size=(None if left < 0 else left, None if right < 0 else right), learnable_sink=kw.get("s_aux"),
        softcap=kw.get("softcap", 0.0), return_lse=kw.get("return_softmax_lse", False),
        num_splits=1 if target.arch == "sm90" else 0,  # no split-KV on SM90 (b19, b36)
    )
    q, k, v = kw["q"], kw["k"], kw["v"]
    return Baseline(lambda: fa4(q, k, v, **args))


def fla_chunk(kw: dict, target, graph: bool = False) -> Baseline | Skip:
    """fla-core's chunk_gated_delta_rule (the Triton baseline of the GDN perf cases)."""
    miss = needs(target, "fla", "fla-core (fla)")
    if miss:
        return miss
    from fla.ops.gated_delta_rule import chunk_gated_delta_rule as fla

    args = {n: kw[n] for n in ("initial_state", "output_final_state", "cu_seqlens", "use_qk_l2norm_in_kernel")
            if n in kw}
    if kw.get("state_v_first"):
        args["state_v_first"] = True
    q, k, v, g, beta = (kw[n] for n in ("q", "k", "v", "g", "beta"))
    return Baseline(lambda: fla(q, k, v, g, beta, **args))


def start_slots(kw: dict) -> torch.Tensor:
    """Each sequence's start slot in a gdn_decode call's pool (docs/fused_recurrent_gated_delta_rule.md,
    "Slots"): ``indices[n]``, ``indices[n, num_accepted_tokens[n] - 1]`` or ``n``."""
    idx, nat, pool = kw.get("ssm_state_indices"), kw.get("num_accepted_tokens"), kw["initial_state"]
    n = kw["q"].shape[0] if kw.get("cu_seqlens") is None else kw["cu_seqlens"].shape[0] - 1
    if idx is None:
        return torch.arange(n, device=pool.device)
    if idx.dim() == 1:
        return idx.long()
    col = (nat.long() - 1) if nat is not None else torch.zeros(n, dtype=torch.long, device=idx.device)
    return idx.long().gather(1, col[:, None])[:, 0]


def fla_recurrent(kw: dict, target, graph: bool = False) -> Baseline | Skip:
    """fla-core's fused_recurrent_gated_delta_rule (fla.ops.gated_delta_rule; no state pool): each sequence's
    start slot is gathered into fla's ``[N, HV, K, V]`` fp32 layout once, outside the timed call, and fla returns a
    new final state instead of updating a pool. Only for calls without padded sequences."""
    miss = needs(target, "fla", "fla-core (fla)")
    if miss:
        return miss
    from fla.ops.gated_delta_rule import fused_recurrent_gated_delta_rule as fla

    start, pool = start_slots(kw), kw["initial_state"]
    if bool((start < 0).any()):
        return Skip("padded sequences (fla has no pool to skip)")
    h0 = pool[start].float()
    h0 = (h0.transpose(-1, -2) if kw.get("state_v_first", True) else h0).contiguous()
    beta = kw.get("beta") if kw.get("beta") is not None else torch.ones_like(kw["g"])  # [B, T, HV], not fla's [B, T, H]
    args = dict(g=kw["g"], beta=beta, scale=kw.get("scale"), initial_state=h0, output_final_state=True,
                use_qk_l2norm_in_kernel=kw.get("use_qk_l2norm_in_kernel", False), cu_seqlens=kw.get("cu_seqlens"))
    q, k, v = kw["q"], kw["k"], kw["v"]
    return Baseline(lambda: fla(q, k, v, **args), result=lambda res: (res[0], None))  # outputs only: no pool


def torch_sdpa(kw: dict, target, graph: bool = False) -> Baseline | Skip:
    """Per-sequence ``scaled_dot_product_attention`` for plain non-paged prefill (no window, softcap,
    sinks; causal only when every sequence is square, where SDPA's top-left mask is the same)."""
    import torch.nn.functional as F

    if kw.get("block_table") is not None:
        return Skip("paged KV (SDPA takes contiguous K/V)")
    if kw.get("s_aux") is not None or kw.get("softcap"):
        return Skip("sinks / softcap")
    if kw.get("window_size") not in (None, [-1, -1], (-1, -1)):
        return Skip("sliding window")
    if kw["q"].dtype not in (torch.float16, torch.bfloat16):
        return Skip(f"q dtype {kw['q'].dtype}")
    cu_q = kw["cu_seqlens_q"].tolist()
    cu_k = kw["cu_seqlens_k"].tolist()
    causal = kw.get("causal", False)
    if causal and any(cu_q[i + 1] - cu_q[i] != cu_k[i + 1] - cu_k[i] for i in range(len(cu_q) - 1)):
        return Skip("causal with q and k lengths that differ (SDPA's mask is top-left)")
    q, k, v = kw["q"], kw["k"], kw["v"]
    gqa = q.shape[1] != k.shape[1]

    def run():
        outs = []
        for i in range(len(cu_q) - 1):
            qs = q[cu_q[i]:cu_q[i + 1]].transpose(0, 1)[None]
            ks = k[cu_k[i]:cu_k[i + 1]].transpose(0, 1)[None]
            vs = v[cu_k[i]:cu_k[i + 1]].transpose(0, 1)[None]
            outs.append(F.scaled_dot_product_attention(qs, ks, vs, is_causal=causal, enable_gqa=gqa,
                                                       scale=kw.get("softmax_scale")))
        return outs

    # per-sequence outputs [1, H, s, D] back to ATREX's packed [T, H, D]
    return Baseline(run, result=lambda res: (torch.cat([r[0].transpose(0, 1) for r in res], 0), None))


def _registry() -> dict[str, dict[str, Callable]]:
    from atrex.validation import baselines_flashinfer as FI

    return {
        "flash_attn": {"fa4_direct": fa4_direct, "torch_sdpa": torch_sdpa, **FI.ATTENTION},
        "chunk_gdn": {"fla": fla_chunk, "flashinfer": FI.chunk_gdn},
        "gdn_decode": {"fla": fla_recurrent, "flashinfer": FI.gdn_decode},
    }


#: op -> {label: maker}, in column order; the first baseline of an op present in a case is its ratio's base.
BASELINES = _registry()

#: label prefix -> (the module a baseline imports, its distributions): what `--peer-path` looks for in a folder.
MODULES = {"fa4_direct": ("flash_attn.cute", ("flash-attn-4",)), "fla": ("fla", ("fla-core",)),
           "flashinfer": ("flashinfer", ("flashinfer-python",))}


def module_of(label: str) -> tuple[str, tuple[str, ...]] | None:
    """The (module, distributions) a baseline label imports, or None for torch-only baselines."""
    for prefix, mod in MODULES.items():
        if label == prefix or label.startswith(prefix + "_"):
            return mod
    return None
