"""Timing for ``atrex bench``.

GPUs: CUDA events through Triton's ``do_bench`` (median; it rewrites a 256 MB buffer between runs, so
repeated runs never measure a warm 50 MB L2), or ``do_bench_cudagraph`` for CUDA-graph replay.
CPU: ``timeit`` medians.
"""

from __future__ import annotations

import statistics
import timeit
from collections.abc import Callable


def time_ms(fn: Callable[[], object], device, *, graph: bool = False, rep_ms: int = 100) -> float:
    """Median milliseconds per call of ``fn`` on ``device``."""
    if device.type == "cuda":
        import triton.testing

        if graph:
            return float(triton.testing.do_bench_cudagraph(fn, rep=rep_ms, return_mode="median"))
        return float(triton.testing.do_bench(fn, rep=rep_ms, return_mode="median"))
    timer = timeit.Timer(fn)
    number, _ = timer.autorange()
    runs = timer.repeat(repeat=5, number=number)
    return statistics.median(runs) / number * 1e3
