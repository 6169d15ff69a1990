# Round 26, call r93 (for a later session; written in round 26): the goal table on whatever card starts (the goals are
# the H200's): the graph bench of varlen 16x1024, T=8192/16/32 and T=32768/16/32, one process each, fla-core 0.6 in
# the same run; history records under $OUT/history.jsonl. Run on the tree's defaults (switch round 26's options on in
# the tree first, once r91 has passed them).
#   (carry [".gpuhost/g", ".gpuhost/tcache.tgz"])
#   bash .gpuhost/g/install.sh; ATREX_BENCH_COMMIT=<sha> bash scripts/calls/gdn-r93.sh
. scripts/gdn-call.sh
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader > "$OUT/smi.txt"; cat "$OUT/smi.txt"
gdn_bench_case 580 150 varlen
gdn_bench_case 580 150 T8192-H16-HV32
gdn_bench_case 580 150 T32768
grep -h "^| perf" "$OUT"/graph/*/bench_*.md | cut -c1-160
gdn_archive r93
