"""``atrex bench run --warm N``: before timing, N worker processes run every selected case's contenders
once, in parallel, so that kernels with an on-disk cache (Triton's: ATREX's own kernels; FlashInfer's
JIT modules) are compiled when the timing process reaches them. Kernels a library caches only in memory
(FA4's CuTe DSL) still compile in the timing process. Failures are ignored here: the timed run checks
and reports every contender."""

from __future__ import annotations

import multiprocessing
import time
from concurrent.futures import ProcessPoolExecutor


def _warm_one(op: str, device: str, case_name: str, graph: bool) -> tuple[str, float]:
    """Run each contender of one case once; returns (case, seconds)."""
    import torch

    from atrex.validation import baselines as B
    from atrex.validation.bench import Reference, _normalize, baseline_entries, impl_entries
    from atrex.validation.cases import cases

    t0 = time.monotonic()
    dev = torch.device(device)
    case = next(c for c in cases(op) if c.name == case_name)
    kw = case.inputs(dev, seed=1)
    try:
        target = _normalize(op, kw).target
        ref = Reference(op, kw, dev)
        entries = impl_entries(op, kw, dev, ref) + baseline_entries(op, kw, target, ref, B.BASELINES[op], graph)[0]
    except Exception:
        return case_name, time.monotonic() - t0
    for e in entries:
        try:
            e.fn()
        except Exception:
            pass
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)
    return case_name, time.monotonic() - t0


def warm(op: str, device, case_names: list[str], graph: bool, workers: int) -> float:
    """Warm ``case_names`` in ``workers`` spawned processes; returns the wall seconds it took."""
    t0 = time.monotonic()
    if workers <= 0 or not case_names:
        return 0.0
    ctx = multiprocessing.get_context("spawn")  # a CUDA context never crosses a fork
    with ProcessPoolExecutor(max_workers=min(workers, len(case_names)), mp_context=ctx) as pool:
        list(pool.map(_warm_one, [op] * len(case_names), [str(device)] * len(case_names), case_names,
                      [graph] * len(case_names)))
    return time.monotonic() - t0
