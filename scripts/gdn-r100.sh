# Round 28, call r100 (short device budget): the whole sm90 target file at the round-28 defaults (the same-roundings
# comparisons pinned to gl_ws's pre-r98 form), then, on an H200 with time left, the varlen 16x1024 graph bench with
# fla-core 0.6 in the same run.
#   (carry [".gpuhost/g", ".gpuhost/tcache.tgz"])
#   bash .gpuhost/g/install.sh; ATREX_BENCH_COMMIT=<sha> GDN_TEST_WORKERS=14 R100_CAP=<s> bash scripts/gdn-r100.sh
. scripts/gdn-call.sh
CAP=${R100_CAP:-300}
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader > "$OUT/smi.txt"; cat "$OUT/smi.txt"
gdn_target_tests $(( CAP - 20 ))
if grep -q H200 "$OUT/smi.txt"; then
  gdn_bench_case "$CAP" 140 varlen
  grep -h "^| perf" "$OUT"/graph/varlen/bench_*.md 2>/dev/null | cut -c1-140
fi
gdn_archive r100
