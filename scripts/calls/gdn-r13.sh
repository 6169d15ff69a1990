# Round 7, call 7: Nsight Compute of the Gluon state kernel against tma at T=8192/16/32 (why gl is slower).
set -uo pipefail
OUT="${OUT:-/tmp/atrex-out}"; mkdir -p "$OUT"
export PYTHONPATH="$PWD/packages/core/python:$PWD/packages/nvidia/src:$PWD/packages/ppu/src"
export ATREX_EXTRA_PLUGINS=atrex_nvidia._plugin:plugin ATREX_STRICT_PLUGINS=1 PYTHONUNBUFFERED=1
for impl in gl tma; do
  timeout 60 ncu --clock-control none --kernel-name regex:atrex_sm90_gdn_state --launch-skip 1 --launch-count 1 \
    --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section Occupancy --section MemoryWorkloadAnalysis \
    python3 scripts/gdn_ncu.py T8192_H16_HV32 STATE_IMPL=$impl > "$OUT/ncu_$impl.txt" 2>&1
  echo "== $impl"; grep -E "Duration|Issue Slots Busy|Issued Ipc|No Eligible|Stall|Warp Cycles Per Issued|Achieved Occupancy|Memory Throughput" "$OUT/ncu_$impl.txt" | head -14 | cut -c1-130
done
