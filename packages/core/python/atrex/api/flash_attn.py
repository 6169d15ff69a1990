"""``atrex.flash_attn_varlen_func``: vLLM's varlen / paged flash-attention contract.

All validation happens here, once, producing an immutable :class:`FlashAttnCall` that
``can_use_flash_attn_varlen_func``, every implementation's ``check`` and its ``run`` receive.
"""

from __future__ import annotations

from typing import NamedTuple

import torch

from atrex.api import _validate as V
from atrex.api._values import check_attention_values, wanted
from atrex.dispatch.registry import get_registry
from atrex.dispatch.target import DeviceTarget, classify_device
from atrex.errors import AtrexError, AtrexNotSupportedError, AtrexTypeError, AtrexValueError

__all__ = [
    "FlashAttnCall",
    "can_use_flash_attn_varlen_func",
    "explain_flash_attn_varlen_func",
    "flash_attn_varlen_func",
    "normalize_flash_attn_call",
]

OP = "flash_attn_varlen"
Tensor = torch.Tensor
FA_VERSIONS = (None, 2, 3, 4)


class FlashAttnCall(NamedTuple):
    """The validated, normalized attention call (immutable).

    Shapes: ``q [Tq, Hq, D]``; paged ``k/v [num_blocks, page_size, Hk, D]`` with ``block_table
    [B, W]`` and ``seqused_k [B]``; non-paged ``k/v [Tk, Hk, D]`` with ``cu_seqlens_k [B+1]``.
    ``window_left/right`` use -1 for unbounded; ``causal`` is True iff the canonical right bound
    is 0 (docs/flash_attn_varlen_func.md, "Masking"). Descales are None unless q is fp8 (fp16/bf16 ignore them).
    """

    q: Tensor
    k: Tensor
    v: Tensor
    out: Tensor | None
    cu_seqlens_q: Tensor
    cu_seqlens_k: Tensor | None
    seqused_k: Tensor | None
    block_table: Tensor | None
    max_seqlen_q: int
    max_seqlen_k: int
    batch: int
    total_q: int
    num_heads_q: int
    num_heads_k: int
    head_dim: int
    head_dim_v: int
    paged: bool
    page_size: int  # 0 when non-paged
    dtype: torch.dtype
    out_dtype: torch.dtype
    is_fp8: bool
    softmax_scale: float
    causal: bool
    window_left: int
    window_right: int
    softcap: float
    s_aux: Tensor | None
    return_lse: bool
    q_descale: Tensor | None
    k_descale: Tensor | None
    v_descale: Tensor | None
    num_splits: int
    deterministic: bool
    device: torch.device
    target: DeviceTarget
    capturing: bool
    #: every data_ptr and every stride but the last (in bytes) of q, k, v and out is a multiple of 16
    #: (TMA and vectorized loads need it; checks read this instead of walking the tensors)
    aligned16: bool = True

    @property
    def gqa_ratio(self) -> int:
        return self.num_heads_q // self.num_heads_k


def normalize_flash_attn_call(
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
    """Validate a call under the vLLM contract and return its normalized record (raises on bad input)."""
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


_FAST_DTYPES = (torch.float16, torch.bfloat16)  # both 2 bytes per element (the fast path relies on it)
_FA_LABELS = frozenset(FA_VERSIONS)  # hash + ==: accepts a subset of what `in FA_VERSIONS` accepts, never a bool
_INF = float("inf")
_I32 = torch.int32
_new_record = tuple.__new__
_grad_enabled = torch.is_grad_enabled


def _normalize_fast(
    q, k, v, max_seqlen_q, cu_seqlens_q, max_seqlen_k, cu_seqlens_k=None, seqused_k=None, q_v=None,
    dropout_p=0.0, softmax_scale=None, causal=False, window_size=None, softcap=0.0, alibi_slopes=None,
    deterministic=False, return_attn_probs=False, block_table=None, return_softmax_lse=False, out=None,
    scheduler_metadata=None, q_descale=None, k_descale=None, v_descale=None, num_splits=0, fa_version=2,
    s_aux=None, cp_world_size=1, cp_rank=0, cp_tot_seqused_k=None,
) -> FlashAttnCall | None:
    """The common fp16/bf16 call, validated with as few tensor-attribute reads as possible.

    Returns the same record :func:`normalize_flash_attn_call` would, or None whenever anything is
    unusual (then the detailed path runs and raises the precise error). It never accepts what the
    detailed path rejects: ``test_fast_path_agrees`` checks this on thousands of generated calls.
    Each tensor attribute read costs ~0.05-0.15 us, so each is read once (shape, stride(), device,
    dtype, data_ptr()); host arguments need exact types (a subclass, numpy scalar ... goes the slow way).
    """
    T = Tensor
    # ---- host arguments: types first, so that the comparisons below only ever see ints/floats
    if (type(q) is not T or type(k) is not T or type(v) is not T or type(cu_seqlens_q) is not T
            or type(max_seqlen_q) is not int or type(max_seqlen_k) is not int or type(causal) is not bool
            or type(deterministic) is not bool or type(return_softmax_lse) is not bool
            or type(num_splits) is not int or type(cp_world_size) is not int or type(cp_rank) is not int
            or return_attn_probs is not False or q_v is not None or alibi_slopes is not None
            or cp_tot_seqused_k is not None
            or (out is not None and type(out) is not T) or (s_aux is not None and type(s_aux) is not T)
            or (scheduler_metadata is not None and type(scheduler_metadata) is not T)
            or (q_descale is not None and type(q_descale) is not T)
            or (k_descale is not None and type(k_descale) is not T)
            or (v_descale is not None and type(v_descale) is not T)):
        return None
    if (max_seqlen_q < 0 or max_seqlen_k < 0 or num_splits < 0 or cp_world_size != 1 or cp_rank != 0
            or fa_version not in _FA_LABELS):  # unhashable fa_version: TypeError, caught by the caller
        return None
    t = type(dropout_p)
    if (t is not float and t is not int) or dropout_p != 0:
        return None
    t = type(softcap)
    if (t is not float and t is not int) or not 0 <= softcap < _INF:
        return None
    if softmax_scale is not None:
        t = type(softmax_scale)
        if (t is not float and t is not int) or not -_INF < softmax_scale < _INF:
            return None
    if window_size is None:
        left = right = -1
    else:
        t = type(window_size)
        if (t is not tuple and t is not list) or len(window_size) != 2:
            return None
        left, right = window_size
        if type(left) is not int or type(right) is not int or left < -1 or right < -1:
            return None

    # ---- q, k, v
    dtype = q.dtype
    if dtype not in _FAST_DTYPES or k.dtype is not dtype or v.dtype is not dtype:
        return None
    qs = q.shape
    if len(qs) != 3:
        return None
    total_q, hq, d = qs
    ks = k.shape
    paged = block_table is not None
    # k and v: equal shapes (head_dim_v == head_dim), rank 4 with block_table, else 3
    if ks != v.shape or len(ks) != (4 if paged else 3) or ks[-1] != d or d < 1 or hq < 1:
        return None
    qst, kst, vst = q.stride(), k.stride(), v.stride()
    if qst[2] != 1 or kst[-1] != 1 or vst[-1] != 1:
        return None
    device = q.device
    if k.device != device or v.device != device or cu_seqlens_q.device != device:
        return None

    # ---- metadata (1-D int32 vectors: is_contiguous() <=> length <= 1 or stride 1, as int32_vector)
    cs = cu_seqlens_q.shape
    if cu_seqlens_q.dtype is not _I32 or len(cs) != 1 or not cu_seqlens_q.is_contiguous():
        return None
    batch = cs[0] - 1
    if batch < 0 or (batch == 0 and total_q > 0):
        return None
    if paged:
        if type(block_table) is not T or type(seqused_k) is not T or cu_seqlens_k is not None:
            return None
        page_size, hk = ks[1], ks[2]
        if page_size < 1:
            return None
        bs, us = block_table.shape, seqused_k.shape
        if (block_table.dtype is not _I32 or len(bs) != 2 or bs[0] != batch
                or (bs[1] > 1 and block_table.stride()[1] != 1) or block_table.device != device
                or seqused_k.dtype is not _I32 or len(us) != 1 or us[0] != batch
                or not seqused_k.is_contiguous() or seqused_k.device != device):
            return None
    else:
        if type(cu_seqlens_k) is not T or seqused_k is not None:
            return None
        hk = ks[1]
        cks = cu_seqlens_k.shape
        if (cu_seqlens_k.dtype is not _I32 or len(cks) != 1 or cks[0] != batch + 1
                or not cu_seqlens_k.is_contiguous() or cu_seqlens_k.device != device):
            return None
        page_size = 0
    if hk < 1 or hq % hk != 0:
        return None
    if s_aux is not None and (s_aux.shape != (hq,) or not s_aux.is_contiguous() or s_aux.device != device):
        return None
    if _grad_enabled() and (q.requires_grad or k.requires_grad or v.requires_grad
                            or (s_aux is not None and s_aux.requires_grad)):
        return None

    # ---- out, then 16-byte alignment (pointers are read once for both)
    q0, k0, v0 = q.data_ptr(), k.data_ptr(), v.data_ptr()
    ptrs = q0 | k0 | v0
    strides = qst[0] | qst[1] | kst[0] | kst[1] | vst[0] | vst[1]
    if paged:
        strides |= kst[2] | vst[2]
    if out is not None:
        if out.dtype is not dtype or out.shape != qs or out.device != device:
            return None
        ost = out.stride()
        if ost[2] != 1:
            return None
        o0 = out.data_ptr()
        ptrs |= o0
        strides |= ost[0] | ost[1]
        if total_q:  # else out is empty and overlaps nothing
            # V.overlaps, exactly: byte ranges [start, start + 2 * (1 + sum((size - 1) * stride))), the last
            # dim being d with stride 1; a tensor's length is only needed when it starts below out's end.
            # (Comparing storages instead would miss two storages over the same memory, e.g. from DLPack.)
            o_len = 2 * ((total_q - 1) * ost[0] + (hq - 1) * ost[1] + d)
            o1 = o0 + o_len
            if q0 < o1:
                q_len = o_len if qst == ost else 2 * ((total_q - 1) * qst[0] + (hq - 1) * qst[1] + d)
                if o0 < q0 + q_len:
                    return None
            n = ks[0]  # k and v are empty iff n == 0 (their other dims are >= 1)
            if n and (k0 < o1 or v0 < o1):
                k_len = (n - 1) * kst[0] + (ks[1] - 1) * kst[1] + d
                if paged:
                    k_len += (hk - 1) * kst[2]
                v_len = k_len  # v has k's shape, and usually its strides (two views of one KV cache)
                if vst != kst:
                    v_len = (n - 1) * vst[0] + (ks[1] - 1) * vst[1] + d
                    if paged:
                        v_len += (hk - 1) * vst[2]
                if (k0 < o1 and o0 < k0 + 2 * k_len) or (v0 < o1 and o0 < v0 + 2 * v_len):
                    return None
    # 16 / element size (2) = 8: OR-ing the strides before masking tests every one of them
    aligned16 = not (ptrs & 15 or strides & 7)

    if causal:
        right = 0
    # tuple.__new__ directly: the generated NamedTuple constructor binds 37 parameters by name first
    return _new_record(FlashAttnCall, (
        q, k, v, out, cu_seqlens_q, cu_seqlens_k, seqused_k, block_table, max_seqlen_q, max_seqlen_k, batch,
        total_q, hq, hk, d, d, paged, page_size, dtype, dtype, False,
        d ** -0.5 if softmax_scale is None else float(softmax_scale), right == 0, left, right, float(softcap),
        s_aux, return_softmax_lse, None, None, None, num_splits, deterministic, device, classify_device(device),
        q.is_cuda and torch.cuda.is_current_stream_capturing(),  # as V.capturing: every call, CUDA/HIP only
        aligned16,
    ))


def _finish(call: FlashAttnCall | None, args, kwargs, op: str) -> FlashAttnCall:
    """The detailed validation when the fast path declined (binding errors -> AtrexTypeError), then
    the value preconditions: always on CPU tensors, elsewhere with ``ATREX_CHECK_VALUES=1`` (never
    under capture)."""
    if call is None:
        call = V.bind(normalize_flash_attn_call, op, args, kwargs)
    if wanted(call):
        check_attention_values(call)
    return call


def normalize(*args, **kwargs) -> FlashAttnCall:
    """The fast path when it applies, else the detailed validation (binding errors -> AtrexTypeError).
    The value preconditions are checked on CPU tensors, and elsewhere with ``ATREX_CHECK_VALUES=1``.
    (The public functions inline this: every ``*args, **kwargs`` hop costs ~1 us for vLLM's 21 keywords.)"""
    try:
        call = _normalize_fast(*args, **kwargs)
    except TypeError:
        call = None
    return _finish(call, args, kwargs, "flash_attn_varlen_func")


def _empty_result(call: FlashAttnCall, out: Tensor):
    if call.return_lse:
        return out, torch.empty((call.num_heads_q, call.total_q), dtype=torch.float32, device=call.device)
    return out


def run_call(call: FlashAttnCall, impl=None):
    """Dispatch and run a normalized call (the operator after validation)."""
    if impl is None:
        impl = get_registry().select(OP, call)
    out = call.out
    if out is None:
        out = torch.empty((call.total_q, call.num_heads_q, call.head_dim_v), dtype=call.out_dtype,
                          device=call.device)
    if call.total_q == 0:
        return _empty_result(call, out)
    lse = impl.run(call, out)
    return (out, lse) if call.return_lse else out


_DOC = """Variable-length / paged flash attention with vLLM's exact signature and semantics.

Parameters
----------
q : Tensor ``[total_q, num_heads_q, head_dim]``
    fp16, bf16 or fp8 e4m3 (e5m2 where a target declares it); ``stride(-1) == 1``.
k, v : Tensor
    Paged: ``[num_blocks, page_size, num_heads_k, head_dim]`` with ``block_table`` and ``seqused_k``.
    Non-paged: ``[total_k, num_heads_k, head_dim]`` with ``cu_seqlens_k``. Same dtype as q;
    ``stride(-1) == 1``, other strides free (NHD, HND-permuted, interleaved K/V views).
    ``num_heads_q % num_heads_k == 0``; query head ``h`` reads KV head ``h // (Hq/Hk)``.
max_seqlen_q, max_seqlen_k : int
    Host ints bounding the per-sequence lengths (a capacity under CUDA graphs is fine).
cu_seqlens_q : Tensor ``[B+1]`` int32
    Query offsets. Note vLLM's order: ``max_seqlen_q, cu_seqlens_q, max_seqlen_k``.
cu_seqlens_k : Tensor ``[B+1]`` int32, optional
    Key offsets (non-paged only).
seqused_k : Tensor ``[B]`` int32, optional
    Valid KV tokens per sequence; required iff ``block_table`` is given.
softmax_scale : float, optional
    Defaults to ``head_dim ** -0.5``.
causal : bool
    Bottom-right aligned causal mask.
window_size : (int, int) or list, optional
    ``(left, right)``, -1 = unbounded on that side.
softcap : float
    0 = off; else ``softcap * tanh(s / softcap)`` on the scaled scores.
block_table : Tensor ``[B, W]`` int32, optional
    Physical page ids; entries past ``ceil(seqused_k / page_size)`` are never read.
return_softmax_lse : bool
    Also return the natural-log LSE, fp32 ``[num_heads_q, total_q]`` (-inf for fully masked rows).
out : Tensor ``[total_q, num_heads_q, head_dim]``, optional
    Written in place and returned. dtype of q, bf16 when q is fp8.
q_descale, k_descale, v_descale : Tensor ``[B, num_heads_k]`` fp32, optional
    fp8 only (any strides, stride 0 included); ignored for fp16/bf16 inputs.
num_splits : int
    0 = implementation decides, 1 = no split (batch-invariant), n > 1 = upper bound.
s_aux : Tensor ``[num_heads_q]``, optional
    Per-head attention-sink logit.
scheduler_metadata, fa_version
    Accepted hints, never change the result.
dropout_p, alibi_slopes, return_attn_probs, q_v, cp_world_size > 1, cp_tot_seqused_k
    Rejected with :class:`AtrexNotSupportedError` (never silently ignored).

Returns
-------
``out``, or ``(out, lse)`` when ``return_softmax_lse``.

Raises
------
AtrexTypeError, AtrexValueError
    Malformed input (before any launch; inputs and ``out`` untouched).
AtrexNotSupportedError
    No installed implementation accepts the call; carries every candidate's reasons.
AtrexCaptureError
    The call would compile during CUDA-graph capture (use ``atrex.prewarm`` first).
"""


@V.with_exact_signature(normalize_flash_attn_call, "flash_attn_varlen_func", _DOC)
def flash_attn_varlen_func(*args, **kwargs):
    try:  # normalize(), inlined
        call = _normalize_fast(*args, **kwargs)
    except TypeError:
        call = None
    return run_call(_finish(call, args, kwargs, "flash_attn_varlen_func"))


@V.with_exact_signature(normalize_flash_attn_call, "can_use_flash_attn_varlen_func")
def can_use_flash_attn_varlen_func(*args, **kwargs) -> bool:
    """True iff the same call, made now on the same stream, would run on an ATREX implementation
    (the torch reference does not count on an accelerator). Never raises for ATREX errors, never
    launches, allocates, synchronizes or compiles. ``explain_flash_attn_varlen_func`` gives the reasons."""
    try:  # normalize(), inlined
        call = _normalize_fast(*args, **kwargs)
    except TypeError:
        call = None
    try:
        call = _finish(call, args, kwargs, "flash_attn_varlen_func")
        impl = get_registry().select(OP, call)
    except AtrexError:
        return False
    return not (impl.is_reference and call.target.is_accelerator)


@V.with_exact_signature(normalize_flash_attn_call, "explain_flash_attn_varlen_func")
def explain_flash_attn_varlen_func(*args, **kwargs):
    """The dispatch trace for this call (every candidate with its reasons) without running it.
    Raises the same AtrexTypeError/AtrexValueError as the operator for malformed input."""
    call = V.bind(normalize_flash_attn_call, "explain_flash_attn_varlen_func", args, kwargs)
    return get_registry().explain(OP, call)
