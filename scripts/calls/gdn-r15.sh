# Round 9 (H200): the warp-specialised Gluon state kernel (STATE_IMPL "gl_ws").
# 1) smoke: one small and the T=8192 case under a hang guard; 2) its target cases; 3) bench_gdn sweep default / gl_ws
# variants on T=8192/16/32 and varlen 16x1024 (no fla); 4) ncu of one gl_ws launch at T=8192.
set -uo pipefail
OUT="${OUT:-/tmp/atrex-out}"; mkdir -p "$OUT"
export PYTHONPATH="$PWD/packages/core/python:$PWD/packages/nvidia/src:$PWD/packages/ppu/src:$PWD/op_test/nvidia/chunk_gdn:$PWD/op_test"
export ATREX_EXTRA_PLUGINS=atrex_nvidia._plugin:plugin ATREX_STRICT_PLUGINS=1 PYTHONUNBUFFERED=1
timeout 90 python3 scripts/gdn_ws_smoke.py > "$OUT/smoke.log" 2>&1; rc=$?
echo "smoke: rc $rc"; tail -n 6 "$OUT/smoke.log" | cut -c1-220
if [ $rc -eq 0 ]; then
  timeout 170 python3 -m pytest op_test/nvidia/chunk_gdn/test_chunk_gdn_sm90.py -v -p no:cacheprovider -n 8 \
    -k "gluon_ws or gl_ws" > "$OUT/tests.log" 2>&1
  echo "tests: rc $? $(tail -n 1 "$OUT/tests.log")"; grep -E "^\[gw.*FAILED" "$OUT/tests.log" | sed 's/.*:://' | head
  grep -m 4 -E "^E  " "$OUT/tests.log" | cut -c1-200
  timeout 150 python3 -m atrex_nvidia.chunk_gdn.sm90.bench_gdn --out "$OUT/gdnv" --sweep --ref-heads "" --deadline 130 \
    --cases T8192_H16_HV32,varlen16x1024_H32_HV32 --sweep-cases T8192_H16_HV32,varlen16x1024_H32_HV32 \
    --variants default,gl_ws,gl_ws_s2,gl_ws_o96 > "$OUT/sweep.log" 2>&1
  echo "sweep exit $?"; grep "^| [Tv]" "$OUT/gdnv/gdn_bench.md" | tail -n 8 | cut -c1-200
  timeout 60 ncu --clock-control none --kernel-name regex:atrex_sm90_gdn_state --launch-skip 1 --launch-count 1 \
    --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section Occupancy \
    python3 scripts/gdn_ncu.py T8192_H16_HV32 STATE_IMPL=gl_ws > "$OUT/ncu_gl_ws.txt" 2>&1
  grep -E "Duration|Issued Warp Per Scheduler|Warp Cycles Per Issued" "$OUT/ncu_gl_ws.txt" | head -4
fi
tar czf "$OUT/r15.tgz" -C "$OUT" --exclude r15.tgz . 2>/dev/null; ls "$OUT"
