# Round 7, call 2: which launch faults at T=1, and whether it follows Triton's T=1 specialisation.
# 8 processes each of gdn_fault_diag.py plain / sync / nospec at once, 40 reps; then the target tests once more.
set -uo pipefail
FINAL="${OUT:-/tmp/atrex-out}"; OUT="$FINAL/logs"; mkdir -p "$OUT"
export PYTHONPATH="$PWD/packages/core/python:$PWD/packages/nvidia/src:$PWD/packages/ppu/src"
export ATREX_EXTRA_PLUGINS=atrex_nvidia._plugin:plugin ATREX_STRICT_PLUGINS=1 PYTHONUNBUFFERED=1
REPS="${REPS:-40}"
for i in 1 2 3 4 5 6 7 8; do
  for arm in plain sync nospec; do
    timeout 200 python3 scripts/gdn_fault_diag.py $arm "$REPS" > "$OUT/diag_${arm}_$i.log" 2>&1 &
  done
done
wait
for arm in plain sync nospec; do
  echo "$arm: $(grep -l 'reps clean' "$OUT"/diag_${arm}_*.log | wc -l) clean, $(grep -l FAULT "$OUT"/diag_${arm}_*.log | wc -l) faulted, $(grep -l WRONG "$OUT"/diag_${arm}_*.log | wc -l) wrong"
done
grep -h -A12 "FAULT" "$OUT"/diag_sync_*.log | cut -c1-200 | head -60
grep -h "FAULT" "$OUT"/diag_plain_*.log "$OUT"/diag_nospec_*.log | cut -c1-160
timeout 120 python3 -m pytest op_test/nvidia/chunk_gdn/test_chunk_gdn_sm90.py -v -p no:cacheprovider -n 8 > "$OUT/tests.log" 2>&1
echo "tests: rc $? $(tail -n 1 "$OUT/tests.log")"; grep -m 3 -E "^\[gw[0-9]+\] .*(FAILED|ERROR)" "$OUT/tests.log" | cut -c1-160
tar czf "$FINAL/r8.tgz" -C "$OUT" . && rm -rf "$OUT"
