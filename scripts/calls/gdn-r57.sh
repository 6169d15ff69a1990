# Round 16, call r57: fp16 inputs on the fast path (launch._use_fast takes fp16 with K, V multiples of 16).
#   1. the target file's fp16 cases (contract cases, the Gluon state kernels gl_ws / gl_rc with fp16 operands),
#   2. `atrex verify chunk_gdn --size small` (no bf16 kernel changed; the gates and probes as a check),
#   3. bench_gdn sweep: fp16 at T=8192/16/32 and varlen 16x1024, default against "slow_path" (the round-1 pair that
#      fp16 took until now), bf16 T=8192 beside them, fla-core 0.6 in the same process (fp16 and bf16),
#   4. `atrex bench run chunk_gdn --size perf --graph` (now with perf/T8192-H16-HV32-fp16; history records).
#   bash .gpuhost/g/install.sh; ATREX_BENCH_COMMIT=<sha> bash scripts/calls/gdn-r57.sh
. scripts/gdn-call.sh
gdn_target_tests 150 "fp16"
gdn_verify 60
GDN_CASES=T8192_H16_HV32,T8192_H16_HV32_fp16,varlen16x1024_H32_HV32_fp16 gdn_sweep 130 default,slow_path
gdn_graph_bench 280
gdn_archive r57
