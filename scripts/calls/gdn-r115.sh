# Round 32, call r115 (any sm90 card): GL_WS_OUT2 on by default (136 registers per output partition), ~540 s.
#   1. the whole sm90 target file at the new default (cap 230 s into the call);
#   2. bench_gdn sweep by graph replay, ATREX alone, T=32768/16/32 and T=8192/16/32: ws_out1 (round 31's gl_ws),
#      the default, and the output partitions at 152, 128 and 120 registers;
#   3. the graph benches with fla-core 0.6 in the same run, T=32768 then T=8192 (history records of <sha>).
#   (carry [".gpuhost/g", ".gpuhost/tcache.tgz"]) bash .gpuhost/g/install.sh; ATREX_BENCH_COMMIT=<sha> bash scripts/calls/gdn-r115.sh
. scripts/gdn-call.sh
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee "$OUT/smi.txt"
GDN_TEST_WORKERS=14 gdn_target_tests 220
GDN_CASES=T32768_H16_HV32,T8192_H16_HV32 GDN_SWEEP_ARGS="--no-fla --graph" gdn_sweep 110 \
  ws_out1,default,ws_out2_o152,ws_out2_o128,ws_out2_o120
gdn_archive r115
gdn_bench_cases 540 120 r115 T32768 T8192-H16-HV32
