"""Small validators shared by the operator modules.

They read only Python values, shapes, dtypes, strides, devices and data pointers: never
tensor contents (no ``.item()``, no device->host copies), so they are safe under capture.
"""

from __future__ import annotations

import inspect
import operator
from collections.abc import Callable

import torch

from atrex.errors import AtrexError, AtrexNotSupportedError, AtrexTypeError, AtrexValueError

Tensor = torch.Tensor

FP8_DTYPES = frozenset(
    d for d in (getattr(torch, "float8_e4m3fn", None), getattr(torch, "float8_e5m2", None)) if d is not None
)
DTYPE_NAMES = {
    torch.float16: "float16",
    torch.bfloat16: "bfloat16",
    torch.float32: "float32",
    torch.float64: "float64",
    torch.int32: "int32",
    torch.int64: "int64",
}
for _d in FP8_DTYPES:
    DTYPE_NAMES[_d] = str(_d).removeprefix("torch.")


def dname(dtype) -> str:
    return DTYPE_NAMES.get(dtype) or str(dtype).removeprefix("torch.")


def shape_str(t: Tensor) -> str:
    return f"Tensor{list(t.shape)} {dname(t.dtype)} on {t.device}"


def require_tensor(name: str, value, what: str = "a torch.Tensor") -> Tensor:
    if not isinstance(value, Tensor):
        raise AtrexTypeError(name, f"{type(value).__name__} {value!r}"[:120], what)
    return value


def optional_tensor(name: str, value, what: str = "a torch.Tensor or None") -> Tensor | None:
    if value is None:
        return None
    return require_tensor(name, value, what)


def host_int(name: str, value, minimum: int | None = 0) -> int:
    """A Python int (anything operator.index accepts), never a tensor (not even 0-dim)."""
    if isinstance(value, Tensor):
        raise AtrexTypeError(name, shape_str(value), "a host Python int (a tensor here would force a device sync "
                                                     "or recompiles)")
    try:
        ivalue = operator.index(value)
    except TypeError:
        raise AtrexTypeError(name, f"{type(value).__name__} {value!r}", "a host Python int") from None
    if minimum is not None and ivalue < minimum:
        raise AtrexValueError(name, ivalue, f"an int >= {minimum}")
    return ivalue


def host_bool(name: str, value) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, Tensor):
        raise AtrexTypeError(name, shape_str(value), "a Python bool")
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    raise AtrexTypeError(name, f"{type(value).__name__} {value!r}", "a Python bool")


def host_float(name: str, value, minimum: float | None = None) -> float:
    if isinstance(value, Tensor) or isinstance(value, bool):
        raise AtrexTypeError(name, shape_str(value) if isinstance(value, Tensor) else repr(value),
                             "a host Python float or int")
    try:
        fvalue = float(value)
    except (TypeError, ValueError):
        raise AtrexTypeError(name, f"{type(value).__name__} {value!r}", "a host Python float or int") from None
    if fvalue != fvalue or fvalue in (float("inf"), float("-inf")):
        raise AtrexValueError(name, fvalue, "a finite number")
    if minimum is not None and fvalue < minimum:
        raise AtrexValueError(name, fvalue, f"a number >= {minimum}")
    return fvalue


def same_device(name: str, t: Tensor, device: torch.device) -> None:
    if t.device != device:
        raise AtrexValueError(name, f"a tensor on {t.device}", f"a tensor on q's device {device}")


def int32_vector(name: str, t: Tensor, length: int | None, device: torch.device, dtypes=(torch.int32,)) -> None:
    if t.dtype not in dtypes:
        raise AtrexTypeError(name, shape_str(t), " or ".join(dname(d) for d in dtypes) + " metadata")
    if t.dim() != 1 or (length is not None and t.shape[0] != length):
        want = f"shape [{length}]" if length is not None else "a 1-D tensor"
        raise AtrexValueError(name, shape_str(t), want)
    if t.numel() > 1 and t.stride(0) != 1:
        raise AtrexValueError(name, f"stride {t.stride()}", "stride 1 (contiguous)")
    same_device(name, t, device)


def last_dim_contiguous(name: str, t: Tensor) -> None:
    if t.dim() and t.shape[-1] > 1 and t.stride(-1) != 1:
        raise AtrexValueError(name, f"strides {tuple(t.stride())}", "stride(-1) == 1")


def byte_range(t: Tensor) -> tuple[int, int]:
    if t.numel() == 0:
        return (0, 0)
    start = t.data_ptr()
    extent = sum((s - 1) * st for s, st in zip(t.shape, t.stride()) if s > 0)
    return start, start + (extent + 1) * t.element_size()


def overlaps(a: Tensor, b: Tensor) -> bool:
    a0, a1 = byte_range(a)
    b0, b1 = byte_range(b)
    return a0 < b1 and b0 < a1 and a1 > a0 and b1 > b0


def reject_grad(op: str, tensors: dict[str, Tensor | None]) -> None:
    if not torch.is_grad_enabled():
        return
    for name, t in tensors.items():
        if t is not None and t.requires_grad:
            raise AtrexNotSupportedError.feature(
                name, "a tensor with requires_grad=True under grad mode",
                "forward (inference) only: use torch.no_grad()/inference_mode or detach()", op=op)


def capturing(device: torch.device) -> bool:
    return device.type == "cuda" and torch.cuda.is_current_stream_capturing()


def with_exact_signature(spec: Callable, public_name: str, doc: str | None = None):
    """Decorate a ``*args, **kwargs`` wrapper so that it shows ``spec``'s exact signature and turns a
    binding failure (unknown keyword, missing argument) into :class:`AtrexTypeError`."""

    def deco(fn):
        sig = inspect.signature(spec)
        fn.__signature__ = sig.replace(return_annotation=inspect.signature(fn).return_annotation)
        fn.__name__ = fn.__qualname__ = public_name
        if doc is not None:
            fn.__doc__ = doc
        return fn

    return deco


def can_use_function(spec: Callable, public_name: str, validated: Callable, doc: str):
    """The operator's ``can_use_...``: True iff the same call would run on an ATREX implementation now (the torch
    reference does not count on an accelerator); False for every ATREX error. ``validated(args, kwargs)`` is
    the operator's own validation + selection, returning ``(record, implementation)``."""

    @with_exact_signature(spec, public_name, doc)
    def can_use(*args, **kwargs) -> bool:
        try:
            call, impl = validated(args, kwargs)
        except AtrexError:
            return False
        return not (impl.is_reference and call.target.is_accelerator)

    return can_use


def explain_function(spec: Callable, public_name: str, op: str, doc: str):
    """The operator's ``explain_...``: the registry's dispatch trace for the call, without running it (malformed
    input raises as the operator does)."""

    @with_exact_signature(spec, public_name, doc)
    def explain(*args, **kwargs):
        from atrex.dispatch.registry import get_registry

        return get_registry().explain(op, bind(spec, public_name, args, kwargs))

    return explain


def binding_error(exc: TypeError, op: str) -> AtrexError:
    """Convert the TypeError Python raises while binding arguments into an AtrexTypeError."""
    msg = str(exc)
    arg = "<call>"
    if "'" in msg:
        arg = msg.split("'")[1]
    # Python's text without the internal function's name: "f() got an unexpected keyword argument 'x'"
    # (the error's own format adds "got "), "f() missing 1 required ...", "f() takes 6 ... but 7 were given"
    detail = msg.split(") ", 1)[-1].strip() or msg
    if detail.startswith("got "):
        detail = detail[4:]
    else:
        detail = f"a call that {detail}" if detail.startswith("takes") else f"no value ({detail})"
    return AtrexTypeError(arg, detail, f"the documented parameters of atrex.{op}")


def bind(spec: Callable, op: str, args, kwargs):
    """Call ``spec(*args, **kwargs)``; a TypeError raised by the binding itself becomes AtrexTypeError."""
    try:
        return spec(*args, **kwargs)
    except TypeError as exc:
        if isinstance(exc, AtrexError):
            raise
        tb = exc.__traceback__
        # Raised while binding: the traceback stops in this frame (the spec body never ran).
        if tb is not None and tb.tb_next is None:
            raise binding_error(exc, op) from None
        raise
