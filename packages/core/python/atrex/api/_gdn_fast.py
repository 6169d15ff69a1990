"""The fast path of ``atrex.chunk_gated_delta_rule`` and ``atrex.fused_recurrent_gated_delta_rule``: a keyword call
of a class validated before (``_memo.py``).

A Gated-DeltaNet class fixes every tensor's size exactly (no size varies per call), so the memo's guard and
scalar comparison leave only the capture state, and for the decode step the pool's overlap with the inputs (a
pointer test), to be checked per call. The record is the first call's record with the call's own tensors put in
place. ``op_test/core/test_call_memo.py`` checks that it equals the validator's.
"""

from __future__ import annotations

from typing import NamedTuple

import torch

from atrex.api._memo import CallMemo

Tensor = torch.Tensor
_new_record = tuple.__new__
# (what torch.cuda.is_current_stream_capturing returns, without its Python frame)
_capturing = getattr(torch._C, "_cuda_isCurrentStreamCapturing", torch.cuda.is_current_stream_capturing)

#: tensor arguments that are hints: only their type is validated
_HINTS = ("chunk_indices", "chunk_offsets")


class Static(NamedTuple):
    """A class's record with its tensors taken out, and where the call's tensors go back."""

    record: tuple
    slots: tuple  # (field index, keyword name) of every tensor of the record
    capturing: int  # the field index of ``capturing``
    cuda: bool
    cpu: bool  # value checks always run (atrex.api._values.wanted)
    overlap: tuple | None  # decode in place: (pool keyword, ((keyword, bytes spanned), ...) of pool and inputs)


def _span(t: Tensor) -> int:
    """Bytes from ``t``'s start to its last element's end (0: empty)."""
    if t.numel() == 0:
        return 0
    return (sum((n - 1) * s for n, s in zip(t.shape, t.stride())) + 1) * t.element_size()


def remember(memo: CallMemo, kw: dict, call, pool_name: str | None = None):
    """Keep the class of the valid keyword call ``kw`` (validated into ``call``); returns its entry, or None where
    the call is not kept. ``pool_name``: the keyword of a state pool updated in place (the validator refuses
    inputs overlapping it), when the record says so."""
    tensors = [n for n, x in kw.items() if isinstance(x, Tensor)]
    if any(type(kw[n]) is not Tensor for n in tensors):
        return None  # (subclasses validate in full)
    slots = []
    for i, val in enumerate(call):
        if isinstance(val, Tensor):
            name = next((n for n in tensors if kw[n] is val), None)
            if name is None:
                return None  # a tensor the validator made: validate in full
            slots.append((i, name))
    record = list(call)
    for i, _ in slots:
        record[i] = None
    overlap = None
    if pool_name is not None and getattr(call, "inplace_final_state", False):
        overlap = (pool_name, tuple((n, _span(kw[n])) for n in tensors if n != pool_name and n not in _HINTS),
                   _span(kw[pool_name]))
    typed = tuple(n for n in tensors if n in _HINTS)
    guarded = tuple(n for n in tensors if n not in typed)
    data = Static(tuple(record), tuple(slots), call._fields.index("capturing"), call.q.is_cuda,
                  call.device.type == "cpu", overlap)
    return memo.add(kw, guarded, {}, typed, (), data)


def _overlaps(kw: dict, overlap) -> bool:
    """Whether the pool reaches into an input (byte ranges, as ``_validate.overlaps``)."""
    pool_name, spans, pool_span = overlap
    p0 = kw[pool_name].data_ptr()
    p1 = p0 + pool_span
    for name, span in spans:
        if span and pool_span:
            t0 = kw[name].data_ptr()
            if t0 < p1 and p0 < t0 + span:
                return True
    return False


def fast_call(memo: CallMemo, kw: dict, record_type, registry, settings):
    """``(record, entry, per-call key)`` of a keyword call whose class was validated before (under ``registry``
    and ``settings``); None otherwise (the caller validates in full)."""
    hit = memo.match(kw, registry, settings)
    if hit is None:
        return None
    e = hit[0]
    st = e.data
    if st.overlap is not None and _overlaps(kw, st.overlap):
        return None
    rec = list(st.record)
    for i, name in st.slots:
        rec[i] = kw[name]
    capturing = st.cuda and _capturing()
    rec[st.capturing] = capturing
    rec[-1] = e
    return _new_record(record_type, rec), e, capturing
