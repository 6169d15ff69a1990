# Round 32, call r112 (any sm90 card): how fast gl_ws's chain steps at T=32768/16/32 when its output partition does
# no work (scripts/diag/gl_ws_output_idle.patch: only the hand-off protocol left; timing only, the output is not
# written), against the same kernel unpatched, one Nsight Compute duration each (SpeedOfLight section only).
#   (carry [".gpuhost/tcache.tgz"]) bash scripts/gdn-r112.sh
#   (r112 ran at 4bc19f8, one output partition; the patch was regenerated for GL_WS_OUT2's loop bounds since, and
#   idles both output partitions of the current default)
. scripts/gdn-call.sh
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee "$OUT/smi.txt"
ws_duration() {  # NAME: one gl_ws launch of T32768_H16_HV32
  timeout 150 ncu --clock-control none --kernel-name regex:atrex_sm90_gdn_state --launch-skip 1 --launch-count 1 \
    --section SpeedOfLight python3 scripts/gdn_ncu.py T32768_H16_HV32 > "$OUT/ncu_$1.log" 2>&1
  echo "$1: ncu rc $? $(grep -E 'Duration' "$OUT/ncu_$1.log" | tr -s ' ')"
}
ws_duration default
ws_duration default_again
git apply scripts/diag/gl_ws_output_idle.patch && ws_duration output_idle
git apply -R scripts/diag/gl_ws_output_idle.patch
