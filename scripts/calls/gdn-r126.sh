# Round 34, call r126: on an H200, round 30's goal-record call (gdn-r103.sh: the graph benches of varlen 16x1024,
# T=32768 and T=8192 with fla-core 0.6 in the same run, ~420 s). On any other card, the refactored fewer-items target
# test (round 33's last commit, never run in its loop form) and the one-sequence cases.
#   (carry [".gpuhost/g", ".gpuhost/tcache.tgz"]) bash .gpuhost/g/install.sh; ATREX_BENCH_COMMIT=<sha> OUT=$OUT bash scripts/calls/gdn-r126.sh
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  bash scripts/calls/gdn-r103.sh
  exit $?
fi
. scripts/gdn-call.sh
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader | tee "$OUT/smi.txt"
gdn_tests_k 200 "fewer_items or one_sequence_varlen" r126-tests.log
