# Round 7, call 6: the Gluon state kernel (STATE_IMPL "gl") on the H200: its target cases, then a bench_gdn sweep
# (default, v2, gl) on T=8192/16/32 and varlen 16x1024 (no fla).
set -uo pipefail
FINAL="${OUT:-/tmp/atrex-out}"; OUT="$FINAL/logs"; mkdir -p "$OUT"
export PYTHONPATH="$PWD/packages/core/python:$PWD/packages/nvidia/src:$PWD/packages/ppu/src"
export ATREX_EXTRA_PLUGINS=atrex_nvidia._plugin:plugin ATREX_STRICT_PLUGINS=1 PYTHONUNBUFFERED=1
timeout 90 python3 -m pytest op_test/nvidia/chunk_gdn/test_chunk_gdn_sm90.py -v -p no:cacheprovider -n 8 -k "gluon" \
  > "$OUT/tests.log" 2>&1
echo "tests: rc $? $(tail -n 1 "$OUT/tests.log")"; grep -E "(FAILED|ERROR|PASSED)" "$OUT/tests.log" | grep "^\[gw" | sed 's/.*:://' | head -20
grep -m 4 -E "^E  " "$OUT/tests.log" | cut -c1-200
timeout 140 python3 -m atrex_nvidia.chunk_gdn.sm90.bench_gdn --out "$OUT/gdnv" --sweep --ref-heads "" --deadline 110 \
  --cases T8192_H16_HV32,varlen16x1024_H32_HV32 \
  --sweep-cases T8192_H16_HV32,varlen16x1024_H32_HV32 --variants default,v2,gl > "$OUT/sweep.log" 2>&1
echo "sweep exit $?"; grep "^| [Tv]" "$OUT/gdnv/gdn_bench.md" | tail -n 12 | cut -c1-200; tail -n 3 "$OUT/sweep.log" | cut -c1-300
tar czf "$FINAL/r12.tgz" -C "$OUT" . && rm -rf "$OUT"
