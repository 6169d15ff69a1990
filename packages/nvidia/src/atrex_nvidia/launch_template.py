"""A launch plan derived from the launches of a call's first run: for launchers that build many launches with
their own workspace (``chunk_gdn``), so a later call of the same class skips building them.

``derive`` reads the first run's launches ``(kernel, grid, args, meta)`` and classifies every argument: a
constant (an int, float, None, or anything not a tensor), one of the call's input tensors (``roots``), one of the
launcher's outputs (``outputs``: allocated per call and returned), or a view of a workspace buffer the launcher
allocated (any other tensor). A later call of the class (the caller's key must fix every shape, stride, dtype,
flag and scalar, so that every constant and every view is the same) allocates the outputs and one workspace
buffer for all the workspace views (each at its first run's offset within a 512-byte aligned slot: the same
16-byte alignment), and launches the compiled kernels directly with the pointers as ints. Where a direct launch
does not apply (the interpreter, a launch hook, no compiled kernel) it launches through Triton with tensors, the
workspace views rebuilt over the same buffer.
"""

from __future__ import annotations

from typing import NamedTuple

import torch

from atrex_nvidia.launch_plan import MISS, Arg, Direct, contiguous_strides, generate, go_stream, workspace

__all__ = ["Template", "derive"]

_SLOT = 512  # workspace slot alignment (what the CUDA caching allocator gives each tensor)


class _View(NamedTuple):
    """A workspace view: its slot's byte offset in the buffer plus its own byte offset, dtype, sizes, strides."""

    offset: int
    dtype: torch.dtype
    shape: tuple
    stride: tuple


class _Launch(NamedTuple):
    kernel: object
    grid: tuple
    meta: dict
    consts: tuple  # the arguments, with None where a pointer goes
    slots: tuple  # (position, kind, index, byte offset): kind 0 a root, 1 an output, 2 a workspace view
    direct: Direct | None
    scratch: int | None = None  # byte offset of the kernel's global scratch in the workspace (its C launch)


class Template(NamedTuple):
    launches: tuple
    outputs: tuple  # (shape, dtype) of each output, or None
    views: tuple  # the workspace views (_View)
    workspace: int  # bytes
    go: object = None  # every direct launch in one generated function (``_compile``), when all are compiled
    device: int | None = None  # the CUDA device whose context loaded the compiled kernels
    scoped: bool = True  # a launch of ``go`` allocates global scratch through Triton's allocator
    kept: object = None  # the whole direct run as one generated function (``_compile_kept``), when not scoped

    def run(self, roots: tuple, device: torch.device, scope=None, eager: bool = False):
        """Allocate the outputs and the workspace, launch every kernel; returns the outputs. ``scope(device)``: the
        context Triton's allocator needs for kernels that allocate global scratch (what ``go`` does not place in
        the workspace). ``eager``: the call is not under CUDA-graph capture, so direct launches may take the
        stream's kept workspace (``launch_plan.workspace``)."""
        stream = None if self.go is None else go_stream(self.device)  # (one device loaded them all)
        if stream is not None:
            return self.run_direct(roots, device, stream, scope, eager)
        outs = [None if o is None else torch.empty(o[0], dtype=o[1], device=device) for o in self.outputs]
        nbytes = self.workspace
        ws = torch.empty(nbytes, dtype=torch.int8, device=device) if nbytes else None
        if scope is not None:
            with scope(device):
                self._jit(roots, outs, ws)
        else:
            self._jit(roots, outs, ws)
        return tuple(outs)

    def run_direct(self, roots: tuple, device: torch.device, stream: int, scope=None, eager: bool = False):
        """:meth:`run` through ``go`` on ``stream``, for a caller that found direct launches apply
        (``launch_plan.go_stream``)."""
        outs = [None if o is None else torch.empty(o[0], dtype=o[1], device=device) for o in self.outputs]
        nbytes = self.workspace
        ws = None
        if nbytes:
            ws = workspace(device, stream, nbytes) if eager else torch.empty(nbytes, dtype=torch.int8, device=device)
        if self.scoped and scope is not None:
            with scope(device):
                self.go(roots, outs, ws, stream)
        else:
            self.go(roots, outs, ws, stream)
        return tuple(outs)

    def _jit(self, roots, outs, ws):
        tensors = (roots, outs, [_view_of(ws, v) for v in self.views])
        for ln in self.launches:
            args = list(ln.consts)
            for pos, kind, idx in ln.slots:
                args[pos] = tensors[kind][idx]
            ln.kernel[ln.grid](*args, **ln.meta)


def _view_of(ws: torch.Tensor, v: _View) -> torch.Tensor:
    """The workspace view ``v`` over the buffer ``ws``."""
    return torch.empty(0, dtype=v.dtype, device=ws.device).set_(ws.untyped_storage(), v.offset // v.dtype.itemsize,
                                                                v.shape, v.stride)


def _compile(launches: tuple, views: tuple):
    """One function that launches every kernel of the template directly (``launch_plan.generate``): pointers read
    once per call, each workspace view and kernel scratch at its offset in the workspace."""
    reads = {}

    def ptr(kind, idx):
        if kind == 2:
            reads["base = ws.data_ptr()"] = None
            return Arg(f"base + {views[idx].offset}")
        name = f"{'ro'[kind]}{idx}"
        reads[f"{name} = {('roots', 'outs')[kind]}[{idx}].data_ptr()"] = None
        return Arg(name)

    if any(ln.scratch is not None for ln in launches):
        reads["base = ws.data_ptr()"] = None
    specs = _specs(launches, ptr)
    return generate("roots, outs, ws", tuple(reads), specs)


def _specs(launches: tuple, ptr) -> list:
    """``launch_plan.generate``'s launches of a template: every argument, ``ptr(kind, index)`` for its pointers, and
    a kernel's global scratch (placed in the workspace) at ``base`` plus its offset through its C launch."""
    specs = []
    for ln in launches:
        d, slots = ln.direct, {pos: (kind, idx) for pos, kind, idx in ln.slots}
        args = [ptr(*slots[pos]) if pos in slots else c for pos, c in enumerate((*ln.consts, *d.tail))]
        if ln.scratch is None:
            specs.append((d.fn, d.head, d.pack, ln.grid, args))
            continue
        head = list(d.c_head)
        head[d.scratch[2]] = Arg(f"base + {ln.scratch}")
        specs.append((d.c_fn, head, d.c_pack, ln.grid, args))
    return specs


def _compile_kept(launches: tuple, views: tuple, present: tuple, outputs: tuple, nbytes: int, root_exprs=None):
    """``kept(src, device, eager, stream)``: :meth:`Template.run_direct` as one generated function for a caller
    that holds the template (a bound runner): it reads the pointers of the roots the template had (``present``;
    root ``i`` is ``src[i]``, or the expression ``root_exprs[i]`` over ``src``, e.g. ``src.q`` for a record),
    returns ``launch_plan.MISS`` before any allocation or launch when one of them is not 16-byte aligned (the
    template's key says they are), allocates the outputs and the workspace, launches every kernel and returns the
    outputs."""
    prelude = [f"r{i} = {root_exprs[i] if root_exprs else f'src[{i}]'}.data_ptr()" for i in present]
    if present:
        prelude.append(f"if ({' | '.join(f'r{i}' for i in present)}) & 15: return MISS")
    ns = {"MISS": MISS, "empty": torch.empty, "empty_strided": torch.empty_strided, "workspace": workspace,
          "int8": torch.int8}
    for i, o in enumerate(outputs):
        if o is not None:
            ns[f"shape{i}"], ns[f"dtype{i}"], ns[f"stride{i}"] = *o, contiguous_strides(o[0])
            prelude += [f"o{i} = empty_strided(shape{i}, stride{i}, dtype=dtype{i}, device=device)",
                        f"p{i} = o{i}.data_ptr()"]
    if nbytes:
        prelude += [f"ws = workspace(device, stream, {nbytes}) if eager else empty({nbytes}, dtype=int8, device=device)",
                    "base = ws.data_ptr()"]

    def ptr(kind, idx):
        return Arg(f"base + {views[idx].offset}" if kind == 2 else f"{'rp'[kind]}{idx}")

    specs = _specs(launches, ptr)
    result = ", ".join("None" if o is None else f"o{i}" for i, o in enumerate(outputs))
    return generate("src, device, eager", tuple(prelude), specs, ns, (f"return ({result},)" if outputs else
                                                                       "return ()",))


def _storage_key(t: torch.Tensor) -> int:
    return t.untyped_storage().data_ptr()


def derive(launches: list, directs: list, roots: tuple, outputs: tuple, root_exprs: tuple | None = None
           ) -> Template | None:
    """The template of a first run: ``launches`` and the compiled kernel of each bound for direct launches
    (``directs``, None where none applies), the call's input tensors ``roots`` and the launcher's outputs
    (``root_exprs``: where :attr:`Template.kept` reads each root, see :func:`_compile_kept`). None
    when the run cannot be replayed from a template: two roots
    at one address (which one an argument meant is unknown), or a tensor argument that is neither a root nor an
    output but shares a root's or an output's storage (a view the template could not rebuild)."""
    known = [t for t in (*roots, *outputs) if t is not None]
    if len({t.data_ptr() for t in known}) != len(known):
        return None
    where = {t.data_ptr(): (0, i) for i, t in enumerate(roots) if t is not None}
    where.update({t.data_ptr(): (1, i) for i, t in enumerate(outputs) if t is not None})
    taken = {_storage_key(t) for t in known}
    slots_of, views, view_index = {}, [], {}
    out = []
    for (kern, grid, args, meta), direct in zip(launches, directs):
        consts, slots = list(args), []
        for pos, a in enumerate(args):
            if not isinstance(a, torch.Tensor):
                continue
            consts[pos] = None
            hit = where.get(a.data_ptr())
            if hit is not None and a is (roots + outputs)[hit[1] + (len(roots) if hit[0] else 0)]:
                slots.append((pos, *hit))
                continue
            storage = a.untyped_storage()
            if storage.data_ptr() in taken:
                return None
            slot = slots_of.setdefault(storage.data_ptr(), (len(slots_of), storage.nbytes()))
            key = (slot[0], a.data_ptr() - storage.data_ptr(), a.dtype, tuple(a.shape), a.stride())
            if key not in view_index:
                view_index[key] = len(views)
                views.append(key)
            slots.append((pos, 2, view_index[key]))
        out.append((kern, grid, meta, tuple(consts), tuple(slots), direct))
    starts, total = [], 0
    for _, nbytes in sorted(slots_of.values()):
        starts.append(total)
        total += -(-nbytes // _SLOT) * _SLOT
    views = tuple(_View(starts[s] + off, dt, shape, st) for s, off, dt, shape, st in views)
    outs = tuple(None if o is None else (tuple(o.shape), o.dtype) for o in outputs)
    launches, total = _scratch_slots([_Launch(*ln) for ln in out], total)
    go = _compile(launches, views) if launches and all(ln.direct is not None for ln in launches) else None
    scoped = any(ln.direct.scratch is not None and ln.scratch is None for ln in launches) if go else True
    kept = None
    if go is not None and not scoped:
        kept = _compile_kept(launches, views, tuple(i for i, t in enumerate(roots) if t is not None), outs, total,
                             root_exprs)
    return Template(launches, outs, views, total, go, launches[0].direct.device if go is not None else None, scoped,
                    kept)


def _scratch_slots(launches: list, total: int) -> tuple[tuple, int]:
    """Place the global scratch of every launch that needs one and has a C launch in the workspace after its
    ``total`` bytes (its grid is fixed in the template): ``(launches with their scratch offsets, new total)``."""
    for i, ln in enumerate(launches):
        d = ln.direct
        if d is None or d.scratch is None or d.c_fn is None or _SLOT % d.scratch[1]:
            continue
        cells = 1
        for g in ln.grid:
            cells *= g
        launches[i] = ln._replace(scratch=total)
        total += -(-(cells * d.scratch[0]) // _SLOT) * _SLOT
    return tuple(launches), total
