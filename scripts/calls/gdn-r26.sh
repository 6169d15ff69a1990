# Round 10 (H200), call 5, at the session's final kernels: gl_rc back to its r23 form (same SASS under Triton 3.6 as
# commit d2283c0). Its target cases (Gluon cases, rings across items, graph replay, T = 1 shapes, variant cases), then
# `atrex bench run chunk_gdn --size perf --graph` (fla-core 0.6 in the same run; history).
# Needs the fla bundle: bash .gpuhost/g/install.sh first.   ATREX_BENCH_COMMIT=<sha> bash scripts/calls/gdn-r26.sh
set -uo pipefail
OUT="${OUT:-/tmp/atrex-out}"; mkdir -p "$OUT"
export PYTHONPATH="$PWD/packages/core/python:$PWD/packages/nvidia/src:$PWD/packages/ppu/src:${PYTHONPATH:-}"
export ATREX_EXTRA_PLUGINS=atrex_nvidia._plugin:plugin ATREX_STRICT_PLUGINS=1 PYTHONUNBUFFERED=1
timeout 75 python3 -m pytest op_test/nvidia/chunk_gdn/test_chunk_gdn_sm90.py -q -p no:cacheprovider -n 8 \
  -k "gl_rc or rc_rings or T1 or capture" > "$OUT/tests.log" 2>&1; echo "tests: rc $? $(tail -n 1 "$OUT/tests.log")"
timeout 190 python3 -m atrex bench run chunk_gdn --size perf --graph --out "$OUT/graph" --history "$OUT/history.jsonl" \
  --no-progress > "$OUT/bench_graph.log" 2>&1; echo "bench graph exit $?"
grep -h "^| perf" "$OUT"/graph/bench_*.md | cut -c1-120
tar czf "$OUT/r26.tgz" -C "$OUT" --exclude r26.tgz . 2>/dev/null
