# Round 32, call r117 (any sm90 card): gl_ws alone under Nsight Compute (durations, SpeedOfLight section), T=32768 and
# T=8192 at H = 16, HV = 32: the default (GL_WS_OUT2, 136 registers per output partition) against GL_WS_OUT2=False.
#   (carry [".gpuhost/tcache.tgz"]) bash scripts/gdn-r117.sh
. scripts/gdn-call.sh
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee "$OUT/smi.txt"
ws_duration() {  # NAME CASE [HOOK=VALUE]: one gl_ws launch of CASE
  local name=$1 case=$2; shift 2
  timeout 100 ncu --clock-control none --kernel-name regex:atrex_sm90_gdn_state --launch-skip 1 --launch-count 1 \
    --section SpeedOfLight python3 scripts/gdn_ncu.py "$case" "$@" > "$OUT/ncu_$name.log" 2>&1
  echo "$name: ncu rc $? $(grep -E 'Duration' "$OUT/ncu_$name.log" | tr -s ' ')"
}
for c in T32768_H16_HV32 T8192_H16_HV32; do
  ws_duration "${c}_out2" "$c"
  ws_duration "${c}_out1" "$c" GL_WS_OUT2=False
done
