# Round 32, call r114 (any sm90 card): GL_WS_OUT2, gl_ws with two output partitions (even and odd chunks).
#   1. its target cases (test_ws_out2_same_bits: bit for bit the one-partition call, 9 cases x with / without the QSIDE
#      output partition) and test_ws_qscale (the default gl_ws form, whose kernel source changed);
#   2. bench_gdn sweep by CUDA-graph replay, ATREX alone, T=32768/16/32 and T=8192/16/32: default against ws_out2,
#      ws_out2_o136 and ws_out2_noqside;
#   3. one gl_ws launch at T=32768 under Nsight Compute (durations), default and GL_WS_OUT2.
#   (carry [".gpuhost/tcache.tgz"]) ATREX_BENCH_COMMIT=<sha> bash scripts/calls/gdn-r114.sh
#   (r114 ran at 6b9534f, where GL_WS_OUT2 was off and took the QSIDE output registers, 152: its variants were named
#   default, ws_out2, ws_out2_o136, ws_out2_noqside; since the default changed they are spelled with today's names, and
#   the Nsight Compute launches set both knobs, so that the script still measures what r114 did)
. scripts/gdn-call.sh
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee "$OUT/smi.txt"
gdn_tests_k 170 "out2 or test_ws_qscale" tests_out2.log
GDN_CASES=T32768_H16_HV32,T8192_H16_HV32 GDN_SWEEP_ARGS="--no-fla --graph" gdn_sweep 200 \
  ws_out1,ws_out2_o152,ws_out2,ws_out2_noqside
gdn_ncu_duration default T32768_H16_HV32 GL_WS_OUT2=False
gdn_ncu_duration out2 T32768_H16_HV32 GL_WS_OUT2=True GL_WS_OUT2_REGS=152
gdn_archive r114
