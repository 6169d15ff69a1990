# Round 31, call r108 (any sm90 card): the graph benches of main's defaults (round 30's kernels) with fla-core 0.6 in
# the same run, one case per process: varlen 16x1024, T=32768, T=8192 (history records of <sha>, so that the README's
# section shows main's code on that card; ~300 s).
#   (carry [".gpuhost/g", ".gpuhost/tcache.tgz"]: the cache of scripts/calls/gdn-r103.sh)
#   bash .gpuhost/g/install.sh; ATREX_BENCH_COMMIT=<sha> bash scripts/calls/gdn-r108.sh
. scripts/gdn-call.sh
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader > "$OUT/smi.txt"; cat "$OUT/smi.txt"
gdn_bench_cases 400 140 r108 varlen T32768 T8192-H16-HV32
