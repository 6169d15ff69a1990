#!/usr/bin/env bash
# One session on the offline GPU host, after the wheel bundles are installed: environment, target tests,
# `atrex verify` and `atrex bench` of the operators named, each step's log under $OUT, a short summary last.
#
#   ATREX_BENCH_COMMIT=<sha> OPS="flash_attn chunk_gdn" bash scripts/gpu-session.sh
#
# STEPS (default "env tests verify bench") picks the steps, OPS (default "flash_attn chunk_gdn") the operators,
# BENCH_ARGS (default "--size perf") is passed to `atrex bench run`, e.g. BENCH_ARGS="--size perf --graph --match varlen".
set -uo pipefail
OUT="${OUT:-/tmp/atrex-out}"
mkdir -p "$OUT"
export PYTHONPATH="$PWD/packages/core/python:$PWD/packages/nvidia/src:$PWD/packages/ppu/src:${PYTHONPATH:-}"
export ATREX_EXTRA_PLUGINS="${ATREX_EXTRA_PLUGINS:-atrex_nvidia._plugin:plugin}" ATREX_STRICT_PLUGINS=1 PYTHONUNBUFFERED=1
# the target tests' Triton cache (op_test/conftest.py): a temporary folder that later sessions on this host reuse
export ATREX_TEST_TRITON_CACHE="${ATREX_TEST_TRITON_CACHE:-${TMPDIR:-/tmp}/atrex-test-triton-cache}"
STEPS="${STEPS:-env tests verify bench}"
OPS="${OPS:-flash_attn chunk_gdn}"
hist="$OUT/history.jsonl"
for s in $STEPS; do
  for op in $OPS; do
    case "$s" in
      env) python3 -m atrex env > "$OUT/env.log" 2>&1; echo "env: exit $?"; break ;;
      tests) timeout "${TEST_TIMEOUT:-300}" python3 -m pytest "op_test/nvidia/$op" -q -p no:cacheprovider \
               > "$OUT/tests_$op.log" 2>&1
             echo "tests $op: $(tail -n 1 "$OUT/tests_$op.log")" ;;
      verify) timeout "${VERIFY_TIMEOUT:-200}" python3 -m atrex verify "$op" --size small > "$OUT/verify_$op.log" 2>&1
              echo "verify $op: $(tail -n 1 "$OUT/verify_$op.log")"; grep -h FAIL "$OUT/verify_$op.log" | head -5 ;;
      bench) timeout "${BENCH_TIMEOUT:-300}" python3 -m atrex bench run "$op" ${BENCH_ARGS:---size perf} --out "$OUT" \
               --history "$hist" --no-progress > "$OUT/bench_$op.log" 2>&1
             echo "bench $op: exit $?" ;;
      host) timeout 120 python3 scripts/host_dispatch_bench.py > "$OUT/host_dispatch.log" 2>&1
            tail -n 8 "$OUT/host_dispatch.log"; break ;;
      *) echo "unknown step $s"; break ;;
    esac
  done
done
grep -h "^|" "$OUT"/bench_*.md 2>/dev/null | cut -c1-160
