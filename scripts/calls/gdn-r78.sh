# Round 22, call r78 (after r77; written without a device: the session's budget was spent): the record r77 owed for
# the new default (INTRA_V3_DIAG16 = True, round 22) and the default against the whole-tile merges on the H200:
#   1. the graph bench alone first (`atrex bench run chunk_gdn --size perf --graph`, fla-core 0.6 in the same run,
#      records in $OUT/history.jsonl), with its progress in the log and 300 s: in r77 it printed nothing in 150 s;
#   2. a bench_gdn sweep of default / i3_merges on the three goal cases, in the same process as fla.
# Budget: ~520 s of the 600 s a call may run.
#   (carry [".gpuhost/g", ".gpuhost/tcache.tgz"])
#   bash .gpuhost/g/install.sh; ATREX_BENCH_COMMIT=<sha> bash scripts/calls/gdn-r78.sh
. scripts/gdn-call.sh
timeout 300 python3 -m atrex bench run chunk_gdn --size perf --graph --out "$OUT/graph" --history "$OUT/history.jsonl" \
  > "$OUT/bench_graph.log" 2>&1
echo "bench graph exit $?"; grep -h "^| perf" "$OUT"/graph/bench_*.md | cut -c1-140; tail -c 600 "$OUT/bench_graph.log"
gdn_sweep 200 default,i3_merges
gdn_archive r78
