"""What a user gets without ATREX, called the way its own documentation says: the comparison rows
of ``atrex bench``. Each returns a zero-argument callable, or None where it does not apply."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable

import torch


def available(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def fa4_direct(kw: dict, target) -> Callable | None:
    """FlashAttention-4 b19's public varlen API with the vLLM arguments mapped as
    docs/flash_attn_varlen_func.md says ("Notes for FlashAttention-4-backed implementations")."""
    if target.family != "nvidia" or not available("flash_attn.cute"):
        return None
    if kw["q"].dtype not in (torch.float16, torch.bfloat16):
        return None
    from flash_attn.cute import flash_attn_varlen_func as fa4

    left, right = kw.get("window_size") or (-1, -1)
    args = dict(
        cu_seqlens_q=kw["cu_seqlens_q"], cu_seqlens_k=kw.get("cu_seqlens_k"), max_seqlen_q=kw["max_seqlen_q"],
        max_seqlen_k=kw["max_seqlen_k"], seqused_k=kw.get("seqused_k"), page_table=kw.get("block_table"),
        softmax_scale=kw.get("softmax_scale"), causal=kw.get("causal", False),
        window_size=(None if left < 0 else left, None if right < 0 else right), learnable_sink=kw.get("s_aux"),
        softcap=kw.get("softcap", 0.0), return_lse=kw.get("return_softmax_lse", False),
        num_splits=1 if target.arch == "sm90" else 0,  # b19 has no split-KV on SM90
    )
    q, k, v = kw["q"], kw["k"], kw["v"]
    return lambda: fa4(q, k, v, **args)


def fla_chunk(kw: dict, target) -> Callable | None:
    """fla-core's chunk_gated_delta_rule (the Triton baseline of the GDN perf cases)."""
    if target.family != "nvidia" or not available("fla"):
        return None
    from fla.ops.gated_delta_rule import chunk_gated_delta_rule as fla

    args = {n: kw[n] for n in ("initial_state", "output_final_state", "cu_seqlens", "use_qk_l2norm_in_kernel")
            if n in kw}
    if kw.get("state_v_first"):
        args["state_v_first"] = True
    q, k, v, g, beta = (kw[n] for n in ("q", "k", "v", "g", "beta"))
    return lambda: fla(q, k, v, g, beta, **args)


def fla_recurrent(kw: dict, target) -> Callable | None:
    """fla-core's fused_recurrent_gated_delta_rule (fla.ops.gated_delta_rule; no state pool): each sequence's
    start slot is gathered into fla's ``[N, HV, K, V]`` fp32 layout once, outside the timed call, and fla returns a
    new final state instead of updating a pool. Only for calls without padded sequences."""
    if target.family != "nvidia" or not available("fla"):
        return None
    from fla.ops.gated_delta_rule import fused_recurrent_gated_delta_rule as fla

    idx, nat, pool = kw.get("ssm_state_indices"), kw.get("num_accepted_tokens"), kw["initial_state"]
    n = kw["q"].shape[0] if kw.get("cu_seqlens") is None else kw["cu_seqlens"].shape[0] - 1
    if idx is None:
        start = torch.arange(n, device=pool.device)
    elif idx.dim() == 1:
        start = idx.long()
    else:
        col = (nat.long() - 1) if nat is not None else torch.zeros(n, dtype=torch.long, device=idx.device)
        start = idx.long().gather(1, col[:, None])[:, 0]
    if bool((start < 0).any()):
        return None
    h0 = pool[start].float()
    h0 = (h0.transpose(-1, -2) if kw.get("state_v_first", True) else h0).contiguous()
    beta = kw.get("beta") if kw.get("beta") is not None else torch.ones_like(kw["g"])  # [B, T, HV], not fla's [B, T, H]
    args = dict(g=kw["g"], beta=beta, scale=kw.get("scale"), initial_state=h0, output_final_state=True,
                use_qk_l2norm_in_kernel=kw.get("use_qk_l2norm_in_kernel", False), cu_seqlens=kw.get("cu_seqlens"))
    q, k, v = kw["q"], kw["k"], kw["v"]
    return lambda: fla(q, k, v, **args)


def torch_sdpa(kw: dict, target) -> Callable | None:
    """Per-sequence ``scaled_dot_product_attention`` for plain non-paged prefill (no window, softcap,
    sinks; causal only when every sequence is square, where SDPA's top-left mask is the same)."""
    import torch.nn.functional as F

    if kw.get("block_table") is not None or kw.get("s_aux") is not None or kw.get("softcap"):
        return None
    if kw.get("window_size") not in (None, [-1, -1], (-1, -1)) or kw["q"].dtype not in (torch.float16,
                                                                                       torch.bfloat16):
        return None
    cu_q = kw["cu_seqlens_q"].tolist()
    cu_k = kw["cu_seqlens_k"].tolist()
    causal = kw.get("causal", False)
    if causal and any(cu_q[i + 1] - cu_q[i] != cu_k[i + 1] - cu_k[i] for i in range(len(cu_q) - 1)):
        return None
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

    return run


BASELINES = {
    "flash_attn": {"fa4_direct": fa4_direct, "torch_sdpa": torch_sdpa},
    "chunk_gdn": {"fla": fla_chunk},
    "gdn_decode": {"fla": fla_recurrent},
}
