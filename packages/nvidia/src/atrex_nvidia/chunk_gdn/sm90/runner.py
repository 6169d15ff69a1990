"""Launching a planned list of ``nvidia.gdn_sm90`` kernels: capture safety, descriptor scratch, templates.

A launch is ``(kernel, grid, args, meta)``. Before the first launch of a call, every launch key is checked
against this process's warm record, so a CUDA-graph capture refuses (``AtrexCaptureError``) a call whose kernels
would compile inside it. The first run of a launch key goes through Triton, which compiles it; its compiled kernel is
kept per key, so a later call whose launches all ran before launches them directly even when it is of a new class
(another T, another batch). ``launch.gdn_fwd`` keeps a template per call class
(``atrex_nvidia/launch_template.py``), which later calls of the class run instead of planning, allocating and
binding every launch again.
"""

import torch
from triton.runtime import _allocation

from atrex.errors import AtrexCaptureError
from atrex_nvidia.launch_plan import capture, direct_ready, raw_stream, replay_supported
from atrex_nvidia.triton_warm import WarmRecord, launch_key

WARM = WarmRecord()

#: whether this Triton's compiled kernels launch directly (templates launch through Triton's JIT path otherwise)
_REPLAY_OK = replay_supported()


def _param_tail(kern, n_positional):
    """(name, default) of the kernel's parameters after the first ``n_positional``."""
    params = list(kern.signature.parameters.values())[n_positional:]
    return tuple((p.name, p.default) for p in params)


class scratch_on:
    """Kernels that build TMA descriptors in the kernel ask Triton's allocator for scratch at launch: ours, on the
    call's device (under capture it comes from the graph's pool). A plain context manager (contextlib's costs a
    microsecond a call)."""

    __slots__ = ("dev", "token")

    def __init__(self, dev):
        self.dev = dev

    def __enter__(self):
        dev = self.dev
        self.token = _allocation._allocator.set(
            lambda size, alignment, stream: torch.empty(size, dtype=torch.int8, device=dev))

    def __exit__(self, *exc):
        _allocation._allocator.reset(self.token)
        return False


def launch_all(dev, launches, sig=None) -> list:
    """Launch ``launches`` in order on the current stream; ``sig`` (hashable) determines all their keys. Launches
    whose keys all launched before go directly through the compiled kernels kept per key; otherwise Triton's JIT
    path runs them and their compiled kernels are kept. Returns the ``launch_plan.Direct`` of each launch (None
    where none applies), for a template."""
    keys = [launch_key(kern, args, meta) for kern, _, args, meta in launches]
    missing = () if sig is not None and WARM.seen(sig) else WARM.missing(keys)
    if missing and dev.type == "cuda" and torch.cuda.is_current_stream_capturing():
        raise AtrexCaptureError(
            "nvidia.gdn_sm90: this call's Triton specialisation has not run in this process, so it would "
            "compile during CUDA-graph capture; call atrex.prewarm('chunk_gdn', ...) (or run one eager call "
            "with the same shapes, dtypes and flags) before capturing")
    directs = [WARM.direct(k) for k in keys]
    with scratch_on(dev):
        if direct_ready(directs):
            stream = raw_stream(directs[0].device)
            for (_, grid, args, _), d in zip(launches, directs):
                g = (*grid, 1, 1)
                d(g[0], g[1], g[2], stream,
                  (*[a.data_ptr() if isinstance(a, torch.Tensor) else a for a in args], *d.tail))
        else:
            compiled = [kern[grid](*args, **meta) for kern, grid, args, meta in launches]
            directs = [capture(kern, c, len(args), meta, dev) for (kern, _, args, meta), c in zip(launches, compiled)]
            for k, d in zip(keys, directs):
                WARM.keep_direct(k, d)
    WARM.add(missing)
    if sig is not None:
        WARM.mark(sig)
    return directs
