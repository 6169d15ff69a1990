# Round 25, call r89: the graph bench of the round-25 default (894fe08) on whatever card starts (an H200 if one
# does): varlen 16x1024 and T=32768/16/32, each in its own process with fla-core 0.6.
#   (carry [".gpuhost/g", ".gpuhost/tcache.tgz"])
#   bash .gpuhost/g/install.sh; ATREX_BENCH_COMMIT=<sha> R89_CAP=230 bash scripts/calls/gdn-r89.sh
. scripts/gdn-call.sh
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader > "$OUT/smi.txt"; cat "$OUT/smi.txt"
gdn_bench_case "${R89_CAP:-230}" 130 varlen
gdn_bench_case "${R89_CAP:-230}" 130 T32768
grep -h "^| perf" "$OUT"/graph/*/bench_*.md | cut -c1-160
gdn_archive r89
