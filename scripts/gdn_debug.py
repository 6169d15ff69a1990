"""H200 debugging aid for the SM90 GDN launcher: runs one small-case id of the target tests with the
fast path forced on or off, synchronising after each call so a device fault names its case.

    python3 scripts/gdn_debug.py K60_V100_fp16 [fast|slow|auto] [wy] [ATTR=value ...]
``ATTR=value`` sets a launch-module hook, e.g. ``INTRA_IMPL=v2`` or ``STATE_IMPL=v3``
(run it under ``compute-sanitizer --tool memcheck`` to get the faulting kernel and address)."""

import sys

import torch

sys.path.insert(0, "op_test/nvidia/chunk_gdn")
import _gdn_cases as C

from atrex_nvidia.chunk_gdn.sm90 import launch

case_id = sys.argv[1]
mode = sys.argv[2] if len(sys.argv) > 2 else "auto"
launch.FAST_PATH = {"fast": True, "slow": False}.get(mode, "auto")
launch.USE_WY = "wy" in sys.argv[3:]
for a in sys.argv[3:]:
    if "=" in a:
        name, val = a.split("=", 1)
        assert hasattr(launch, name), name
        setattr(launch, name, val)
kw = dict(C.GPU_CASES)[case_id]
eo, eh, bound = C.run_case(launch.gdn_fwd, case_id, kw, "cuda")
torch.cuda.synchronize()
print(f"{case_id} mode={mode} wy={launch.USE_WY} {' '.join(sys.argv[3:])}: o rrmse {eo:.2e}, ht rrmse {eh:.2e}, bound {bound:.1e}",
      "PASS" if eo <= bound and eh <= bound else "FAIL", flush=True)
