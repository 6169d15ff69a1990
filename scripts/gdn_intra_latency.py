"""How long one intra v3 program takes with no other program on its SM, and with 2 / 4 / 8 per SM (round 18, for the
design of a fused kernel's intra partition): varlen calls of 132 x M one-chunk sequences (64 tokens) with one head,
so the intra grid is 132 x M programs of one chunk each; per-kernel times by bench_gdn's profiler breakdown.

    python scripts/gdn_intra_latency.py
"""

from atrex_nvidia.chunk_gdn.sm90 import bench_gdn as bg


def main():
    for m in (1, 2, 4, 8):
        x = bg.make((f"lat{m}", [64] * (132 * m), 1, 1))
        rows = bg.kernel_breakdown(x)
        row = "; ".join(f"{name.replace('atrex_sm90_gdn_', '')} {r['ms_per_fwd'] * 1000:.1f} us"
                        for name, r in sorted(rows.items()))
        print(f"LAT programs/SM {m}: {row}", flush=True)


if __name__ == "__main__":
    main()
