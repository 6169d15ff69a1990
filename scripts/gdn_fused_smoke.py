"""First look at ``launch.FUSED_RC`` on a GPU (round 20): ``_gdn_cases.fused_check`` on a few small cases, one at a time,
each row printed (and flushed) as soon as it exists, so that a hang or a fault still leaves the rows before it in the
log. Run it under ``timeout``: a lost mbarrier phase shows as a hang, not as an error.

    timeout 90 python3 scripts/gdn_fused_smoke.py [CASE ...]
"""

import os
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path[:0] = [os.path.join(ROOT, "op_test", "nvidia", "chunk_gdn"), os.path.join(ROOT, "op_test")]

import _gdn_cases as C  # noqa: E402

from atrex_nvidia.chunk_gdn.sm90 import launch  # noqa: E402

CASES = sys.argv[1:] or ["fu_B2_T63_K64", "fu_varlen_K64_gva", "g_pos", "qwen_varlen_mixed", "qwen3next_T1000_bf16h0"]
for diag16 in (False, True):
    for cid in CASES:
        print(f"SMOKE {cid} diag16={diag16} ...", flush=True)
        for name, (err, _, bound) in C.fused_check(launch, "cuda", (cid,), diag16=diag16).items():
            print(f"SMOKE {name} diag16={diag16} {err:.3e} <= {bound:.1e} {'ok' if err <= bound else 'FAIL'}",
                  flush=True)
