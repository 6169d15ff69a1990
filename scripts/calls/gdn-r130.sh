# Round 34, call r130 (any sm90 card): SEQ_PARALLEL at its final defaults (segments of 16 chunks and more, r129): the
# plan's target tests at their new lengths, then the serving shapes' graph bench with fla-core 0.6 in the same run
# (history records of <sha>; two new rows: TP 4 with 32k tokens, TP 8 with 8k).
#   (carry [".gpuhost/g", ".gpuhost/tcache.tgz"]) ATREX_BENCH_COMMIT=<sha> OUT=$OUT bash scripts/calls/gdn-r130.sh
bash .gpuhost/g/install.sh > /dev/null 2>&1
. scripts/gdn-call.sh
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader | tee "$OUT/smi.txt"
gdn_tests_k 100 "seq_parallel or segment_scan or one_sequence" r130-seq.log
gdn_bench_cases 420 300 r130 serve
