# Round 9 (H200), call 4: the new defaults (state "auto" -> gl_ws for few programs, intra v3 fp16 merges): the whole
# sm90 target file, `atrex verify chunk_gdn`, then `atrex bench run chunk_gdn --size perf` with fla-core 0.6 in the
# same run (history). Needs the fla bundle: bash .gpuhost/g/install.sh first.   ATREX_BENCH_COMMIT=<sha> bash scripts/calls/gdn-r18.sh
set -uo pipefail
OUT="${OUT:-/tmp/atrex-out}"; mkdir -p "$OUT"
export PYTHONPATH="$PWD/packages/core/python:$PWD/packages/nvidia/src:$PWD/packages/ppu/src"
export ATREX_EXTRA_PLUGINS=atrex_nvidia._plugin:plugin ATREX_STRICT_PLUGINS=1 PYTHONUNBUFFERED=1
timeout 170 python3 -m pytest op_test/nvidia/chunk_gdn/test_chunk_gdn_sm90.py -v -p no:cacheprovider -n 8 > "$OUT/tests.log" 2>&1
echo "tests: rc $? $(tail -n 1 "$OUT/tests.log")"; grep -E "^\[gw.*(FAILED|ERROR)" "$OUT/tests.log" | sed 's/.*:://' | head -8
grep -m 4 -E "^E  " "$OUT/tests.log" | cut -c1-200
timeout 120 python3 -m atrex verify chunk_gdn --size small > "$OUT/verify_chunk_gdn.log" 2>&1; echo "verify exit $?"
tail -n 2 "$OUT/verify_chunk_gdn.log" | cut -c1-200; grep -h FAIL "$OUT/verify_chunk_gdn.log" | head -4 | cut -c1-200
timeout 280 python3 -m atrex bench run chunk_gdn --size perf --out "$OUT" --history "$OUT/history.jsonl" --no-progress \
  > "$OUT/chunk_gdn_bench.log" 2>&1; echo "bench exit $?"
tar czf "$OUT/r18.tgz" -C "$OUT" --exclude r18.tgz . 2>/dev/null
grep -h "^|" "$OUT"/bench_*.md | cut -c1-170
