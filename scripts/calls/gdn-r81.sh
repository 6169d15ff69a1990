# Round 24, call r81: GL_RC_QSIDE (the q side of the intra work in gl_rc's output partition), first GPU run:
#   1. its GPU cases: test_rc_qside (7 cases: against the call without it and against float64) and the variant cases
#      with it (test_cases_variants[...state_gluon_rc_qside], 7 cases);
#   2. bench_gdn's sweep of default and rc_qside on varlen 16x1024 (H = HV = 32; fla-core 0.6 in the process):
#      profiler kernel times of the intra and state kernels;
#   3. if its cases passed: the graph bench (`atrex bench run chunk_gdn --size perf --graph`) of varlen 16x1024
#      with GL_RC_QSIDE on, fla in the same process.
#   (carry [".gpuhost/g", ".gpuhost/tcache.tgz"])
#   bash .gpuhost/g/install.sh; ATREX_BENCH_COMMIT=<sha> R81_CAP=420 bash scripts/calls/gdn-r81.sh
. scripts/gdn-call.sh
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,memory.total --format=csv > "$OUT/smi.txt"; tail -1 "$OUT/smi.txt"
gdn_target_tests 130 "rc_qside"
QS_OK=True; grep -q "FAILED\|ERROR" "$OUT/tests.log" && QS_OK=False
grep -q " passed" "$OUT/tests.log" || QS_OK=False
echo "qside cases ok: $QS_OK"
GDN_CASES=varlen16x1024_H32_HV32 gdn_sweep 110 default,rc_qside
t=$(( ${R81_CAP:-420} - SECONDS ))
if [ "$QS_OK" = True ] && [ "$t" -ge 40 ]; then
  timeout "$t" python3 -c "import sys, runpy; import atrex_nvidia.chunk_gdn.sm90.launch as L; L.GL_RC_QSIDE = True
sys.argv = ['atrex'] + sys.argv[1:]; runpy.run_module('atrex', run_name='__main__')" \
    bench run chunk_gdn --size perf --match varlen --graph --out "$OUT/graph/varlen_qside" \
    --history "$OUT/history.jsonl" --no-progress >> "$OUT/bench_graph.log" 2>&1
  echo "bench varlen (GL_RC_QSIDE) exit $? at ${SECONDS}s"
  grep -h "^| perf" "$OUT"/graph/*/bench_*.md | cut -c1-160
else
  echo "graph bench skipped (cases ok: $QS_OK, ${t}s left)"
fi
gdn_archive r81
