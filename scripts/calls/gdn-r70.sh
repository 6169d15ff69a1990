# (Ran at commit 506b9d5 with an earlier form of scripts/gdn_intra_latency.py: per-kernel medians of 20 calls.)
# Round 18, call r70: the intra v3 program's latency alone on its SM and with 2 / 4 / 8 per SM (scripts/gdn_intra_latency.py),
# the budget a fused kernel's intra partition has to beat.
. scripts/gdn-call.sh
timeout 200 python3 scripts/gdn_intra_latency.py > "$OUT/latency.log" 2>&1; echo "exit $?"
grep LAT "$OUT/latency.log" | cut -c1-300; tail -n 3 "$OUT/latency.log" | grep -v LAT | cut -c1-200 || true  # (no other line: not a failure)
