"""Direct launches of compiled Triton kernels: the mechanics behind the per-call launch plans of ATREX's own
kernels (``decode_splitkv``, ``paged_prefill``, ``gdn_decode``, ``chunk_gdn``).

A launcher keeps, per call class (its ``WarmRecord`` plan key), the grid, the constexprs and a :class:`Direct`
per kernel: how to launch the ``CompiledKernel`` Triton returned from the class's first launch. Later calls of the
class hand the arguments, pointers as ints, straight to the launch function Triton's launcher object ends in (the
C ``launch`` of the kernel's ``CudaLauncher``), so neither Triton's per-launch binder and cache-key work nor the
launcher object's Python ``__call__`` runs. The C entry's argument convention differs between releases; the ones
read in their sources are in :data:`C_FORMS`. Elsewhere (another Triton, a launcher with tensor descriptors or
profile scratch) the compiled kernel's ``run`` takes the arguments, as ``JITFunction.run`` passes them in Triton
3.6, 3.8 and 3.9::

    kernel.run(grid_0, grid_1, grid_2, stream, kernel.function, kernel.packed_metadata, launch_metadata,
               launch_enter_hook, launch_exit_hook, *bound_args.values())

where the bound arguments are every kernel parameter in order, constexprs included. With no compiled kernel (the
CPU interpreter, a launch hook installed by a profiler, another current device) the plan's launches go through
``kernel[grid](*args, **meta)``.
"""

from __future__ import annotations

import math
import types

import torch
import triton

__all__ = ["C_FORMS", "KEEP_STREAMS", "KEEP_WORKSPACE", "MISS", "REPLAY_TRITON", "Arg", "Direct", "capture",
           "contiguous_strides", "direct_ready", "generate", "go_stream", "hooks_idle", "int_class", "kept_runner",
           "launch", "raw_stream", "replay_supported", "workspace"]

#: Triton releases whose ``CompiledKernel.run`` convention (above) was read in their sources.
REPLAY_TRITON = ("3.6.", "3.8.", "3.9.")


def _c_head_36(launcher, function, packed):
    # launch(gX, gY, gZ, stream, function, coop, pdl, global_scratch, profile_scratch, kernel_metadata,
    #        launch_metadata, enter_hook, exit_hook, *kernel_args)
    return (function, launcher.launch_cooperative_grid, launcher.launch_pdl, None, None, packed, None, None,
            None), 3, False


def _c_head_39(launcher, function, packed):
    # launch(gX, gY, gZ, stream, function, coop, pdl, kernel_metadata, launch_metadata, enter_hook, exit_hook,
    #        global_scratch, profile_scratch, arg_annotations, kernel_signature, kernel_args)
    return (function, launcher.launch_cooperative_grid, launcher.launch_pdl, packed, None, None, None, None, None,
            launcher.arg_annotations, launcher.kernel_signature), 7, True


#: per Triton release: ``(launcher, function, packed metadata) -> (head, scratch slot, args as one tuple)``, the
#: arguments of its C launch between the stream and the kernel's own arguments, where the global scratch pointer
#: goes among them, and whether the kernel's arguments follow as one tuple (else one by one)
C_FORMS = {"3.6.": _c_head_36, "3.9.": _c_head_39}


def replay_supported(version: str | None = None) -> bool:
    """Whether this Triton's compiled kernels can be launched directly (a capability of the installed release)."""
    version = triton.__version__ if version is None else version
    return version.startswith(REPLAY_TRITON) and hasattr(triton, "knobs")


def _c_form_of(version: str):
    return next((f for v, f in C_FORMS.items() if version.startswith(v)), None)


_REPLAY = replay_supported()
_C_FORM = _c_form_of(triton.__version__) if _REPLAY else None
_RUNTIME = triton.knobs.runtime if _REPLAY else None
# (what torch.cuda.current_device() returns, without its lazy-init check: a Direct exists only after a launch)
_current_device = getattr(torch._C, "_cuda_getDevice", torch.cuda.current_device)
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


def contiguous_strides(shape: tuple) -> tuple:
    """The strides ``torch.empty(shape)`` gives (a dim of size 0 or 1 counts as 1): generated launches allocate
    with ``torch.empty_strided``, whose argument parsing costs less per call than ``torch.empty``'s."""
    strides, n = [], 1
    for size in reversed(shape):
        strides.append(n)
        n *= max(size, 1)
    return tuple(reversed(strides))


def hooks_idle() -> bool:
    """No launch hook installed (a profiler such as proton adds one: then Triton's own path runs, which calls it)."""
    rt = _RUNTIME
    enter, exit_ = rt.launch_enter_hook, rt.launch_exit_hook
    return (enter is None or getattr(enter, "calls", None) == []) and (exit_ is None or
                                                                       getattr(exit_, "calls", None) == [])


def go_stream(device: int | None) -> int | None:
    """The raw stream for a plan's direct launches of kernels loaded on CUDA device ``device`` when they apply now
    (no launch hook, ``device`` current), else None. (0 for ``device`` None: a CPU stand-in in tests.)"""
    if not hooks_idle():
        return None
    if device is None:
        return 0
    return _raw_stream(device) if device == _current_device() else None


class Direct:
    """One compiled kernel bound for direct launches: ``fn(gX, gY, gZ, stream, *head, *args)`` (``pack``:
    ``fn(gX, gY, gZ, stream, *head, args)``) launches it with ``args`` every kernel parameter in order; ``tail``
    the values of the parameters after the positional arguments (constexprs and defaults, from the first launch's
    meta); ``device`` the CUDA device whose context loaded it (None: a CPU stand-in in tests).

    A kernel that builds TMA descriptors needs global scratch: ``scratch`` is then ``(bytes per program,
    alignment, head position)``, ``fn`` / ``head`` are Triton's launcher object (which allocates it through
    Triton's allocator), and a caller that provides the scratch itself (a template's workspace) may launch
    through ``c_fn`` / ``c_head`` / ``c_pack`` with the pointer at that head position."""

    __slots__ = ("c_fn", "c_head", "c_pack", "device", "fn", "head", "pack", "scratch", "tail")

    def __init__(self, fn, head: tuple, tail: tuple, device: int | None, pack: bool = False, scratch=None,
                 c_form: tuple = (None, (), False)):
        self.fn, self.head, self.tail, self.device, self.pack = fn, head, tail, device, pack
        self.scratch = scratch
        self.c_fn, self.c_head, self.c_pack = c_form

    def __call__(self, g0: int, g1: int, g2: int, stream: int, args: tuple) -> None:
        """Launch on grid ``(g0, g1, g2)`` and ``stream`` with ``args`` (every parameter, pointers as ints)."""
        if self.pack:
            self.fn(g0, g1, g2, stream, *self.head, args)
        else:
            self.fn(g0, g1, g2, stream, *self.head, *args)


def direct_ready(directs) -> bool:
    """Whether every one of ``directs`` (launches of one call, all loaded on one device) can launch directly now:
    each exists, no launch hook is installed, and their device is current (checked once for all)."""
    if not directs or any(d is None for d in directs):
        return False
    dev = directs[0].device
    return hooks_idle() and (dev is None or dev == _current_device())


def _bind(compiled, tail: tuple, device: int | None, c_form) -> Direct:
    """``compiled`` bound as a :class:`Direct`: through its C launch where ``c_form`` reads this launcher's
    convention and nothing but global scratch needs the launcher's Python ``__call__`` (host tensor descriptors,
    for which Triton wraps the C entry in a Python function; profile scratch; GSan), else through Triton's
    launcher object."""
    run, function, packed = compiled.run, compiled.function, compiled.packed_metadata
    py = Direct(run, (function, packed, None, None, None), tail, device)
    c = getattr(run, "launch", None)
    if c_form is None or c is None or isinstance(c, types.FunctionType) or getattr(run, "gsan_enabled", False):
        return py
    size, num_ctas = getattr(run, "global_scratch_size", None), getattr(run, "num_ctas", None)
    if getattr(run, "profile_scratch_size", 1) or size is None or num_ctas is None:
        return py
    head, slot, pack = c_form(run, function, packed)
    if size:
        py.scratch, py.c_fn, py.c_head, py.c_pack = (size * num_ctas, run.global_scratch_align, slot), c, head, pack
        return py
    return Direct(c, head, tail, device, pack, None, (c, head, pack))


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
    return _bind(compiled, tail, index, _C_FORM)


def launch(kernel, grid: tuple, tensors: tuple, rest: tuple, meta: dict):
    """Launch one kernel whose arguments are ``(*tensors, *rest)`` through Triton's JIT path (a class's first call,
    or a plan whose direct launches do not apply now); returns the compiled kernel (for :func:`capture`)."""
    return kernel[grid](*tensors, *rest, **meta)


class Arg(str):
    """An argument expression of a generated launch function (:func:`generate`; any other value is a constant)."""


def _literal(x) -> bool:
    return x is None or type(x) in (bool, int) or (type(x) is float and math.isfinite(x))


def generate(params: str, prelude: tuple, launches: list, ns: dict | None = None, epilogue: tuple = ()):
    """``go(<params>, stream)``: the launches of one plan as straight-line code, so a call pays one call of each
    kernel's launch function with its arguments spelled out (no argument tuples built and unpacked, no loop).
    ``prelude`` / ``epilogue``: statements run first / last; ``launches``: ``(fn, head, pack, grid, args)`` per
    kernel, as a :class:`Direct` takes them (``args`` every parameter, tail included), whose grid items, head items
    and arguments are :class:`Arg` expressions over the parameters or constants (literals inlined, others bound by
    name); ``ns``: names the expressions use. (Generated with ``exec``: the argument lists differ per plan.)"""
    ns = dict(ns or {})

    def val(x, name):
        if isinstance(x, Arg):
            return x
        if _literal(x):
            return repr(x)
        ns[name] = x
        return name

    body = []
    for li, (fn, head, pack, grid, args) in enumerate(launches):
        g = [val(x, f"g{li}_{i}") for i, x in enumerate((*grid, 1, 1)[:3])]
        h = [val(x, f"h{li}_{i}") for i, x in enumerate(head)]
        a = [val(x, f"a{li}_{i}") for i, x in enumerate(args)]
        ns[f"fn{li}"] = fn
        tail = ", ".join(a)
        body.append(f"    fn{li}({', '.join(g + ['stream'] + h)}, {'(' + tail + ',)' if pack else tail})")
    src = "\n".join([f"def go({params}, stream):", *(f"    {p}" for p in prelude), *body,
                     *(f"    {p}" for p in epilogue)])
    exec(src, ns)
    return ns["go"]


#: the largest workspace kept between eager calls (per device and stream); calls whose host time matters are
#: small, larger ones allocate per call
KEEP_WORKSPACE = 8 << 20
#: streams with a kept workspace at most (an engine that makes streams per request does not grow it without end)
KEEP_STREAMS = 16
_kept: dict = {}


def workspace(device: torch.device, stream: int, nbytes: int) -> torch.Tensor:
    """A byte buffer of at least ``nbytes`` for one eager call's launches on ``stream`` (the raw stream the launches
    go to): one buffer per device and stream, kept up to :data:`KEEP_WORKSPACE`. Reusing it is safe because every
    call that uses it runs on that one stream, in order; calls under CUDA-graph capture must allocate their own
    (a graph's replay must not share memory with eager calls on other streams)."""
    key = (device, stream)
    buf = _kept.get(key)
    if buf is None or buf.shape[0] < nbytes:
        buf = torch.empty(nbytes, dtype=torch.int8, device=device)
        if nbytes <= KEEP_WORKSPACE:
            if key not in _kept and len(_kept) >= KEEP_STREAMS:
                _kept.clear()
            _kept[key] = buf
    return buf


#: what a runner's ``go`` returns when the call is not one its kept plan serves (:func:`kept_runner`)
MISS = object()


def kept_runner(warm, run, find, go):
    """A launcher's runner for one memo class and per-call key (``atrex.plugin.ImplSpec.bind``): ``run``'s
    arguments, ``run``'s results. Once ``find(*args)`` names the plan a call of the class ran (``(plan, its
    device)``, or None: none kept, a misaligned pointer), later calls go straight to ``go(plan, stream, *args)``
    while direct launches apply (:func:`go_stream`) and ``warm`` was not cleared since (``warm.epoch``); ``go``
    returns :data:`MISS` before any allocation or launch for a call the plan does not serve, and ``run`` takes
    it (as every call before the plan is found)."""
    kept = [None, None, None]  # (plan, the epoch it was found in, its device)

    def run_kept(*args):
        plan, epoch, device = kept
        if plan is not None and epoch == warm.epoch:
            stream = go_stream(device)
            if stream is not None:
                res = go(plan, stream, *args)
                if res is not MISS:
                    return res
        epoch = warm.epoch
        res = run(*args)
        found = find(*args)
        if found is not None:
            kept[:] = found[0], epoch, found[1]
        return res

    return run_kept
