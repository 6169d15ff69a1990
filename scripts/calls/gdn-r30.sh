# Round 11 (H200), call 4, at the session's final kernels: intra v3 with GVA pairs (GS = 2, 232 registers; SASS
# identical to r29's i3_nopair) and the ftz decay exponential; one value head per program without GVA (SASS identical
# to r29's i3_gs1). The whole sm90 target file, then `atrex bench run chunk_gdn --size perf --graph` (fla-core 0.6 in
# the same run; history). Needs the fla bundle: bash .gpuhost/g/install.sh first.
#   ATREX_BENCH_COMMIT=<sha> bash scripts/calls/gdn-r30.sh
set -uo pipefail
OUT="${OUT:-/tmp/atrex-out}"; mkdir -p "$OUT"
export PYTHONPATH="$PWD/packages/core/python:$PWD/packages/nvidia/src:$PWD/packages/ppu/src:${PYTHONPATH:-}"
export ATREX_EXTRA_PLUGINS=atrex_nvidia._plugin:plugin ATREX_STRICT_PLUGINS=1 PYTHONUNBUFFERED=1
timeout 150 python3 -m pytest op_test/nvidia/chunk_gdn/test_chunk_gdn_sm90.py -q -p no:cacheprovider -n 8 > "$OUT/tests.log" 2>&1
echo "tests: rc $? $(tail -n 1 "$OUT/tests.log")"; grep -E "(FAILED|ERROR)" "$OUT/tests.log" | head -8 | cut -c1-200
timeout 290 python3 -m atrex bench run chunk_gdn --size perf --graph --out "$OUT/graph" --history "$OUT/history.jsonl" \
  --no-progress > "$OUT/bench_graph.log" 2>&1; echo "bench graph exit $?"
grep -h "^| perf" "$OUT"/graph/bench_*.md | cut -c1-120
tar czf "$OUT/r30.tgz" -C "$OUT" --exclude r30.tgz . 2>/dev/null
