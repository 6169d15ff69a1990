"""Direct launches of compiled Triton kernels: the mechanics behind the per-call launch plans of ATREX's own
kernels (``decode_splitkv``, ``paged_prefill``, ``gdn_decode``, ``chunk_gdn``).

A launcher keeps, per call class (its ``WarmRecord`` plan key), the grid, the constexprs and a :class:`Direct`
per kernel: the ``CompiledKernel`` Triton returned from the class's first launch, bound to its launcher. Later
calls of the class hand the packed arguments straight to ``CompiledKernel.run`` (Triton's own last step), so
Triton's per-launch binder, specialisation and cache-key work never runs. Triton 3.6, 3.8 and 3.9 launch a
compiled kernel the same way (``JITFunction.run``)::

    kernel.run(grid_0, grid_1, grid_2, stream, kernel.function, kernel.packed_metadata, launch_metadata,
               launch_enter_hook, launch_exit_hook, *bound_args.values())

where the bound arguments are every kernel parameter in order, constexprs included. Elsewhere (another Triton,
the CPU interpreter, a launch hook installed by a profiler, another current device) the plan's launches go
through ``kernel[grid](*args, **meta)`` as before.
"""

from __future__ import annotations

import torch
import triton

__all__ = ["REPLAY_TRITON", "Direct", "capture", "direct_ready", "hooks_idle", "int_class", "launch", "raw_stream",
           "replay_supported"]

#: Triton releases whose ``CompiledKernel.run`` convention (above) was read in their sources.
REPLAY_TRITON = ("3.6.", "3.8.", "3.9.")


def replay_supported(version: str | None = None) -> bool:
    """Whether this Triton's compiled kernels can be launched directly (a capability of the installed release)."""
    version = triton.__version__ if version is None else version
    return version.startswith(REPLAY_TRITON) and hasattr(triton, "knobs")


_REPLAY = replay_supported()
_RUNTIME = triton.knobs.runtime if _REPLAY else None
_current_device = torch.cuda.current_device
try:
    from torch._C import _cuda_getCurrentRawStream as _raw_stream  # what Triton's driver itself calls
except ImportError:  # a torch without CUDA
    def _raw_stream(index):
        return torch.cuda.current_stream(index).cuda_stream


def raw_stream(device: int | None) -> int:
    """The current stream of CUDA device ``device`` as an int (0 for None: a CPU stand-in in tests)."""
    return 0 if device is None else _raw_stream(device)


def int_class(x: int) -> int:
    """What Triton specialises a runtime int on, as a small int: == 1 (a constexpr), a multiple of 16, and
    whether it leaves int32 (Triton passes it as i64 then)."""
    if x == 1:
        return 1
    return 2 | (not x & 15) << 2 | (not -2147483648 <= x <= 2147483647) << 3


def hooks_idle() -> bool:
    """No launch hook installed (a profiler such as proton adds one: then Triton's own path runs, which calls it)."""
    rt = _RUNTIME
    enter, exit_ = rt.launch_enter_hook, rt.launch_exit_hook
    return (enter is None or getattr(enter, "calls", None) == []) and (exit_ is None or
                                                                       getattr(exit_, "calls", None) == [])


class Direct:
    """One compiled kernel bound for direct launches: its launcher, CUDA function, packed metadata, the values of
    the parameters after the positional arguments (constexprs and defaults, from the launch's meta) and the
    device whose context loaded it (None: a CPU stand-in in tests)."""

    __slots__ = ("device", "function", "packed", "run", "tail")

    def __init__(self, run, function, packed, tail: tuple, device: int | None):
        self.run, self.function, self.packed, self.tail, self.device = run, function, packed, tail, device

    def usable(self) -> bool:
        """Whether a direct launch is right now: no launch hook, and the device that loaded it is current."""
        return hooks_idle() and (self.device is None or self.device == _current_device())


def direct_ready(directs) -> bool:
    """Whether every one of ``directs`` (launches of one call, all loaded on one device) can launch directly now:
    each exists, no launch hook is installed, and their device is current (checked once for all)."""
    if not directs or any(d is None for d in directs):
        return False
    dev = directs[0].device
    return hooks_idle() and (dev is None or dev == _current_device())


def capture(kernel, compiled, n_args: int, meta: dict, device: torch.device) -> Direct | None:
    """A :class:`Direct` for ``compiled``, what ``kernel[grid](*args, **meta)`` returned (``n_args`` positional
    arguments) on ``device``; None where direct launches do not apply (another Triton, the interpreter, an
    autotuner, a result that is not a compiled kernel)."""
    if not _REPLAY or compiled is None or not isinstance(kernel, triton.runtime.jit.JITFunction):
        return None
    if not all(hasattr(compiled, a) for a in ("run", "function", "packed_metadata")):
        return None
    params = list(kernel.signature.parameters.values())[n_args:]
    tail = tuple(meta[p.name] if p.name in meta else p.default for p in params)
    if any(v is p.empty for v, p in zip(tail, params)):
        return None  # a parameter without a value: Triton would have refused the launch
    index = device.index if device.type == "cuda" else None
    if device.type == "cuda" and index is None:
        index = _current_device()
    return Direct(compiled.run, compiled.function, compiled.packed_metadata, tail, index)


def launch(kernel, grid: tuple, tensors: tuple, rest: tuple, meta: dict, direct: Direct | None):
    """Launch one kernel whose arguments are ``(*tensors, *rest)`` (``tensors``: tensors or None): directly through
    ``direct`` when it is usable, with the tensors' pointers as ints (the launcher then neither calls ``data_ptr``
    nor asks the driver about each pointer), else through Triton's JIT path, which returns the compiled kernel
    (for :func:`capture`; None after a direct launch)."""
    if direct is not None and hooks_idle() and (direct.device is None or direct.device == _current_device()):
        dev = direct.device  # (Direct.usable(), inlined: host cost)
        ptrs = [None if t is None else t.data_ptr() for t in tensors]
        g1 = grid[1] if len(grid) > 1 else 1
        g2 = grid[2] if len(grid) > 2 else 1
        direct.run(grid[0], g1, g2, 0 if dev is None else _raw_stream(dev), direct.function, direct.packed, None,
                   None, None, *ptrs, *rest, *direct.tail)
        return None
    return kernel[grid](*tensors, *rest, **meta)
