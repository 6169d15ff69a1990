# Round 9 (H200), call 7, at the session's last commit (gl / gl_tma removed): the Gluon and fp16 target cases, then
# `atrex bench run chunk_gdn --size perf --match T8192-H16` eager and --graph (fla-core 0.6 in the same runs).
# Needs the fla bundle: bash .gpuhost/g/install.sh first.   ATREX_BENCH_COMMIT=<sha> bash scripts/calls/gdn-r21.sh
set -uo pipefail
OUT="${OUT:-/tmp/atrex-out}"; mkdir -p "$OUT"
export PYTHONPATH="$PWD/packages/core/python:$PWD/packages/nvidia/src:$PWD/packages/ppu/src"
export ATREX_EXTRA_PLUGINS=atrex_nvidia._plugin:plugin ATREX_STRICT_PLUGINS=1 PYTHONUNBUFFERED=1
timeout 60 python3 -m pytest op_test/nvidia/chunk_gdn/test_chunk_gdn_sm90.py -q -p no:cacheprovider -n 8 \
  -k "gl_ws or gluon or fp16 or newton" > "$OUT/tests.log" 2>&1; echo "tests: rc $? $(tail -n 1 "$OUT/tests.log")"
for mode in eager graph; do
  flag=""; [ $mode = graph ] && flag="--graph"
  timeout 60 python3 -m atrex bench run chunk_gdn --size perf --match T8192-H16 $flag --out "$OUT/$mode" \
    --history "$OUT/history.jsonl" --no-progress > "$OUT/bench_$mode.log" 2>&1; echo "bench $mode exit $?"
  grep -h "^| perf" "$OUT/$mode"/bench_*.md | cut -c1-120
done
