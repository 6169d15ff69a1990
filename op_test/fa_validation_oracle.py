"""A test oracle for attention validation: the contract's rules written one by one with the ``V.*``
helpers, without any shortcut. ``atrex.api.flash_attn.normalize_flash_attn_call`` is the product's single
validator, written for host cost; the property tests check that it accepts exactly the calls this oracle
accepts and returns the same record."""

from __future__ import annotations

import torch

from atrex.api import _validate as V
from atrex.api.flash_attn import FA_VERSIONS, OP, FlashAttnCall
from atrex.dispatch.target import classify_device
from atrex.errors import AtrexNotSupportedError, AtrexTypeError, AtrexValueError

Tensor = torch.Tensor


def oracle_normalize(
    q,
    k,
    v,
    max_seqlen_q,
    cu_seqlens_q,
    max_seqlen_k,
    cu_seqlens_k=None,
    seqused_k=None,
    q_v=None,
    dropout_p=0.0,
    softmax_scale=None,
    causal=False,
    window_size=None,
    softcap=0.0,
    alibi_slopes=None,
    deterministic=False,
    return_attn_probs=False,
    block_table=None,
    return_softmax_lse=False,
    out=None,
    scheduler_metadata=None,
    q_descale=None,
    k_descale=None,
    v_descale=None,
    num_splits=0,
    fa_version=2,
    s_aux=None,
    cp_world_size=1,
    cp_rank=0,
    cp_tot_seqused_k=None,
) -> FlashAttnCall:
    """The contract's rules one by one, in the order the product checks them (slow, obviously right)."""
    # ---- 1. Python types -------------------------------------------------------------------
    q = V.require_tensor("q", q)
    k = V.require_tensor("k", k)
    v = V.require_tensor("v", v)
    max_seqlen_q = V.host_int("max_seqlen_q", max_seqlen_q)
    max_seqlen_k = V.host_int("max_seqlen_k", max_seqlen_k)
    cu_seqlens_q = V.require_tensor("cu_seqlens_q", cu_seqlens_q, "an int32 torch.Tensor [B+1]")
    cu_seqlens_k = V.optional_tensor("cu_seqlens_k", cu_seqlens_k)
    seqused_k = V.optional_tensor("seqused_k", seqused_k)
    block_table = V.optional_tensor("block_table", block_table)
    out = V.optional_tensor("out", out)
    s_aux = V.optional_tensor("s_aux", s_aux)
    q_v = V.optional_tensor("q_v", q_v)
    alibi_slopes = V.optional_tensor("alibi_slopes", alibi_slopes)
    V.optional_tensor("scheduler_metadata", scheduler_metadata, "an int32 torch.Tensor or None (a hint)")
    q_descale = V.optional_tensor("q_descale", q_descale)
    k_descale = V.optional_tensor("k_descale", k_descale)
    v_descale = V.optional_tensor("v_descale", v_descale)
    V.optional_tensor("cp_tot_seqused_k", cp_tot_seqused_k)
    dropout_p = V.host_float("dropout_p", dropout_p, 0.0)
    scale = None if softmax_scale is None else V.host_float("softmax_scale", softmax_scale)
    causal = V.host_bool("causal", causal)
    softcap = V.host_float("softcap", softcap, 0.0)
    deterministic = V.host_bool("deterministic", deterministic)
    return_attn_probs = V.host_bool("return_attn_probs", return_attn_probs)
    return_lse = V.host_bool("return_softmax_lse", return_softmax_lse)
    num_splits = V.host_int("num_splits", num_splits)
    cp_world_size = V.host_int("cp_world_size", cp_world_size, 1)
    cp_rank = V.host_int("cp_rank", cp_rank, 0)
    if fa_version not in FA_VERSIONS or isinstance(fa_version, bool):
        raise AtrexValueError("fa_version", fa_version, "None, 2, 3 or 4 (a label; it never selects hardware)")
    if window_size is None:
        left, right = -1, -1
    else:
        if not isinstance(window_size, (list, tuple)) or len(window_size) != 2:
            raise AtrexValueError("window_size", window_size, "None or a (left, right) pair of ints >= -1")
        left = V.host_int("window_size", window_size[0], -1)
        right = V.host_int("window_size", window_size[1], -1)

    # ---- 2. Structure ----------------------------------------------------------------------
    device = q.device
    if q.dim() != 3:
        raise AtrexValueError("q", V.shape_str(q), "rank 3 [total_q, num_heads_q, head_dim]")
    V.last_dim_contiguous("q", q)
    total_q, hq, d = q.shape
    paged = block_table is not None
    if paged:
        if k.dim() != 4:
            raise AtrexValueError("k", V.shape_str(k), "rank 4 [num_blocks, page_size, num_heads_k, head_dim] "
                                                        "with block_table")
        if v.dim() != 4:
            raise AtrexValueError("v", V.shape_str(v), "rank 4 [num_blocks, page_size, num_heads_k, head_dim_v] "
                                                        "with block_table")
    else:
        if k.dim() != 3:
            raise AtrexValueError("k", V.shape_str(k), "rank 3 [total_k, num_heads_k, head_dim] "
                                                        "(or rank 4 with block_table)")
        if v.dim() != 3:
            raise AtrexValueError("v", V.shape_str(v), "rank 3 [total_k, num_heads_k, head_dim_v]")
    if tuple(k.shape[:-1]) != tuple(v.shape[:-1]):
        raise AtrexValueError("v", V.shape_str(v), f"the leading dims of k {list(k.shape[:-1])}")
    hk, dk, dv = k.shape[-2], k.shape[-1], v.shape[-1]
    if hk < 1 or hq < 1 or hq % hk != 0:
        raise AtrexValueError("k", f"num_heads_k={hk} with num_heads_q={hq}",
                              "num_heads_q a positive multiple of num_heads_k")
    if dk != d:
        raise AtrexValueError("k", f"head_dim {dk}", f"q's head_dim {d}")
    if d < 1:
        raise AtrexValueError("q", V.shape_str(q), "head_dim >= 1")
    V.last_dim_contiguous("k", k)
    V.last_dim_contiguous("v", v)
    V.same_device("k", k, device)
    V.same_device("v", v, device)
    for name, t in (("q", q), ("k", k), ("v", v)):  # an integer tensor is a wrong type, not a feature
        if not t.is_floating_point():
            raise AtrexTypeError(name, V.shape_str(t), "a floating-point tensor (float16, bfloat16, float8_e4m3fn; "
                                 "float32 on the CPU reference)")
    if k.dtype != q.dtype or v.dtype != q.dtype:
        bad, t = ("k", k) if k.dtype != q.dtype else ("v", v)
        raise AtrexNotSupportedError.feature(bad, V.dname(t.dtype), f"the dtype of q ({V.dname(q.dtype)}); "
                                             "mixed dtypes are not supported", op=OP)
    V.int32_vector("cu_seqlens_q", cu_seqlens_q, None, device)
    batch = cu_seqlens_q.shape[0] - 1
    if batch < 0:
        raise AtrexValueError("cu_seqlens_q", V.shape_str(cu_seqlens_q), "shape [B+1] with B >= 0")
    if batch == 0 and total_q > 0:
        raise AtrexValueError("cu_seqlens_q", V.shape_str(cu_seqlens_q), f"B >= 1 when q has {total_q} rows")
    if (cu_seqlens_k is None) == (seqused_k is None):
        raise AtrexValueError("cu_seqlens_k", "both cu_seqlens_k and seqused_k" if cu_seqlens_k is not None
                              else "neither cu_seqlens_k nor seqused_k",
                              "exactly one of cu_seqlens_k (non-paged) / seqused_k (paged, with block_table)")
    if paged and seqused_k is None:
        raise AtrexValueError("seqused_k", None, "a [B] int32 tensor whenever block_table is given")
    if paged and cu_seqlens_k is not None:
        raise AtrexValueError("cu_seqlens_k", "given together with block_table", "None for paged KV (use seqused_k)")
    if not paged and seqused_k is not None:
        raise AtrexValueError("seqused_k", "given without block_table",
                              "None for non-paged KV (use cu_seqlens_k); seqused_k requires block_table")
    page_size = 0
    if paged:
        V.int32_vector("seqused_k", seqused_k, batch, device)
        if block_table.dtype != torch.int32:
            raise AtrexTypeError("block_table", V.shape_str(block_table), "int32 metadata")
        if block_table.dim() != 2 or block_table.shape[0] != batch:
            raise AtrexValueError("block_table", V.shape_str(block_table), f"shape [B={batch}, W]")
        if block_table.shape[1] > 1 and block_table.stride(1) != 1:
            raise AtrexValueError("block_table", f"strides {tuple(block_table.stride())}", "stride(-1) == 1")
        V.same_device("block_table", block_table, device)
        page_size = k.shape[1]
        if page_size < 1:
            raise AtrexValueError("k", V.shape_str(k), "page_size >= 1")
    else:
        V.int32_vector("cu_seqlens_k", cu_seqlens_k, batch + 1, device)
    if not (-1 <= left) or not (-1 <= right):
        raise AtrexValueError("window_size", window_size, "a pair of ints >= -1")
    if cp_world_size == 1 and cp_rank != 0:
        raise AtrexValueError("cp_rank", cp_rank, "0 when cp_world_size == 1")
    if s_aux is not None:
        if s_aux.dim() != 1 or s_aux.shape[0] != hq:
            raise AtrexValueError("s_aux", V.shape_str(s_aux), f"shape [num_heads_q={hq}]")
        if not s_aux.is_contiguous():
            raise AtrexValueError("s_aux", f"strides {tuple(s_aux.stride())}", "a contiguous tensor")
        V.same_device("s_aux", s_aux, device)
    is_fp8 = q.dtype in V.FP8_DTYPES
    out_dtype = torch.bfloat16 if is_fp8 else q.dtype
    if out is not None:
        if tuple(out.shape) != (total_q, hq, dv):
            raise AtrexValueError("out", V.shape_str(out), f"shape [{total_q}, {hq}, {dv}]")
        if out.dtype != out_dtype:
            raise AtrexValueError("out", V.shape_str(out), f"dtype {V.dname(out_dtype)}"
                                  + (" (bf16 output for fp8 q)" if is_fp8 else " (the dtype of q)"))
        V.same_device("out", out, device)
        V.last_dim_contiguous("out", out)
        for name, t in (("q", q), ("k", k), ("v", v)):
            if V.overlaps(out, t):
                raise AtrexValueError("out", f"memory overlapping `{name}`", "a buffer disjoint from q, k and v")
    if is_fp8:
        for name, t in (("q_descale", q_descale), ("k_descale", k_descale), ("v_descale", v_descale)):
            if t is None:
                continue
            if t.dtype != torch.float32:
                raise AtrexTypeError(name, V.shape_str(t), "float32 descales for fp8 inputs")
            if tuple(t.shape) != (batch, hk):
                raise AtrexValueError(name, V.shape_str(t), f"shape [B={batch}, num_heads_k={hk}] (any strides)")
            V.same_device(name, t, device)
    else:  # fp16/bf16: vLLM passes expanded descales on every call; they are ignored, not rejected
        q_descale = k_descale = v_descale = None

    # ---- 3. Options no implementation takes --------------------------------------------------
    if dropout_p != 0.0:
        raise AtrexNotSupportedError.feature("dropout_p", dropout_p, "0.0 (inference only)", op=OP)
    if alibi_slopes is not None:
        raise AtrexNotSupportedError.feature("alibi_slopes", V.shape_str(alibi_slopes), "None", op=OP)
    if return_attn_probs:
        raise AtrexNotSupportedError.feature("return_attn_probs", True, "False", op=OP)
    if q_v is not None:
        raise AtrexNotSupportedError.feature("q_v", V.shape_str(q_v), "None (MLA is not supported)", op=OP)
    if dv != d:
        raise AtrexNotSupportedError.feature("v", f"head_dim_v {dv} != head_dim {d}", "head_dim_v == head_dim",
                                             op=OP)
    if cp_world_size > 1:
        raise AtrexNotSupportedError.feature("cp_world_size", cp_world_size, "1 (no context parallelism)", op=OP)
    if cp_tot_seqused_k is not None:
        raise AtrexNotSupportedError.feature("cp_tot_seqused_k", "a tensor", "None", op=OP)
    V.reject_grad(OP, {"q": q, "k": k, "v": v, "s_aux": s_aux})

    # ---- 4. Canonical options ----------------------------------------------------------------
    if causal:
        right = 0
    causal = right == 0
    return FlashAttnCall(
        q, k, v, out, cu_seqlens_q, cu_seqlens_k, seqused_k, block_table, max_seqlen_q, max_seqlen_k, batch,
        total_q, hq, hk, d, dv, paged, page_size, q.dtype, out_dtype, is_fp8,
        d ** -0.5 if scale is None else scale, causal, left, right, softcap, s_aux, return_lse,
        q_descale, k_descale, v_descale, num_splits, deterministic, device, classify_device(device),
        V.capturing(device), all(_aligned16(t) for t in (q, k, v, out) if t is not None),
    )


def _aligned16(t: Tensor) -> bool:
    es = t.element_size()
    return t.data_ptr() % 16 == 0 and all((st * es) % 16 == 0 for st in t.stride()[:-1])
