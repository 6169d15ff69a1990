"""One GDN forward of a bench_gdn case (default T=8192, H=16, HV=32, K=V=128), run twice (compile, then
the call to profile). ``scripts/h200-session.sh`` step ``gdn-ncu`` profiles it with Nsight Compute:

    ncu --clock-control none --kernel-name regex:atrex_sm90_gdn_ --launch-skip 2 --launch-count 2 \\
        --set full --import-source yes -o gdn python3 scripts/gdn_ncu.py T8192_H16_HV32

Extra ``ATTR=value`` arguments set launch hooks as in scripts/gdn_debug.py.
"""

import sys

import torch

from atrex_nvidia.chunk_gdn.sm90 import bench_gdn as B
from atrex_nvidia.chunk_gdn.sm90 import launch as L

name = sys.argv[1] if len(sys.argv) > 1 else "T8192_H16_HV32"
for arg in sys.argv[2:]:
    attr, _, val = arg.partition("=")
    setattr(L, attr, {"True": True, "False": False, "None": None}.get(val, val))
case = next(c for c in B.CASES if c[0] == name)
x = B.make(case)
f = B.atrex_call(x)
for _ in range(2):
    f()
torch.cuda.synchronize()
