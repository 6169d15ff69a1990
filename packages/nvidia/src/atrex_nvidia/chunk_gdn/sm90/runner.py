"""Launching a planned list of ``nvidia.gdn_sm90`` kernels: capture safety, descriptor scratch, replay.

A launch is ``(kernel, grid, args, meta)``. Before the first launch of a call, every launch key is checked
against this process's warm record, so a CUDA-graph capture refuses (``AtrexCaptureError``) a call whose kernels
would compile inside it. A call signature that launched before replays the compiled kernels Triton returned for
it, skipping Triton's per-launch binder and cache-key work (the signature fixes every specialisation).
"""

import torch
import triton

from atrex.errors import AtrexCaptureError
from atrex_nvidia.triton_warm import WarmRecord, launch_key

WARM = WarmRecord()

# The Triton releases whose launch sequence (``CompiledKernel.run`` with grid, stream, function, packed metadata,
# launch metadata, the two hooks and the bound arguments) the replay reproduces; elsewhere Triton's own path runs.
_REPLAY_TRITON = ("3.6.",)
_REPLAY_OK = triton.__version__.startswith(_REPLAY_TRITON) and hasattr(triton, "knobs")
_COMPILED = {}  # call signature -> per launch: None or (compiled kernel, its device, parameters after the positional)
_COMPILED_MAX = 4096


def _param_tail(kern, n_positional):
    """(name, default) of the kernel's parameters after the first ``n_positional``."""
    params = list(kern.signature.parameters.values())[n_positional:]
    return tuple((p.name, p.default) for p in params)


def _no_hook(hook):
    """Whether a Triton launch hook calls nothing: None, or an empty ``HookChain``."""
    return hook is None or (isinstance(getattr(hook, "calls", None), list) and not hook.calls)


def _launch(kern, grid, args, meta, slot):
    """Launch one kernel; ``slot`` = (the signature's record, index) replays or records its compiled kernel."""
    hit = slot[0][slot[1]] if slot is not None else None
    rt = triton.knobs.runtime if _REPLAY_OK else None
    if hit is not None and _no_hook(rt.launch_enter_hook) and _no_hook(rt.launch_exit_hook):
        compiled, device, tail = hit
        drv = triton.runtime.driver.active
        if drv.get_current_device() == device:
            g1 = grid[1] if len(grid) > 1 else 1
            g2 = grid[2] if len(grid) > 2 else 1
            bound = (*args, *[meta[n] if n in meta else d for n, d in tail])
            compiled.run(grid[0], g1, g2, drv.get_current_stream(device), compiled.function,
                         compiled.packed_metadata, None, None, None, *bound)
            return
    compiled = kern[grid](*args, **meta)
    # (a plain JIT function only: an autotuner would choose its own meta-parameters per call)
    if (slot is not None and compiled is not None and not hasattr(compiled, "result")
            and isinstance(kern, triton.runtime.jit.JITFunction)):
        slot[0][slot[1]] = (compiled, triton.runtime.driver.active.get_current_device(), _param_tail(kern, len(args)))


def _record(sig, n):
    """The replay record of a call signature (None where replay does not apply)."""
    if sig is None or not _REPLAY_OK:
        return None
    record = _COMPILED.get(sig)
    if record is None or len(record) != n:
        record = [None] * n
        if len(_COMPILED) < _COMPILED_MAX:
            _COMPILED[sig] = record
    return record


def launch_all(dev, launches, sig=None):
    """Launch ``launches`` in order on the current stream; ``sig`` (hashable) determines all their keys."""
    if sig is not None and WARM.seen(sig):
        missing = ()
    else:
        missing = WARM.missing([launch_key(kern, args, meta) for kern, _, args, meta in launches])
    if missing and dev.type == "cuda" and torch.cuda.is_current_stream_capturing():
        raise AtrexCaptureError(
            "nvidia.gdn_sm90: this call's Triton specialisation has not run in this process, so it would "
            "compile during CUDA-graph capture; call atrex.prewarm('chunk_gdn', ...) (or run one eager call "
            "with the same shapes, dtypes and flags) before capturing")
    record = _record(sig, len(launches)) if dev.type == "cuda" else None
    # Kernels that build TMA descriptors in the kernel ask Triton's allocator for scratch at launch: ours, on the
    # call's device (under capture it comes from the graph's pool).
    from triton.runtime import _allocation
    token = _allocation._allocator.set(lambda size, alignment, stream: torch.empty(size, dtype=torch.int8, device=dev))
    try:
        for i, launch in enumerate(launches):
            _launch(*launch, slot=(record, i) if record is not None else None)
    finally:
        _allocation._allocator.reset(token)
    WARM.add(missing)
    if sig is not None:
        WARM.mark(sig)
