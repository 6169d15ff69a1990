# Round 29, call r101 (for the next session; an H200): round 28's defaults measured and checked in one call.
#   1. the whole sm90 target file (the same-roundings comparisons pinned to gl_ws's pre-r98 form, the PDL and
#      INTRA_GATES_BOOK cases have not run on a GPU with round 28's defaults);
#   2. the graph benches with fla-core 0.6 in the same run, one case per process: varlen 16x1024, T=32768 (history
#      records; the goal table);
#   3. bench_gdn sweep by graph replay, varlen 16x1024, ATREX alone: the default, INTRA_GATES_BOOK, PDL off;
#   4. the T=8192 graph bench with what is left.
#   (carry [".gpuhost/g", ".gpuhost/tcache.tgz"]; the cache: scripts/gdn_host_cache.py --variants default,book,no_pdl
#   --cases varlen16x1024_H32_HV32,T32768_H16_HV32,T8192_H16_HV32)
#   bash .gpuhost/g/install.sh; ATREX_BENCH_COMMIT=<sha> GDN_TEST_WORKERS=14 bash scripts/calls/gdn-r101.sh
. scripts/gdn-call.sh
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader > "$OUT/smi.txt"; cat "$OUT/smi.txt"
gdn_target_tests 230
for c in varlen T32768; do
  gdn_bench_case 585 140 "$c"
  grep -h "^| perf" "$OUT"/graph/"$c"/bench_*.md 2>/dev/null | cut -c1-140
done
root="$OUT"; OUT="$root/sweep"; mkdir -p "$OUT"
GDN_CASES=varlen16x1024_H32_HV32 GDN_SWEEP_ARGS="--no-fla --graph" gdn_sweep 70 default,book,no_pdl
OUT="$root"
gdn_bench_case 585 140 T8192-H16-HV32
grep -h "^| perf" "$OUT"/graph/T8192-H16-HV32/bench_*.md 2>/dev/null | cut -c1-140
gdn_archive r101
