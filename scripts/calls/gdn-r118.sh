# Round 33, call r118 (asked for nvidia-h200): on an H200 the goal records (scripts/calls/gdn-r103.sh, ~420 s, after
# installing fla-core 0.6); on an H100 a Nsight Compute source profile (full set, SASS stall samples) of the varlen
# 16x1024 call's intra v3 kernel, which round 14 last profiled (r44, an older binary) and which is half of that call.
#   (carry [".gpuhost/g", ".gpuhost/tcache.tgz"]) ATREX_BENCH_COMMIT=<sha> OUT=$OUT bash scripts/calls/gdn-r118.sh
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  bash .gpuhost/g/install.sh > /dev/null 2>&1
  exec bash scripts/calls/gdn-r103.sh
fi
. scripts/gdn-call.sh
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee "$OUT/smi.txt"
gdn_ncu 200 intra_varlen atrex_sm90_gdn_intra_chunk_v3 varlen16x1024_H32_HV32
python3 scripts/gdn_sass_samples.py "$OUT/intra_varlen_sass.csv.gz" --top 40 > "$OUT/intra_varlen_top.txt" 2>&1
head -60 "$OUT/intra_varlen_top.txt" | cut -c1-160
