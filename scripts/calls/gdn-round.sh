#!/usr/bin/env bash
# One H200 call for the SM90 GDN kernel: fla baseline wheels (.whl_gdn), a memcheck of the small
# cases in each launch mode, the target tests, then the benchmark (+ sweep). Logs under $OUT.
set -uo pipefail
OUT="${OUT:-/tmp/atrex-out}"; mkdir -p "$OUT"
export PYTHONPATH="$PWD/packages/core/python:$PWD/packages/nvidia/src:$PWD/packages/ppu/src"
export ATREX_EXTRA_PLUGINS=atrex_nvidia._plugin:plugin PYTHONUNBUFFERED=1
pip install --no-deps --no-index -q .whl_gdn/*.whl > "$OUT/pip.log" 2>&1 || pip install --no-deps --no-index --target /tmp/fla-site .whl_gdn/*.whl >> "$OUT/pip.log" 2>&1
export PYTHONPATH="$PYTHONPATH:/tmp/fla-site"
for m in ${GDN_MODES:-"fast" "slow" "fast wy"}; do
  timeout 90 compute-sanitizer --tool memcheck --print-limit 5 python3 scripts/gdn_debug.py K60_V100_fp16 $m > "$OUT/sanitize_${m// /_}.log" 2>&1
  echo "sanitize $m: exit $? $(grep -E 'PASS|FAIL|ERROR SUMMARY|Invalid' "$OUT/sanitize_${m// /_}.log" | head -3 | tr '\n' ' ')"
done
timeout 200 python3 -m pytest op_test/nvidia/chunk_gdn -q -p no:cacheprovider > "$OUT/gdn_tests.log" 2>&1
echo "gdn tests: exit $?"; tail -n 15 "$OUT/gdn_tests.log" | grep -E "passed|failed|FAILED|Error" | head -20
timeout ${BENCH_S:-240} python3 -m atrex_nvidia.chunk_gdn.sm90.bench_gdn --out "$OUT" ${BENCH_ARGS:---sweep --deadline 200} > "$OUT/gdn_bench.log" 2>&1
echo "gdn bench: exit $?"
grep "^|" "$OUT/gdn_bench.md" | cut -c1-160
