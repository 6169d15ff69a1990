# Round 33, call r125 (an H200 only; exits at once on any other card): with the device time left (~260 s), the H200
# goal record of the varlen case alone (the nearest miss: 2.86x at round 27's defaults, r95): its graph bench with
# fla-core 0.6 in the same run (history records of <sha>).
#   (carry [".gpuhost/g", ".gpuhost/tcache.tgz"]) ATREX_BENCH_COMMIT=<sha> OUT=$OUT bash scripts/calls/gdn-r125.sh
nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 || { echo "not an H200: nothing run"; exit 0; }
bash .gpuhost/g/install.sh > /dev/null 2>&1
. scripts/gdn-call.sh
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee "$OUT/smi.txt"
gdn_bench_cases 200 190 r125 varlen-16x1024
