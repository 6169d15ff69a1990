"""``nvidia.gdn_decode_sm90``: registered by :mod:`atrex_nvidia._plugin` as ``check`` / ``run`` / ``prewarm`` /
``bind``.

``check`` reads shapes, dtypes and host ints only and lists every reason; ``run`` never reads device values on
the host; under CUDA-graph capture an uncompiled specialisation raises :class:`atrex.errors.AtrexCaptureError`
before any allocation or launch.
"""

import functools

import torch

from atrex.eligibility import Eligibility, Reason

from . import table as T

__all__ = ["bind", "check", "prewarm", "run"]


def check(call) -> Eligibility:
    """Host-only eligibility of ``call`` on the call's target (every failing reason listed)."""
    reasons = []
    target = call.target
    if target.family != T.FAMILY or target.arch != T.ARCH:
        reasons.append(Reason("target", "q", target.id, f"{T.FAMILY}/{T.ARCH}"))
    if call.dtype not in T.IO_DTYPES:
        reasons.append(Reason("dtype", "q", str(call.dtype).replace("torch.", ""), T.dtypes_text(T.IO_DTYPES)))
    if call.pool.dtype not in T.POOL_DTYPES:
        reasons.append(Reason("dtype", "initial_state", str(call.pool.dtype).replace("torch.", ""),
                              T.dtypes_text(T.POOL_DTYPES)))
    if call.head_k_dim not in T.HEAD_DIMS:
        reasons.append(Reason("head_dim", "q", call.head_k_dim, f"K in {{{T.dims_text()}}}"))
    if call.head_v_dim not in T.HEAD_DIMS:
        reasons.append(Reason("head_dim", "v", call.head_v_dim, f"V in {{{T.dims_text()}}}"))
    return Eligibility.of(reasons)


def run(call):
    """Run on the call's device and current stream; returns ``(o, final_state)``."""
    decode = _launcher().decode  # (imported on first use: check() must not import Triton)
    index = call.device.index
    if index is not None and call.q.is_cuda and index != _current_device():  # (is_cuda: device.type builds a str)
        with torch.cuda.device(index):
            return decode(call)
    return decode(call)


def bind(call):
    """``run``'s runner for ``call``'s memo class and per-call key (``atrex.plugin.ImplSpec.bind``): the class's
    launch plan, once ``run`` kept it, launched straight from its generated launch."""
    return _launcher().runner(run)


# (torch.cuda.current_device() without its lazy-init check: only asked once a CUDA tensor exists)
_current_device = getattr(torch._C, "_cuda_getDevice", torch.cuda.current_device)


@functools.cache
def _launcher():
    from . import launch

    return launch


def prewarm(call) -> None:
    """Compile the call's specialisation: one launch into scratch buffers shaped and strided like the pool, so
    the caller's pool is never written."""
    from atrex.errors import AtrexCaptureError

    if call.capturing:
        raise AtrexCaptureError("nvidia.gdn_decode_sm90: prewarm during CUDA-graph capture; prewarm before capturing")
    pool = call.pool
    scratch = torch.empty_strided(pool.shape, pool.stride(), dtype=pool.dtype, device=pool.device).zero_()
    run(call._replace(pool=scratch))
