"""How long one intra v3 program takes with no other program on its SM, and with 2 / 4 / 8 per SM (round 18, for the
design of a fused kernel's intra partition): varlen calls of 132 x M one-chunk sequences (64 tokens) with one head,
so the intra grid is 132 x M programs of one chunk each; per-kernel times by bench_gdn's profiler breakdown.
``--hook NAME=VALUE`` (repeatable, a Python literal) sets a launch.py knob first, and the line's tag says which
(round 19: ``INTRA_V3_DIAG16=True``).

    python scripts/gdn_intra_latency.py [--hook INTRA_V3_DIAG16=True]
"""

import argparse
import ast

from atrex_nvidia.chunk_gdn.sm90 import bench_gdn as bg
from atrex_nvidia.chunk_gdn.sm90 import launch


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hook", action="append", default=[], metavar="NAME=VALUE")
    a = ap.parse_args(argv)
    for name, val in (h.split("=", 1) for h in a.hook):
        if not hasattr(launch, name):
            raise SystemExit(f"launch.py has no knob {name}")
        setattr(launch, name, ast.literal_eval(val))
    tag = " ".join(a.hook) or "default"
    for m in (1, 2, 4, 8):
        x = bg.make((f"lat{m}", [64] * (132 * m), 1, 1))
        rows = bg.kernel_breakdown(x)
        row = "; ".join(f"{name.replace('atrex_sm90_gdn_', '')} {r['ms_per_fwd'] * 1000:.1f} us"
                        for name, r in sorted(rows.items()))
        print(f"LAT [{tag}] programs/SM {m}: {row}", flush=True)


if __name__ == "__main__":
    main()
