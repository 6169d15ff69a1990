"""H200 aid for the intermittent illegal address of the GDN target tests (BENCH_H200.md, round 6): replays, in one
process, the order an xdist worker ran when it faulted (test_cases[T64], [T65_noL2], [T130_B2_gva_bf16h0], then
test_cases_variants[T1-state_tma]) ``reps`` times, syncing after each call.

    python3 scripts/gdn_fault_repro.py MODE REPS      MODE: default (tma state kernel where eligible) | v2 (never TMA)
"""

import sys

import torch

sys.path.insert(0, "op_test/nvidia/chunk_gdn")
import _gdn_cases as C

from atrex_nvidia.chunk_gdn.sm90 import launch

mode, reps = sys.argv[1], int(sys.argv[2])
if mode == "v2":
    launch.STATE_IMPL = "v2"
cases = dict(C.GPU_CASES)
seq = ["T64", "T65_noL2", "T130_B2_gva_bf16h0", "T1"]
for r in range(reps):
    for cid in seq:
        try:
            eo, eh, bound = C.run_case(launch.gdn_fwd, cid, cases[cid], "cuda")
            torch.cuda.synchronize()
            if not (eo <= bound and eh <= bound):
                print(f"{mode} rep {r} {cid}: WRONG o {eo:.2e} ht {eh:.2e} bound {bound:.1e}", flush=True)
                sys.exit(4)
        except Exception as exc:
            print(f"{mode} rep {r} {cid}: FAULT {type(exc).__name__}: {str(exc)[:80]}", flush=True)
            sys.exit(3)
print(f"{mode}: {reps} reps clean", flush=True)
