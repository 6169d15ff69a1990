# Round 23, call r79 (r78 never ran: round 22's budget was spent): on the H200 if one starts,
#   1. the graph bench (`atrex bench run chunk_gdn --size perf --graph`, fla-core 0.6 in the same run, records in
#      $OUT/history.jsonl) with the new default INTRA_V3_DIAG16 = True: the record r77 owed;
#   2. the two GPU checks of round 22 that never ran on a GPU: test_intra_diag16 (its third, shipped-default call)
#      and test_default_inverse_form_is_diag16_at_the_goal_shapes;
#   3. host time per eager call (scripts/gdn_host_overhead.py: launcher and public API, T=64 and 4096, cProfile);
#   4. a bench_gdn sweep of default / i3_merges on the three goal cases, in the same process as fla.
#   (carry [".gpuhost/g", ".gpuhost/tcache.tgz"]; the cache: scripts/gdn_host_cache.py --variants default,i3_merges
#    --cases <the six perf cases>)
#   bash .gpuhost/g/install.sh; ATREX_BENCH_COMMIT=<sha> bash scripts/gdn-r79.sh
. scripts/gdn-call.sh
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,memory.total --format=csv > "$OUT/smi.txt"; tail -1 "$OUT/smi.txt"
timeout 270 python3 -m atrex bench run chunk_gdn --size perf --graph --out "$OUT/graph" --history "$OUT/history.jsonl" \
  > "$OUT/bench_graph.log" 2>&1
echo "bench graph exit $?"; grep -h "^| perf" "$OUT"/graph/bench_*.md | cut -c1-160; tail -c 300 "$OUT/bench_graph.log"
timeout 80 python3 scripts/gdn_host_overhead.py > "$OUT/host_overhead.log" 2>&1
echo "host overhead exit $?"; grep "us/call" "$OUT/host_overhead.log"
gdn_target_tests 90 "intra_diag16 or default_inverse_form"
gdn_sweep 130 default,i3_merges
gdn_archive r79
