"""H200 aid for the intermittent T=1 illegal address (BENCH_H200.md, round 6/7). Replays the faulting order
(T64, T65_noL2, T130_B2_gva_bf16h0, T1) ``reps`` times in one process, in one of three arms:

    plain   as scripts/gdn_fault_repro.py (default kernels), to measure the fault rate in the same run
    sync    synchronise after every GDN launch and every stage of a case; on a fault, print the stage or kernel that
            faulted and where each tensor argument sat in the caching allocator's segments
    nospec  the intra v3 and state v2 kernels compiled without Triton's specialisation of T, TOTAL_T and N (an int
            argument equal to 1 becomes a compile-time constant: T=1 calls get their own binaries)

    python3 scripts/gdn_fault_diag.py ARM REPS
"""

import sys
import traceback

import torch

sys.path.insert(0, "op_test/nvidia/chunk_gdn")
import _gdn_cases as C

from atrex_nvidia.chunk_gdn.sm90 import kernels as K
from atrex_nvidia.chunk_gdn.sm90 import launch

arm, reps = sys.argv[1], int(sys.argv[2])
stage = ["start"]

if arm == "nospec":
    for kern in (K.atrex_sm90_gdn_intra_chunk_v3, K.atrex_sm90_gdn_state_output_v2):
        for p in kern.params:
            if p.name in ("T", "TOTAL_T", "N"):
                p.do_not_specialize = True


def _segments():
    return [(s["address"], s["total_size"]) for s in torch.cuda.memory_snapshot()]


def _where(ptr, segs):
    for a, n in segs:
        if a <= ptr < a + n:
            return f"seg {a:#x}+{n >> 10}K at +{ptr - a}, {a + n - ptr} B to its end"
    return "no segment"


if arm == "sync":
    orig = launch._launch

    def _launch(kern, grid, args, meta, slot=None):
        segs = _segments()
        stage[0] = f"kernel {kern.fn.__name__} grid {grid}"
        orig(kern, grid, args, meta, slot)
        try:
            torch.cuda.synchronize()
            stage[0] = f"after {kern.fn.__name__} (synchronised)"
        except Exception:
            print(f"FAULT in {stage[0]}", flush=True)
            for i, a in enumerate(args):
                if isinstance(a, torch.Tensor):
                    nb = a.untyped_storage().nbytes()
                    print(f"  arg {i}: {tuple(a.shape)} {a.dtype} ptr {a.data_ptr():#x} storage {nb} B; "
                          f"{_where(a.data_ptr(), segs)}", flush=True)
                elif not hasattr(a, "data_ptr"):
                    print(f"  arg {i}: {a!r}", flush=True)
            print(f"  meta {meta}", flush=True)
            raise

    launch._launch = _launch

cases = dict(C.GPU_CASES)
seq = ["T64", "T65_noL2", "T130_B2_gva_bf16h0", "T1"]
for r in range(reps):
    for cid in seq:
        stage[0] = f"case {cid} (outside the GDN launches)"
        try:
            eo, eh, bound = C.run_case(launch.gdn_fwd, cid, cases[cid], "cuda")
            torch.cuda.synchronize()
            if not (eo <= bound and eh <= bound):
                print(f"{arm} rep {r} {cid}: WRONG o {eo:.2e} ht {eh:.2e} bound {bound:.1e}", flush=True)
                sys.exit(4)
        except Exception as exc:
            print(f"{arm} rep {r} {cid}: FAULT at {stage[0]}: {type(exc).__name__}: {str(exc)[:80]}", flush=True)
            tb = traceback.extract_tb(exc.__traceback__)
            print("  raised at: " + " <- ".join(f"{f.name}:{f.lineno}" for f in reversed(tb[-4:])), flush=True)
            sys.exit(3)
print(f"{arm}: {reps} reps clean", flush=True)
