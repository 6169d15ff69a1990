#!/usr/bin/env bash
# One session on the offline GPU host, after the wheel bundles are installed: environment, target tests,
# `atrex verify` and `atrex bench` of the operators named, each step's log under $OUT, a short summary last.
#
#   ATREX_BENCH_COMMIT=<sha> OPS="flash_attn chunk_gdn" bash scripts/gpu-session.sh
#
# STEPS (default "env tests verify bench") picks the steps (also: sanitizer, host), OPS (default "flash_attn chunk_gdn
# gdn_decode") the operators, BENCH_ARGS (default "--size perf") is passed to `atrex bench run`, e.g.
# BENCH_ARGS="--size perf --graph --match varlen". The device returns at most eight files: at the end everything
# under $OUT but history.jsonl is packed into results.tgz.
set -uo pipefail
OUT="${OUT:-/tmp/atrex-out}"
mkdir -p "$OUT"
export PYTHONPATH="$PWD/packages/core/python:$PWD/packages/nvidia/src:$PWD/packages/ppu/src:${PYTHONPATH:-}"
export ATREX_EXTRA_PLUGINS="${ATREX_EXTRA_PLUGINS:-atrex_nvidia._plugin:plugin}" ATREX_STRICT_PLUGINS=1 PYTHONUNBUFFERED=1
# the target tests' Triton cache (op_test/conftest.py): a temporary folder that later sessions on this host reuse
export ATREX_TEST_TRITON_CACHE="${ATREX_TEST_TRITON_CACHE:-${TMPDIR:-/tmp}/atrex-test-triton-cache}"
STEPS="${STEPS:-env tests verify bench}"
OPS="${OPS:-flash_attn chunk_gdn gdn_decode}"
hist="$OUT/history.jsonl"
for s in $STEPS; do
  for op in $OPS; do
    case "$s" in
      env) python3 -m atrex env > "$OUT/env.log" 2>&1; echo "env: exit $?"; break ;;
      # SIGINT at the limit: pytest stops cleanly and still writes its summary and junit file
      tests) timeout -s INT "${TEST_TIMEOUT:-300}" python3 -m pytest "op_test/nvidia/$op" -q -p no:cacheprovider \
               -n "${TEST_WORKERS:-8}" --junitxml="$OUT/tests_$op.xml" > "$OUT/tests_$op.log" 2>&1
             echo "tests $op: $(tail -n 1 "$OUT/tests_$op.log")"; grep -E "^(FAILED|ERROR)" "$OUT/tests_$op.log" | head ;;
      verify) timeout "${VERIFY_TIMEOUT:-200}" python3 -m atrex verify "$op" --size small > "$OUT/verify_$op.log" 2>&1
              echo "verify $op: $(tail -n 1 "$OUT/verify_$op.log")"; grep -h FAIL "$OUT/verify_$op.log" | head -5 ;;
      # the budget stops cleanly before the timeout; every finished case is already in the history
      bench) timeout $(( ${BENCH_TIMEOUT:-300} + 30 )) python3 -m atrex bench run "$op" ${BENCH_ARGS:---size perf} \
               --out "$OUT/bench_$op" --history "$hist" --budget-s "${BENCH_TIMEOUT:-300}" --no-progress \
               > "$OUT/bench_$op.log" 2>&1
             echo "bench $op: exit $?" ;;
      sanitizer) timeout -s INT 600 python3 -m pytest op_test/nvidia/test_bad_metadata_sm90.py -q -s -p no:cacheprovider \
                   > "$OUT/sanitizer.log" 2>&1
                 echo "bad metadata: $(tail -n 1 "$OUT/sanitizer.log")"; grep -h "ERROR SUMMARY" "$OUT/sanitizer.log"; break ;;
      host) timeout 300 python3 -m atrex bench host --history "$hist" > "$OUT/host.log" 2>&1
            timeout 120 python3 scripts/host_dispatch_bench.py --inference-mode >> "$OUT/host.log" 2>&1
            tail -n 20 "$OUT/host.log"; break ;;
      *) echo "unknown step $s"; break ;;
    esac
  done
done
grep -h "^|" "$OUT"/bench_*/*.md 2>/dev/null | cut -c1-160
(cd "$OUT" && tar czf results.tgz --exclude=results.tgz --exclude=history.jsonl . \
   && find . -mindepth 1 -maxdepth 1 ! -name results.tgz ! -name history.jsonl -exec rm -rf {} +)
