"""H200 debugging aid: every target-test case of the SM90 GDN launcher (default kernels) and every variant case
(``_gdn_cases.VARIANT_HOOKS``), one process, a device sync and a ``BEGIN``/``END`` line around each call, so that
under ``PYTORCH_NO_CUDA_MEMORY_CACHING=1 compute-sanitizer --tool memcheck`` (one cudaMalloc per tensor, so an
out-of-bounds access past a tensor's end is reported even where the caching allocator would have mapped memory
there) each report is attributed to a case and variant.

    PYTORCH_NO_CUDA_MEMORY_CACHING=1 compute-sanitizer --tool memcheck python3 scripts/gdn_memcheck.py [filter]
"""

import sys

import torch

sys.path.insert(0, "op_test/nvidia/chunk_gdn")
import _gdn_cases as C

from atrex_nvidia.chunk_gdn.sm90 import launch

flt = sys.argv[1] if len(sys.argv) > 1 else ""
runs = [(cid, kw, "default", {}) for cid, kw in C.GPU_CASES]
runs += [(cid, kw, name, hooks) for cid, kw in C.VARIANT_CASES for name, hooks in sorted(C.VARIANT_HOOKS.items())]
bad = 0
for cid, kw, name, hooks in runs:
    tag = f"{cid}/{name}"
    if flt not in tag:
        continue
    saved = {a: getattr(launch, a) for a in hooks}
    print("BEGIN", tag, flush=True)
    try:
        for a, val in hooks.items():
            setattr(launch, a, val)
        eo, eh, bound = C.run_case(launch.gdn_fwd, cid, kw, "cuda")
        torch.cuda.synchronize()
        ok = eo <= bound and eh <= bound
        bad += not ok
        print("END", tag, f"o {eo:.2e} ht {eh:.2e} bound {bound:.1e}", "PASS" if ok else "FAIL", flush=True)
    except Exception as exc:  # a device fault poisons the process: report it and stop
        print("END", tag, f"{type(exc).__name__}: {str(exc)[:200]}", flush=True)
        sys.exit(2)
    finally:
        for a, val in saved.items():
            setattr(launch, a, val)
print("failed:", bad)
