"""The fast path of ``atrex.flash_attn_varlen_func``: a keyword call of a class validated before (``_memo.py``).

The memo's guard fixes every tensor's dtype, device, sizes (but the per-call ones) and strides, and the scalars;
what varies per call and is checked here, as ``normalize_flash_attn_call`` checks it: ``max_seqlen_q/k``,
``total_q`` (rows of q and out), the batch (``cu_seqlens_q``, ``seqused_k`` / ``cu_seqlens_k``, ``block_table``
rows, fp8 descale rows), 16-byte pointer alignment, ``out`` overlapping q/k/v, the capture state. A call that
fails any of these returns None and the validator raises its precise error. ``op_test/core/test_call_memo.py``
checks that every record built here equals the validator's.
"""

from __future__ import annotations

from typing import NamedTuple

import torch

from atrex.api._memo import CallMemo

Tensor = torch.Tensor
MEMO = CallMemo()
_new_record = tuple.__new__
# (what torch.cuda.is_current_stream_capturing returns, without its Python frame)
_capturing = getattr(torch._C, "_cuda_isCurrentStreamCapturing", torch.cuda.is_current_stream_capturing)

#: the arguments whose first dim varies per call (rows: total_q; batch: B or B + 1)
_DYNAMIC = {"q": (0,), "out": (0,), "cu_seqlens_q": (0,), "cu_seqlens_k": (0,), "seqused_k": (0,),
            "block_table": (0,), "q_descale": (0,), "k_descale": (0,), "v_descale": (0,)}
_VECTORS = ("cu_seqlens_q", "cu_seqlens_k", "seqused_k")  # 1-D metadata: kept only with stride 1
_DESCALES = ("q_descale", "k_descale", "v_descale")
_IGNORED_TENSORS = ("scheduler_metadata",)  # a hint: only its type is validated
_PER_CALL = ("max_seqlen_q", "max_seqlen_k")  # host ints checked per call (fast_call)


class Static(NamedTuple):
    """A class's record fields that do not vary per call, and the byte geometry the per-call checks need."""

    mid: tuple  # num_heads_q .. softcap of the record
    tail: tuple  # num_splits, deterministic, device, target
    return_lse: bool
    paged: bool
    fp8: bool
    cuda: bool
    strides_aligned: bool
    q_row: int  # bytes per q row, and from a row's start to its last element's end
    q_tail: int
    o_row: int
    o_tail: int
    k_bytes: int  # from k's / v's start to its last element's end (0: empty)
    v_bytes: int
    cpu: bool  # value checks always run (atrex.api._values.wanted)
    window: tuple | None  # the class's window_size tuple object (a call passing the same object needs no type check)


def _span(t: Tensor, skip_first: bool) -> int:
    """Bytes from ``t``'s start to its last element's end, the first dim left out with ``skip_first``."""
    shape, stride = t.shape[1:] if skip_first else t.shape, t.stride()[1:] if skip_first else t.stride()
    if any(n == 0 for n in shape):
        return 0
    return (sum((n - 1) * s for n, s in zip(shape, stride)) + 1) * t.element_size()


def _strides_aligned(call) -> bool:
    """The stride half of ``call.aligned16`` (the validator's rule, without the pointers)."""
    def ok(t, dims):
        return all(t.stride(i) * t.element_size() % 16 == 0 for i in dims)

    kdims = (0, 1, 2) if call.paged else (0, 1)
    return (ok(call.q, (0, 1)) and ok(call.k, kdims) and ok(call.v, kdims)
            and (call.out is None or ok(call.out, (0, 1))))


def remember(kw: dict, call):
    """Keep the class of the valid keyword call ``kw`` (validated into ``call``); returns its entry, or None where
    the call is not kept."""
    tensors = [n for n, x in kw.items() if isinstance(x, Tensor)]
    if any(type(kw[n]) is not Tensor for n in tensors):
        return None  # (subclasses validate in full)
    if any(n in kw and kw[n] is not None and kw[n].stride() != (1,) for n in _VECTORS):
        return None  # (the stride rule of a 1-D tensor depends on its per-call length)
    typed = tuple(n for n in tensors if n in _IGNORED_TENSORS or (n in _DESCALES and not call.is_fp8))
    guarded = tuple(n for n in tensors if n not in typed)
    out = call.out
    data = Static(
        (call.num_heads_q, call.num_heads_k, call.head_dim, call.head_dim_v, call.paged, call.page_size, call.dtype,
         call.out_dtype, call.is_fp8, call.softmax_scale, call.causal, call.window_left, call.window_right,
         call.softcap),
        (call.num_splits, call.deterministic, call.device, call.target), call.return_lse, call.paged, call.is_fp8,
        call.q.is_cuda, _strides_aligned(call), call.q.stride(0) * call.q.element_size(), _span(call.q, True),
        0 if out is None else out.stride(0) * out.element_size(), 0 if out is None else _span(out, True),
        _span(call.k, False), _span(call.v, False), call.device.type == "cpu",
        kw.get("window_size") if type(kw.get("window_size")) is tuple else None)
    return MEMO.add(kw, guarded, _DYNAMIC, typed, _PER_CALL, data)


def fast_call(kw: dict, record_type, registry, settings):
    """``(record, entry, per-call key)`` of a keyword call whose class was validated before (under ``registry``
    and ``settings``) and whose per-call values pass the validator's rules; None otherwise (the caller validates
    in full). ``record_type``: ``FlashAttnCall``. The per-call key (lengths, capture state, alignment) picks the
    implementation the entry chose before (``entry.chosen``)."""
    hit = MEMO.match(kw, registry, settings)
    if hit is None:
        return None
    e, (msq, msk) = hit  # (the per-call ints: their type is the entry's, int)
    (mid, tail, return_lse, paged, fp8, cuda, strides_aligned, q_row, q_tail, o_row, o_tail, k_bytes, v_bytes, _,
     window) = e.data
    if msq < 0 or msk < 0:
        return None
    get = kw.get
    ws = get("window_size")
    if ws is not window and ws is not None and (type(ws[0]) is not int or type(ws[1]) is not int):
        return None  # (1.0 == 1: the scalar comparison does not see a float bound; a tuple is immutable)
    q, k, v, cu = kw["q"], kw["k"], kw["v"], kw["cu_seqlens_q"]
    # (numel() costs less than .shape[0]; the guard fixed cu_seqlens_q, seqused_k and cu_seqlens_k 1-D)
    total_q, batch = q.shape[0], cu.numel() - 1
    if batch < 0 or (batch == 0 and total_q):
        return None
    if paged:
        seqused, bt, cu_k = get("seqused_k"), get("block_table"), None
        if seqused.numel() != batch or bt.shape[0] != batch:
            return None
    else:
        seqused = bt = None
        cu_k = get("cu_seqlens_k")
        if cu_k.numel() != batch + 1:
            return None
    qd = kd = vd = None
    if fp8:
        qd, kd, vd = get("q_descale"), get("k_descale"), get("v_descale")
        if (qd is not None and qd.shape[0] != batch) or (kd is not None and kd.shape[0] != batch) or (
                vd is not None and vd.shape[0] != batch):
            return None
    q0, k0, v0 = q.data_ptr(), k.data_ptr(), v.data_ptr()
    ptrs = q0 | k0 | v0
    out = get("out")
    o0 = None
    if out is not None:
        if out.shape[0] != total_q:
            return None
        o0 = out.data_ptr()
        ptrs |= o0
        if total_q and o_tail:  # out overlapping q, k or v: the validator names which
            o1 = o0 + (total_q - 1) * o_row + o_tail
            if ((q0 < o1 and o0 < q0 + (total_q - 1) * q_row + q_tail) or (k_bytes and k0 < o1 and o0 < k0 + k_bytes)
                    or (v_bytes and v0 < o1 and o0 < v0 + v_bytes)):
                return None
    capturing = cuda and _capturing()
    aligned16 = strides_aligned and not ptrs & 15
    call = _new_record(record_type, [  # (a list: no tuple built and copied again)
        q, k, v, out, cu, cu_k, seqused, bt, msq, msk, batch, total_q, *mid, get("s_aux"), return_lse, qd, kd, vd,
        *tail, capturing, aligned16, e])
    # what of the record varies within the class and may change a verdict (checks may read pointer alignment)
    dyn = (total_q, batch, msq, msk, capturing, True if aligned16 else
           (q0 & 15, k0 & 15, v0 & 15, None if o0 is None else o0 & 15))
    return call, e, dyn
