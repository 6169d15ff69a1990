"""The fast path of ``atrex.flash_attn_varlen_func``: a keyword call of a class validated before (``_memo.py``).

The memo's guard fixes every tensor's dtype, device, sizes (but the per-call ones) and strides, and the scalars;
what varies per call is checked by the per-call part of the class test generated here for each class (``_body``),
as ``normalize_flash_attn_call`` checks it: ``max_seqlen_q/k``,
``total_q`` (rows of q and out), the batch (``cu_seqlens_q``, ``seqused_k`` / ``cu_seqlens_k``, ``block_table``
rows, fp8 descale rows), 16-byte pointer alignment, ``out`` overlapping q/k/v, the capture state. A call that
fails any of these returns None and the validator raises its precise error. ``op_test/core/test_call_memo.py``
checks that every record built here equals the validator's.
"""

from __future__ import annotations

import torch

from atrex.api._memo import CallMemo

Tensor = torch.Tensor
MEMO = CallMemo()
# (what torch.cuda.is_current_stream_capturing returns, without its Python frame)
_capturing = getattr(torch._C, "_cuda_isCurrentStreamCapturing", torch.cuda.is_current_stream_capturing)

#: the arguments whose first dim varies per call (rows: total_q; batch: B or B + 1)
_DYNAMIC = {"q": (0,), "out": (0,), "cu_seqlens_q": (0,), "cu_seqlens_k": (0,), "seqused_k": (0,),
            "block_table": (0,), "q_descale": (0,), "k_descale": (0,), "v_descale": (0,)}
_VECTORS = ("cu_seqlens_q", "cu_seqlens_k", "seqused_k")  # 1-D metadata: kept only with stride 1
_DESCALES = ("q_descale", "k_descale", "v_descale")
_IGNORED_TENSORS = ("scheduler_metadata",)  # a hint: only its type is validated
_PER_CALL = ("max_seqlen_q", "max_seqlen_k")  # host ints checked per call (fast_call)


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
    return MEMO.add(kw, guarded, _DYNAMIC, typed, _PER_CALL, call.device.type == "cpu", _body(kw, call, guarded))


def _body(kw: dict, call, guarded: tuple) -> tuple:
    """The class test's per-call part for the class of ``call`` (``CallMemo.add``'s ``body``): the validator's
    rules on the values that vary within the class, then the record and the per-call key, as ``(record, entry,
    key)``. Generated per class: what the class fixes (paged or not, fp8, ``out`` given, the byte geometry) is
    decided here once."""
    def arg(name):  # (an argument the class has as a tensor, else None)
        return f"a_{name}" if name in guarded else "None"

    ws = kw.get("window_size")
    lines = ["if a_max_seqlen_q < 0 or a_max_seqlen_k < 0: return None"]
    if ws is not None:  # (1.0 == 1: the scalar comparison does not see a float bound; a tuple is immutable)
        same = "a_window_size is not window and " if type(ws) is tuple else ""
        lines.append(f"if {same}(type(a_window_size[0]) is not int or type(a_window_size[1]) is not int): "
                     "return None")
    # (numel() costs less than .shape[0]; the guard fixed cu_seqlens_q, seqused_k and cu_seqlens_k 1-D)
    lines += ["total_q, batch = a_q.shape[0], a_cu_seqlens_q.numel() - 1",
              "if batch < 0 or (batch == 0 and total_q): return None"]
    if call.paged:
        lines.append("if a_seqused_k.numel() != batch or a_block_table.shape[0] != batch: return None")
    else:
        lines.append("if a_cu_seqlens_k.numel() != batch + 1: return None")
    descales = [arg(n) if call.is_fp8 else "None" for n in _DESCALES]
    lines += [f"if {d}.shape[0] != batch: return None" for d in descales if d != "None"]
    lines.append("q0, k0, v0 = a_q.data_ptr(), a_k.data_ptr(), a_v.data_ptr()")
    ptrs, low = "q0 | k0 | v0", "None"
    out = call.out
    if out is not None:
        lines += ["if a_out.shape[0] != total_q: return None", "o0 = a_out.data_ptr()"]
        ptrs, low = ptrs + " | o0", "o0 & 15"
        o_row, o_tail = out.stride(0) * out.element_size(), _span(out, True)
        if o_tail:  # out overlapping q, k or v: the validator names which
            q_row, q_tail, k_bytes, v_bytes = (call.q.stride(0) * call.q.element_size(), _span(call.q, True),
                                               _span(call.k, False), _span(call.v, False))
            near = [f"(q0 < o1 and o0 < q0 + (total_q - 1) * {q_row} + {q_tail})"]
            near += [f"({p}0 < o1 and o0 < {p}0 + {n})" for p, n in (("k", k_bytes), ("v", v_bytes)) if n]
            lines += ["if total_q:", f"    o1 = o0 + (total_q - 1) * {o_row} + {o_tail}",
                      f"    if {' or '.join(near)}: return None"]
    lines.append("capturing = _capturing()" if call.q.is_cuda else "capturing = False")
    lines.append(f"aligned16 = not ({ptrs}) & 15" if _strides_aligned(call) else "aligned16 = False")
    lines += [  # (a list: no tuple built and copied again)
        f"call = new(R, [a_q, a_k, a_v, {arg('out')}, a_cu_seqlens_q, {arg('cu_seqlens_k')}, {arg('seqused_k')}, "
        f"{arg('block_table')}, a_max_seqlen_q, a_max_seqlen_k, batch, total_q, *mid, {arg('s_aux')}, "
        f"return_lse, {', '.join(descales)}, *tail, capturing, aligned16, entry])",
        # what of the record varies within the class and may change a verdict (checks may read pointer alignment)
        "return call, entry, (total_q, batch, a_max_seqlen_q, a_max_seqlen_k, capturing, True if aligned16 else "
        f"(q0 & 15, k0 & 15, v0 & 15, {low}))"]
    consts = {"new": tuple.__new__, "R": type(call), "_capturing": _capturing, "window": ws,
              "return_lse": call.return_lse, "mid": (
        call.num_heads_q, call.num_heads_k, call.head_dim, call.head_dim_v, call.paged, call.page_size, call.dtype,
        call.out_dtype, call.is_fp8, call.softmax_scale, call.causal, call.window_left, call.window_right,
        call.softcap), "tail": (call.num_splits, call.deterministic, call.device, call.target)}
    return lines, consts


#: ``fast_call(kw, registry, settings)``: ``(record, entry, per-call key)`` of a keyword call whose class was
#: validated before (under ``registry`` and ``settings``) and whose per-call values pass the validator's rules,
#: else None (the caller validates in full). The per-call key (lengths, capture state, alignment) picks the
#: implementation the entry chose before (``entry.chosen``).
fast_call = MEMO.match
