# Round 37, call r138 (an H200 only; exits at once on any other card): the H200 goal records at main's defaults with
# fla-core 0.6 in the same run, one case per process (varlen 16x1024, T=32768, T=8192; history records of
# ATREX_BENCH_COMMIT), ~420 s. (carry [".gpuhost/g", ".gpuhost/tcache.tgz"]; the cache: gdn-r137.sh's)
#   bash .gpuhost/g/install.sh; ATREX_BENCH_COMMIT=<sha> bash scripts/calls/gdn-r138.sh
. scripts/gdn-call.sh
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader | tee "$OUT/smi.txt"
grep -q H200 "$OUT/smi.txt" || { echo "not an H200: nothing run"; exit 0; }
gdn_bench_cases 430 140 r138 varlen T32768 T8192-H16-HV32
