# Round 24, call r80: the H200 record of the current default (INTRA_V3_DIAG16 and FAST_LAUNCH on), the first on an
# H200 since round 18 (r79 ran on an H100):
#   1. round 23's FAST_LAUNCH GPU test and round 22's two DIAG16 checks, on this card;
#   2. the graph bench (`atrex bench run chunk_gdn --size perf --graph`), one case per process, fla-core 0.6 in the
#      same process, goal cases first, varlen with more time than r79 left it (55 s: timed out).
#   (carry [".gpuhost/g", ".gpuhost/tcache.tgz"])
#   bash .gpuhost/g/install.sh; ATREX_BENCH_COMMIT=<sha> R80_CAP=540 bash scripts/gdn-r80.sh
. scripts/gdn-call.sh
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,memory.total --format=csv > "$OUT/smi.txt"; tail -1 "$OUT/smi.txt"
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
gdn_target_tests 80 "intra_diag16 or default_inverse_form or fast_launch"
FL=True; grep -q "fast_launch.*FAILED\|FAILED.*fast_launch" "$OUT/tests.log" && FL=False && echo "FAST_LAUNCH off for the bench"
export FL; bench_case() {  # bench_case TIMEOUT MATCH (cut to what is left before $R80_CAP s into the call)
  local cap=${R80_CAP:-540} t; t=$(( $1 < cap - SECONDS ? $1 : cap - SECONDS )); [ "$t" -ge 30 ] || { echo "bench $2 skipped"; return; }
  timeout "$t" python3 -c "import sys, runpy; import atrex_nvidia.chunk_gdn.sm90.launch as L; L.FAST_LAUNCH = $FL
sys.argv = ['atrex'] + sys.argv[1:]; runpy.run_module('atrex', run_name='__main__')" \
    bench run chunk_gdn --size perf --match "$2" --graph --out "$OUT/graph/$2" --history "$OUT/history.jsonl" \
    --no-progress >> "$OUT/bench_graph.log" 2>&1
  echo "bench $2 exit $? at ${SECONDS}s"
}
bench_case 130 T8192-H16-HV32; bench_case 110 T32768; bench_case 150 varlen; bench_case 60 T4096; bench_case 60 T8192-H32
grep -h "^| perf" "$OUT"/graph/*/bench_*.md | cut -c1-160
gdn_archive r80
