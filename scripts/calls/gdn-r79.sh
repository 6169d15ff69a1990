# Round 23, call r79 (r78 never ran: round 22's budget was spent): on the H200 if one starts,
#   1. the graph bench (`atrex bench run chunk_gdn --size perf --graph`, one case per process, fla-core 0.6 in the
#      same run, records in $OUT/history.jsonl) with the new default INTRA_V3_DIAG16 = True: the record r77 owed;
#   2. the two GPU checks of round 22 that never ran on a GPU, test_intra_diag16 (its third, shipped-default call)
#      and test_default_inverse_form_is_diag16_at_the_goal_shapes, and round 23's FAST_LAUNCH test
#      (test_fast_launch_replays_the_triton_launches);
#   3. host time per eager call (scripts/gdn_host_overhead.py: launcher and public API, T=64, 4096 and a varlen
#      T=1024, with FAST_LAUNCH and without, interleaved; cProfile);
#   (carry [".gpuhost/g", ".gpuhost/tcache.tgz"]; the cache: scripts/gdn_host_cache.py --variants default,i3_merges
#    --cases <the six perf cases>)
#   bash .gpuhost/g/install.sh; ATREX_BENCH_COMMIT=<sha> bash scripts/calls/gdn-r79.sh
. scripts/gdn-call.sh
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,memory.total --format=csv > "$OUT/smi.txt"; tail -1 "$OUT/smi.txt"
gdn_target_tests 100 "intra_diag16 or default_inverse_form or fast_launch"
timeout 80 python3 scripts/gdn_host_overhead.py > "$OUT/host_overhead.log" 2>&1
echo "host overhead exit $?"; grep "us/call\|^--" "$OUT/host_overhead.log"
# the graph bench with FAST_LAUNCH off if its test failed (a replay through wrong arguments would spoil the record)
FL=True; grep -q "fast_launch.*FAILED\|FAILED.*fast_launch" "$OUT/tests.log" && FL=False && echo "FAST_LAUNCH off for the bench"
# the graph bench one case per process, goal cases first, so that a timeout keeps the cases already done (r77's single
# run printed nothing in 150 s); each appends to $OUT/history.jsonl and writes its table under $OUT/graph/<case>/
export FL; bench_case() {  # bench_case TIMEOUT MATCH (cut to what is left before $R79_CAP s, default 490, into the call)
  local cap=${R79_CAP:-490} t; t=$(( $1 < cap - SECONDS ? $1 : cap - SECONDS )); [ "$t" -ge 30 ] || { echo "bench $2 skipped"; return; }
  timeout "$t" python3 -c "import sys, runpy; import atrex_nvidia.chunk_gdn.sm90.launch as L; L.FAST_LAUNCH = $FL
sys.argv = ['atrex'] + sys.argv[1:]; runpy.run_module('atrex', run_name='__main__')" \
    bench run chunk_gdn --size perf --match "$2" --graph --out "$OUT/graph/$2" --history "$OUT/history.jsonl" \
    --no-progress >> "$OUT/bench_graph.log" 2>&1
  echo "bench $2 exit $? at ${SECONDS}s"
}
bench_case 150 T8192-H16-HV32; bench_case 120 T32768; bench_case 100 varlen; bench_case 70 T4096; bench_case 60 T8192-H32
grep -h "^| perf" "$OUT"/graph/*/bench_*.md | cut -c1-160; tail -c 300 "$OUT/bench_graph.log"
gdn_archive r79
