# Round 32, call r114 (any sm90 card): GL_WS_OUT2, gl_ws with two output partitions (even and odd chunks).
#   1. its target cases (test_ws_out2_same_bits: bit for bit the one-partition call, 9 cases x with / without the QSIDE
#      output partition) and test_ws_qscale (the default gl_ws form, whose kernel source changed);
#   2. bench_gdn sweep by CUDA-graph replay, ATREX alone, T=32768/16/32 and T=8192/16/32: default against ws_out2,
#      ws_out2_o136 and ws_out2_noqside;
#   3. one gl_ws launch at T=32768 under Nsight Compute (durations), default and GL_WS_OUT2.
#   (carry [".gpuhost/tcache.tgz"]) ATREX_BENCH_COMMIT=<sha> bash scripts/gdn-r114.sh
. scripts/gdn-call.sh
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee "$OUT/smi.txt"
gdn_tests_k 170 "out2 or test_ws_qscale" tests_out2.log
GDN_CASES=T32768_H16_HV32,T8192_H16_HV32 GDN_SWEEP_ARGS="--no-fla --graph" gdn_sweep 200 \
  default,ws_out2,ws_out2_o136,ws_out2_noqside
ws_duration() {  # NAME [HOOK=VALUE]: one gl_ws launch of T32768_H16_HV32
  local name=$1; shift
  timeout 120 ncu --clock-control none --kernel-name regex:atrex_sm90_gdn_state --launch-skip 1 --launch-count 1 \
    --section SpeedOfLight python3 scripts/gdn_ncu.py T32768_H16_HV32 "$@" > "$OUT/ncu_$name.log" 2>&1
  echo "$name: ncu rc $? $(grep -E 'Duration' "$OUT/ncu_$name.log" | tr -s ' ')"
}
ws_duration default
ws_duration out2 GL_WS_OUT2=True
gdn_archive r114
