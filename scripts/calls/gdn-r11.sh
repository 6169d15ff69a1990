# Round 7, call 5: state v2 with the stacked [k; q] dot (STATE_KQ_STACK) on the H200.
# 1) its target variant cases (correctness against the float64 recurrence);
# 2) bench_gdn sweep: default, v2, v2_kq, v2_kq_s2 on T=8192/16/32, varlen 16x1024 and T=32768 (no fla).
set -uo pipefail
FINAL="${OUT:-/tmp/atrex-out}"; OUT="$FINAL/logs"; mkdir -p "$OUT"
export PYTHONPATH="$PWD/packages/core/python:$PWD/packages/nvidia/src:$PWD/packages/ppu/src"
export ATREX_EXTRA_PLUGINS=atrex_nvidia._plugin:plugin ATREX_STRICT_PLUGINS=1 PYTHONUNBUFFERED=1
timeout 100 python3 -m pytest op_test/nvidia/chunk_gdn/test_chunk_gdn_sm90.py -v -p no:cacheprovider -n 8 -k "kq or t1_" \
  > "$OUT/tests.log" 2>&1
echo "tests: rc $? $(tail -n 1 "$OUT/tests.log")"; grep -m 3 -E "^\[gw[0-9]+\] .*(FAILED|ERROR)" "$OUT/tests.log" | cut -c1-160
timeout 230 python3 -m atrex_nvidia.chunk_gdn.sm90.bench_gdn --out "$OUT/gdnv" --sweep --ref-heads "" --deadline 200 \
  --cases T8192_H16_HV32 --sweep-cases T8192_H16_HV32,varlen16x1024_H32_HV32,T32768_H16_HV32 \
  --variants default,v2,v2_kq,v2_kq_s2 > "$OUT/sweep.log" 2>&1
echo "sweep exit $?"; grep "^|" "$OUT/gdnv/gdn_bench.md" | tail -n 13 | cut -c1-200
tar czf "$FINAL/r11.tgz" -C "$OUT" . && rm -rf "$OUT"
