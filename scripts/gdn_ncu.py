"""One T=8192, H=16, HV=32, K=V=128 GDN forward, run twice (compile, then the call to profile).

    ncu --clock-control none --kernel-name regex:atrex_sm90_gdn_ --launch-skip 2 --launch-count 2 \\
        --section SpeedOfLight --section Occupancy --section WarpStateStats --section LaunchStats \\
        python3 scripts/gdn_ncu.py
"""

import torch

from atrex_nvidia.chunk_gdn.sm90 import bench_gdn as B

x = B.make(("T8192_H16_HV32", 8192, 16, 32))
f = B.atrex_call(x)
for _ in range(2):
    f()
torch.cuda.synchronize()
