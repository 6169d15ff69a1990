# Round 33, call r119 (asked for nvidia-h200): on an H200 the goal records (scripts/calls/gdn-r103.sh, ~420 s); on
# any card, then or else, the serving shapes added to the perf table in round 33 (Qwen3-Next under TP 4 and 2, and
# mixed-length chunked-prefill batches with fp32 initial states): the graph bench with fla-core 0.6 in the same run,
# one process (history records of <sha>).
#   (carry [".gpuhost/g", ".gpuhost/tcache.tgz"]) ATREX_BENCH_COMMIT=<sha> OUT=$OUT bash scripts/calls/gdn-r119.sh
bash .gpuhost/g/install.sh > /dev/null 2>&1
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  bash scripts/calls/gdn-r103.sh; exit
fi
. scripts/gdn-call.sh
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee "$OUT/smi.txt"
gdn_bench_cases 420 400 r119 serve
grep -h "^| perf" "$OUT"/graph/serve/bench_*.md | cut -c1-150
