# Round 33, call r120 (asked for nvidia-h200): on an H200 the goal records (scripts/calls/gdn-r103.sh, ~420 s); on an
# H100 the serving shapes where ATREX is only ~1.5x fla (r119), ATREX alone: bench_gdn's per-kernel breakdown of the
# default call and a graph-replay sweep of the state-pass choices at Qwen3-Next TP 4 (8k tokens, fixed-length and as
# one varlen sequence) and TP 2 (a mixed-length batch).
#   (carry [".gpuhost/g", ".gpuhost/tcache.tgz"]) ATREX_BENCH_COMMIT=<sha> OUT=$OUT bash scripts/calls/gdn-r120.sh
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  bash .gpuhost/g/install.sh > /dev/null 2>&1
  exec bash scripts/calls/gdn-r103.sh
fi
. scripts/gdn-call.sh
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee "$OUT/smi.txt"
GDN_CASES=T8192_H4_HV8,varlen1x8192_H4_HV8,mixed8_H8_HV16 GDN_SWEEP_ARGS="--no-fla --graph" gdn_sweep 300 \
  default,gl_ws,ws_out1,gl_ws_64,state16x4,tma,gl_rc,rc1,rc2,split4,split8
grep -h '"kernels_ms"' "$OUT/sweep.log" | python3 -c "
import json, sys
for ln in sys.stdin:
    r = json.loads(ln); print(r['case'], round(r['atrex_ms'], 4), r.get('kernels_ms'))" | cut -c1-400
gdn_archive r120
