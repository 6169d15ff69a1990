# Prepared in round 7 for the next H200 session (not yet run): the TMA-fed Gluon state kernel (STATE_IMPL "gl_tma").
# 1) its target cases and the gl ones; 2) bench_gdn sweep default / tma / gl_tma / gl_tma_s2 on T=8192/16/32 and
# varlen 16x1024 (no fla); 3) ncu of gl_tma against tma at T=8192.
set -uo pipefail
OUT="${OUT:-/tmp/atrex-out}"; mkdir -p "$OUT"
export PYTHONPATH="$PWD/packages/core/python:$PWD/packages/nvidia/src:$PWD/packages/ppu/src"
export ATREX_EXTRA_PLUGINS=atrex_nvidia._plugin:plugin ATREX_STRICT_PLUGINS=1 PYTHONUNBUFFERED=1
timeout 100 python3 -m pytest op_test/nvidia/chunk_gdn/test_chunk_gdn_sm90.py -v -p no:cacheprovider -n 8 -k "gluon" \
  > "$OUT/tests.log" 2>&1
echo "tests: rc $? $(tail -n 1 "$OUT/tests.log")"; grep -E "^\[gw.*FAILED" "$OUT/tests.log" | sed 's/.*:://' | head
grep -m 4 -E "^E  " "$OUT/tests.log" | cut -c1-200
timeout 150 python3 -m atrex_nvidia.chunk_gdn.sm90.bench_gdn --out "$OUT/gdnv" --sweep --ref-heads "" --deadline 120 \
  --cases T8192_H16_HV32,varlen16x1024_H32_HV32 --sweep-cases T8192_H16_HV32,varlen16x1024_H32_HV32 \
  --variants default,gl_tma,gl_tma_s2 > "$OUT/sweep.log" 2>&1
echo "sweep exit $?"; grep "^| [Tv]" "$OUT/gdnv/gdn_bench.md" | tail -n 6 | cut -c1-200
timeout 60 ncu --clock-control none --kernel-name regex:atrex_sm90_gdn_state --launch-skip 1 --launch-count 1 \
  --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section Occupancy \
  python3 scripts/gdn_ncu.py T8192_H16_HV32 STATE_IMPL=gl_tma > "$OUT/ncu_gl_tma.txt" 2>&1
grep -E "Duration|Issued Warp Per Scheduler|Warp Cycles Per Issued" "$OUT/ncu_gl_tma.txt" | head -4
