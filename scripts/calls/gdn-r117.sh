# Round 33, call r117 (any sm90 card; the H200 goal records first when an H200 comes):
#   on an H200: scripts/calls/gdn-r103.sh (the goal records at main's defaults, ~420 s) after installing fla-core 0.6;
#   on an H100: the target test added after round 32's last call
#   (test_default_gl_ws_has_two_output_partitions_at_the_fixed_length_goal_shape) with the OUT2 cases, then gl_ws's
#   Nsight Compute duration at T=32768 at the 136-register default (round 32's refused r117).
#   (carry [".gpuhost/g", ".gpuhost/tcache.tgz"]) ATREX_BENCH_COMMIT=<sha> bash scripts/calls/gdn-r117.sh
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  bash .gpuhost/g/install.sh > /dev/null 2>&1
  exec bash scripts/calls/gdn-r103.sh
fi
. scripts/gdn-call.sh
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee "$OUT/smi.txt"
gdn_tests_k 150 "default_gl_ws or out2" tests_default.log
gdn_ncu_duration default136 T32768_H16_HV32
gdn_ncu_duration one_partition T32768_H16_HV32 GL_WS_OUT2=False
gdn_archive r117
