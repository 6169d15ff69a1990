# Round 34, call r131 (~320 s of device time were left): on an H200, the varlen goal record alone (gdn-r125.sh's step;
# the goal shapes do not take the sequence-parallel plan). On any other sm90 card: the plan's target tests (a
# caller-normalised case added).
#   (carry [".gpuhost/g", ".gpuhost/tcache.tgz"]) ATREX_BENCH_COMMIT=<sha> OUT=$OUT bash scripts/calls/gdn-r131.sh
bash .gpuhost/g/install.sh > /dev/null 2>&1
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  . scripts/gdn-call.sh
  nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee "$OUT/smi.txt"
  gdn_bench_cases 225 215 r131 varlen-16x1024
  exit 0
fi
. scripts/gdn-call.sh
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader | tee "$OUT/smi.txt"
gdn_tests_k 150 "seq_parallel or segment_scan or one_sequence" r131-seq.log
