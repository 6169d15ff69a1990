# Round 34, call r131: on an H200, round 30's goal-record call (gdn-r103.sh, ~420 s; the goal shapes do not take the
# sequence-parallel plan). On any other sm90 card: the plan's target tests (a caller-normalised case added), then the
# whole sm90 target file at round 34's final defaults.
#   (carry [".gpuhost/g", ".gpuhost/tcache.tgz"]) ATREX_BENCH_COMMIT=<sha> OUT=$OUT bash scripts/calls/gdn-r131.sh
bash .gpuhost/g/install.sh > /dev/null 2>&1
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  bash scripts/calls/gdn-r103.sh
  exit $?
fi
. scripts/gdn-call.sh
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader | tee "$OUT/smi.txt"
gdn_tests_k 100 "seq_parallel or segment_scan" r131-seq.log
GDN_TEST_WORKERS=14 gdn_target_tests $(( 480 - SECONDS ))
gzip -f "$OUT/tests.log"
