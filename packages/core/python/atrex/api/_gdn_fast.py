"""The fast path of ``atrex.chunk_gated_delta_rule`` and ``atrex.fused_recurrent_gated_delta_rule``: a keyword call
of a class validated before (``_memo.py``).

A Gated-DeltaNet class fixes every tensor's size exactly (no size varies per call), so the memo's guard and
scalar comparison leave only the capture state, and for the decode step the pool's overlap with the inputs (a
pointer test), to be checked per call, by the per-call part of the class test generated here for each class. The
record is the first call's record with the call's own tensors put in place. ``op_test/core/test_call_memo.py`` checks that it equals the validator's.
"""

from __future__ import annotations

import torch

from atrex.api._memo import CallMemo

Tensor = torch.Tensor
# (what torch.cuda.is_current_stream_capturing returns, without its Python frame)
_capturing = getattr(torch._C, "_cuda_isCurrentStreamCapturing", torch.cuda.is_current_stream_capturing)

#: tensor arguments that are hints: only their type is validated
_HINTS = ("chunk_indices", "chunk_offsets")


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
    slots = {}
    for i, val in enumerate(call):
        if isinstance(val, Tensor):
            name = next((n for n in tensors if kw[n] is val), None)
            if name is None:
                return None  # a tensor the validator made: validate in full
            slots[i] = name
    typed = tuple(n for n in tensors if n in _HINTS)
    guarded = tuple(n for n in tensors if n not in typed)
    lines = []
    if pool_name is not None and getattr(call, "inplace_final_state", False):
        lines = _overlap_lines(pool_name, [(n, _span(kw[n])) for n in guarded if n != pool_name], _span(kw[pool_name]))
    lines.append("capturing = _capturing()" if call.q.is_cuda else "capturing = False")
    fields, consts = _record_fields(call, slots)
    lines.append(f"return new(R, [{fields}]), entry, capturing")
    consts.update(new=tuple.__new__, R=type(call), _capturing=_capturing)
    return memo.add(kw, guarded, {}, typed, (), call.device.type == "cpu", (lines, consts))


def _overlap_lines(pool_name: str, spans: list, pool_span: int) -> list:
    """The class test's refusal of a call whose pool reaches into an input (byte ranges, as
    ``_validate.overlaps``; the spans are fixed by the class)."""
    if not pool_span:
        return []
    lines = [f"pool0 = a_{pool_name}.data_ptr()", f"pool1 = pool0 + {pool_span}"]
    for name, span in spans:
        if span:
            lines += [f"at = a_{name}.data_ptr()", f"if at < pool1 and pool0 < at + {span}: return None"]
    return lines


def _record_fields(call, slots: dict) -> tuple:
    """The record as a list display: the call's tensors (``slots``: field index -> keyword), its capture state and
    class, and the class's other fields as constants (runs of them splatted from one tuple)."""
    fields, consts, run = [], {}, []
    last, cap = len(call) - 1, call._fields.index("capturing")

    def flush():
        if run:
            consts[f"r{len(consts)}"] = tuple(run)
            fields.append(f"*r{len(consts) - 1}")
            run.clear()

    for i, val in enumerate(call):
        named = f"a_{slots[i]}" if i in slots else "capturing" if i == cap else "entry" if i == last else None
        if named is None:
            run.append(val)
            continue
        flush()
        fields.append(named)
    flush()
    return ", ".join(fields), consts
