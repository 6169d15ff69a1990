"""``atrex.flash_attn_varlen_func``: vLLM's varlen / paged flash-attention contract.

All validation happens here, once, in one function, producing an immutable :class:`FlashAttnCall` that
``can_use_flash_attn_varlen_func``, every implementation's ``check`` and its ``run`` receive.
"""

from __future__ import annotations

from typing import NamedTuple

import torch

from atrex import env as _env
from atrex.api import _validate as V
from atrex.api._fa_fast import fast_call, remember
from atrex.api._memo import chosen_impl, classed, unclassed_replace
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
    #: the call's validated class (``atrex/api/_memo.py``) when the memo served it, else None: equal for calls with
    #: the same dtypes, devices, flags, scalars and tensor sizes and strides but the per-call rows and batch.
    #: Launchers may key on it instead of reading those again; ``_replace`` resets it.
    cls: object = None

    @property
    def gqa_ratio(self) -> int:
        return self.num_heads_q // self.num_heads_k


_INF = float("inf")
_I32 = torch.int32
_F16, _BF16 = torch.float16, torch.bfloat16
_FP8 = V.FP8_DTYPES
_FA_LABELS = frozenset(x for x in FA_VERSIONS if x is not None)  # the int labels, hashed
_new_record = tuple.__new__
_grad_enabled = torch.is_grad_enabled
_capturing = torch.cuda.is_current_stream_capturing


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
    """Validate a call under the vLLM contract and return its normalized record (raises on bad input).

    One path for every call, written for the per-call host cost: each rule is a cheap test on values
    read once (shape, stride(), device, dtype, data_ptr(); each read costs ~0.05-0.15 us), and only its
    failing branch calls a ``V.*`` helper, which either normalizes an unusual but valid value (a tensor
    subclass, a numpy int, an int flag) or raises the precise typed error.
    """
    T = Tensor
    # ---- 1. Python types -------------------------------------------------------------------
    if type(q) is not T:
        V.require_tensor("q", q)
    if type(k) is not T:
        V.require_tensor("k", k)
    if type(v) is not T:
        V.require_tensor("v", v)
    if type(max_seqlen_q) is not int or max_seqlen_q < 0:
        max_seqlen_q = V.host_int("max_seqlen_q", max_seqlen_q)
    if type(max_seqlen_k) is not int or max_seqlen_k < 0:
        max_seqlen_k = V.host_int("max_seqlen_k", max_seqlen_k)
    if type(cu_seqlens_q) is not T:
        V.require_tensor("cu_seqlens_q", cu_seqlens_q, "an int32 torch.Tensor [B+1]")
    # optional tensors: one inline test each (a loop over (name, value) pairs costs ~1 us per call)
    if cu_seqlens_k is not None and type(cu_seqlens_k) is not T:
        V.optional_tensor("cu_seqlens_k", cu_seqlens_k)
    if seqused_k is not None and type(seqused_k) is not T:
        V.optional_tensor("seqused_k", seqused_k)
    if block_table is not None and type(block_table) is not T:
        V.optional_tensor("block_table", block_table)
    if out is not None and type(out) is not T:
        V.optional_tensor("out", out)
    if s_aux is not None and type(s_aux) is not T:
        V.optional_tensor("s_aux", s_aux)
    if q_v is not None and type(q_v) is not T:
        V.optional_tensor("q_v", q_v)
    if alibi_slopes is not None and type(alibi_slopes) is not T:
        V.optional_tensor("alibi_slopes", alibi_slopes)
    if scheduler_metadata is not None and type(scheduler_metadata) is not T:
        V.optional_tensor("scheduler_metadata", scheduler_metadata, "an int32 torch.Tensor or None (a hint)")
    if q_descale is not None and type(q_descale) is not T:
        V.optional_tensor("q_descale", q_descale)
    if k_descale is not None and type(k_descale) is not T:
        V.optional_tensor("k_descale", k_descale)
    if v_descale is not None and type(v_descale) is not T:
        V.optional_tensor("v_descale", v_descale)
    if cp_tot_seqused_k is not None and type(cp_tot_seqused_k) is not T:
        V.optional_tensor("cp_tot_seqused_k", cp_tot_seqused_k)
    t = type(dropout_p)
    if (t is not float and t is not int) or not 0 <= dropout_p < _INF:
        dropout_p = V.host_float("dropout_p", dropout_p, 0.0)
    if softmax_scale is not None:
        t = type(softmax_scale)
        if (t is not float and t is not int) or not -_INF < softmax_scale < _INF:
            softmax_scale = V.host_float("softmax_scale", softmax_scale)
    if type(causal) is not bool:
        causal = V.host_bool("causal", causal)
    t = type(softcap)
    if (t is not float and t is not int) or not 0 <= softcap < _INF:
        softcap = V.host_float("softcap", softcap, 0.0)
    if type(deterministic) is not bool:
        deterministic = V.host_bool("deterministic", deterministic)
    if type(return_attn_probs) is not bool:
        return_attn_probs = V.host_bool("return_attn_probs", return_attn_probs)
    if type(return_softmax_lse) is not bool:
        return_softmax_lse = V.host_bool("return_softmax_lse", return_softmax_lse)
    if type(num_splits) is not int or num_splits < 0:
        num_splits = V.host_int("num_splits", num_splits)
    if type(cp_world_size) is not int or cp_world_size < 1:
        cp_world_size = V.host_int("cp_world_size", cp_world_size, 1)
    if type(cp_rank) is not int or cp_rank < 0:
        cp_rank = V.host_int("cp_rank", cp_rank, 0)
    if (type(fa_version) is not int or fa_version not in _FA_LABELS) and (
            fa_version not in FA_VERSIONS or isinstance(fa_version, bool)):
        raise AtrexValueError("fa_version", fa_version, "None, 2, 3 or 4 (a label; it never selects hardware)")
    if window_size is None:
        left = right = -1
    else:
        t = type(window_size)
        if ((t is not list and t is not tuple) and not isinstance(window_size, (list, tuple))) or len(window_size) != 2:
            raise AtrexValueError("window_size", window_size, "None or a (left, right) pair of ints >= -1")
        left, right = window_size
        if type(left) is not int or left < -1:
            left = V.host_int("window_size", left, -1)
        if type(right) is not int or right < -1:
            right = V.host_int("window_size", right, -1)

    # ---- 2. Structure ----------------------------------------------------------------------
    device = q.device
    qs = q.shape
    if len(qs) != 3:
        raise AtrexValueError("q", V.shape_str(q), "rank 3 [total_q, num_heads_q, head_dim]")
    qst = q.stride()
    if qst[2] != 1 and qs[2] > 1:
        V.last_dim_contiguous("q", q)
    total_q, hq, d = qs
    paged = block_table is not None
    ks, vs = k.shape, v.shape
    if paged:
        if len(ks) != 4:
            raise AtrexValueError("k", V.shape_str(k), "rank 4 [num_blocks, page_size, num_heads_k, head_dim] "
                                                        "with block_table")
        if len(vs) != 4:
            raise AtrexValueError("v", V.shape_str(v), "rank 4 [num_blocks, page_size, num_heads_k, head_dim_v] "
                                                        "with block_table")
    else:
        if len(ks) != 3:
            raise AtrexValueError("k", V.shape_str(k), "rank 3 [total_k, num_heads_k, head_dim] "
                                                        "(or rank 4 with block_table)")
        if len(vs) != 3:
            raise AtrexValueError("v", V.shape_str(v), "rank 3 [total_k, num_heads_k, head_dim_v]")
    if ks != vs and ks[:-1] != vs[:-1]:
        raise AtrexValueError("v", V.shape_str(v), f"the leading dims of k {list(ks[:-1])}")
    hk, dk, dv = ks[-2], ks[-1], vs[-1]
    if hk < 1 or hq < 1 or hq % hk != 0:
        raise AtrexValueError("k", f"num_heads_k={hk} with num_heads_q={hq}",
                              "num_heads_q a positive multiple of num_heads_k")
    if dk != d:
        raise AtrexValueError("k", f"head_dim {dk}", f"q's head_dim {d}")
    if d < 1:
        raise AtrexValueError("q", V.shape_str(q), "head_dim >= 1")
    kst, vst = k.stride(), v.stride()
    if kst[-1] != 1 and dk > 1:
        V.last_dim_contiguous("k", k)
    if vst[-1] != 1 and dv > 1:
        V.last_dim_contiguous("v", v)
    if k.device != device:
        V.same_device("k", k, device)
    if v.device != device:
        V.same_device("v", v, device)
    dtype = q.dtype
    if dtype is not _F16 and dtype is not _BF16:
        for name, t in (("q", q), ("k", k), ("v", v)):  # an integer tensor is a wrong type, not a feature
            if not t.is_floating_point():
                raise AtrexTypeError(name, V.shape_str(t), "a floating-point tensor (float16, bfloat16, "
                                     "float8_e4m3fn; float32 on the CPU reference)")
    if k.dtype is not dtype or v.dtype is not dtype:
        bad, t = ("k", k) if k.dtype is not dtype else ("v", v)
        if not t.is_floating_point():
            raise AtrexTypeError(bad, V.shape_str(t), "a floating-point tensor of q's dtype")
        raise AtrexNotSupportedError.feature(bad, V.dname(t.dtype), f"the dtype of q ({V.dname(dtype)}); "
                                             "mixed dtypes are not supported", op=OP)
    cs = cu_seqlens_q.shape
    if (cu_seqlens_q.dtype is not _I32 or len(cs) != 1 or (cs[0] > 1 and cu_seqlens_q.stride()[0] != 1)
            or cu_seqlens_q.device != device):
        V.int32_vector("cu_seqlens_q", cu_seqlens_q, None, device)
    batch = cs[0] - 1
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
    if paged:
        us = seqused_k.shape
        if (seqused_k.dtype is not _I32 or len(us) != 1 or us[0] != batch
                or (batch > 1 and seqused_k.stride()[0] != 1) or seqused_k.device != device):
            V.int32_vector("seqused_k", seqused_k, batch, device)
        if block_table.dtype is not _I32:
            raise AtrexTypeError("block_table", V.shape_str(block_table), "int32 metadata")
        bs = block_table.shape
        if len(bs) != 2 or bs[0] != batch:
            raise AtrexValueError("block_table", V.shape_str(block_table), f"shape [B={batch}, W]")
        if bs[1] > 1 and block_table.stride()[1] != 1:
            raise AtrexValueError("block_table", f"strides {tuple(block_table.stride())}", "stride(-1) == 1")
        if block_table.device != device:
            V.same_device("block_table", block_table, device)
        page_size = ks[1]
        if page_size < 1:
            raise AtrexValueError("k", V.shape_str(k), "page_size >= 1")
    else:
        cks = cu_seqlens_k.shape
        if (cu_seqlens_k.dtype is not _I32 or len(cks) != 1 or cks[0] != batch + 1
                or (cks[0] > 1 and cu_seqlens_k.stride()[0] != 1) or cu_seqlens_k.device != device):
            V.int32_vector("cu_seqlens_k", cu_seqlens_k, batch + 1, device)
        page_size = 0
    if cp_world_size == 1 and cp_rank != 0:
        raise AtrexValueError("cp_rank", cp_rank, "0 when cp_world_size == 1")
    if s_aux is not None and (s_aux.shape != (hq,) or not s_aux.is_contiguous() or s_aux.device != device):
        if s_aux.dim() != 1 or s_aux.shape[0] != hq:
            raise AtrexValueError("s_aux", V.shape_str(s_aux), f"shape [num_heads_q={hq}]")
        if not s_aux.is_contiguous():
            raise AtrexValueError("s_aux", f"strides {tuple(s_aux.stride())}", "a contiguous tensor")
        if s_aux.device != device:
            V.same_device("s_aux", s_aux, device)
    is_fp8 = dtype in _FP8
    out_dtype = _BF16 if is_fp8 else dtype
    es = 2 if (dtype is _F16 or dtype is _BF16) else dtype.itemsize  # bytes per element
    q0, k0, v0 = q.data_ptr(), k.data_ptr(), v.data_ptr()
    ptrs = q0 | k0 | v0
    mask = 16 // es - 1  # stride * es % 16 == 0  <=>  stride & mask == 0 (es is a power of 2 <= 8)
    aligned16 = not ((qst[0] | qst[1] | kst[0] | kst[1] | vst[0] | vst[1]
                      | (kst[2] | vst[2] if paged else 0)) & mask)
    if out is not None:
        if out.shape != (total_q, hq, dv):
            raise AtrexValueError("out", V.shape_str(out), f"shape [{total_q}, {hq}, {dv}]")
        if out.dtype is not out_dtype:
            raise AtrexValueError("out", V.shape_str(out), f"dtype {V.dname(out_dtype)}"
                                  + (" (bf16 output for fp8 q)" if is_fp8 else " (the dtype of q)"))
        if out.device != device:
            V.same_device("out", out, device)
        ost = out.stride()
        if ost[2] != 1 and dv > 1:
            V.last_dim_contiguous("out", out)
        o0 = out.data_ptr()
        ptrs |= o0
        oes = 2 if is_fp8 else es  # fp8 q writes a bf16 out
        aligned16 = aligned16 and not ((ost[0] | ost[1]) & (16 // oes - 1))
        if total_q and dv:  # an empty out overlaps nothing (hq >= 1 here)
            o1 = o0 + ((total_q - 1) * ost[0] + (hq - 1) * ost[1] + (dv - 1) * ost[2] + 1) * oes
            # a tensor's end matters only when it starts below out's end (one test each, no loop: host cost)
            if q0 < o1 and o0 < q0 + (_extent(qs, qst) + 1) * es:
                _overlap("q")
            if k0 < o1 and _overlaps(o0, k0, ks, kst, es):
                _overlap("k")
            if v0 < o1 and _overlaps(o0, v0, vs, vst, es):
                _overlap("v")
    aligned16 = aligned16 and not (ptrs & 15)
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
    if _grad_enabled() and (q.requires_grad or k.requires_grad or v.requires_grad
                            or (s_aux is not None and s_aux.requires_grad)):
        V.reject_grad(OP, {"q": q, "k": k, "v": v, "s_aux": s_aux})

    # ---- 4. Canonical options ----------------------------------------------------------------
    if causal:
        right = 0
    # tuple.__new__ directly: the generated NamedTuple constructor binds 38 parameters by name first
    return _new_record(FlashAttnCall, (
        q, k, v, out, cu_seqlens_q, cu_seqlens_k, seqused_k, block_table, max_seqlen_q, max_seqlen_k, batch,
        total_q, hq, hk, d, dv, paged, page_size, dtype, out_dtype, is_fp8,
        d ** -0.5 if softmax_scale is None else float(softmax_scale), right == 0, left, right, float(softcap),
        s_aux, return_softmax_lse, q_descale, k_descale, v_descale, num_splits, deterministic, device,
        classify_device(device), q.is_cuda and _capturing(), aligned16, None,  # (is_cuda: device.type builds a str)
    ))


def _extent(shape, stride) -> int:
    """Elements from a tensor's first to its last (-1 when it is empty); strides are never negative."""
    e = 0
    for n, st in zip(shape, stride):
        if n == 0:
            return -1
        e += (n - 1) * st
    return e


def _overlaps(o0: int, t0: int, shape, stride, es: int) -> bool:
    """Whether a tensor at ``t0`` (``es`` bytes per element) reaches past ``o0``; empty tensors reach nothing."""
    e = _extent(shape, stride)
    return e >= 0 and o0 < t0 + (e + 1) * es


def _overlap(name: str):
    raise AtrexValueError("out", f"memory overlapping `{name}`", "a buffer disjoint from q, k and v")


unclassed_replace(FlashAttnCall)


def _bind_failure(exc: TypeError, op: str) -> None:
    """Raise AtrexTypeError when ``exc`` came from binding the arguments (the validator's body never ran:
    the traceback stops in the caller's frame); return otherwise, for the caller to re-raise."""
    if not isinstance(exc, AtrexError) and exc.__traceback__ is not None and exc.__traceback__.tb_next is None:
        raise V.binding_error(exc, op) from None


def normalize(*args, **kwargs) -> FlashAttnCall:
    """Validate (binding errors -> AtrexTypeError), then the value preconditions: always on CPU
    tensors, elsewhere with ``ATREX_CHECK_VALUES=1`` (never under capture).
    (The public functions inline this: every ``*args, **kwargs`` hop costs ~1 us for vLLM's 21 keywords.)"""
    try:
        call = normalize_flash_attn_call(*args, **kwargs)
    except TypeError as exc:
        _bind_failure(exc, "flash_attn_varlen_func")
        raise
    if wanted(call):
        check_attention_values(call)
    return call


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
        hq, dv = call.num_heads_q, call.head_dim_v  # (empty_strided: less argument parsing than empty)
        out = torch.empty_strided((call.total_q, hq, dv), (hq * dv, dv, 1), dtype=call.out_dtype, device=call.device)
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


def _validated(args, kwargs):
    """``(record, implementation)``. A keyword call of a class seen before takes the memo's fast path
    (``_fa_fast.py``), and the implementation its entry chose for the same per-call values under the same registry
    and settings; any other call is validated in full, selected by the registry, and remembered when it is a
    keyword call."""
    reg = get_registry()
    hit = None if args else fast_call(kwargs, reg, _env._settings)
    if hit is None:
        try:
            call = normalize_flash_attn_call(*args, **kwargs)
        except TypeError as exc:
            _bind_failure(exc, "flash_attn_varlen_func")
            raise
        if wanted(call):
            check_attention_values(call)
        impl = reg.select(OP, call)  # (a class is remembered once something serves it)
        return (call if args else classed(call, remember(kwargs, call))), impl
    call, entry, dyn = hit
    # (wanted(), without device.type; a hit implies the settings are read)
    if not call.capturing and (entry.cpu or _env._settings.check_values):
        check_attention_values(call)
    impl = entry.chosen.get(dyn)  # (chosen_impl, inlined: host cost)
    return call, impl if impl is not None else chosen_impl(entry, dyn, reg, OP, call)


@V.with_exact_signature(normalize_flash_attn_call, "flash_attn_varlen_func", _DOC)
def flash_attn_varlen_func(*args, **kwargs):
    return run_call(*_validated(args, kwargs))


can_use_flash_attn_varlen_func = V.can_use_function(
    normalize_flash_attn_call, "can_use_flash_attn_varlen_func", _validated,
    ('True iff the same call, made now on the same stream, would run on an ATREX implementation (the torch'
     ' reference does not count on an accelerator). Never raises for ATREX errors, never launches, '
     'allocates, synchronizes or compiles. ``explain_flash_attn_varlen_func`` gives the reasons.'))
explain_flash_attn_varlen_func = V.explain_function(
    normalize_flash_attn_call, "explain_flash_attn_varlen_func", OP,
    ('The dispatch trace for this call (every candidate with its reasons) without running it. Raises the '
     'same AtrexTypeError/AtrexValueError as the operator for malformed input.'))
