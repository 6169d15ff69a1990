# Round 28, call r99: the tree's defaults after r98's flips (GL_RC_HT_REMAT, GL_RC_QNORM_MMA, PDL for gl_rc / gl_rc2
# plans, GL_WS_QSIDE + GL_WS_QSCALE with the same-roundings comparisons pinned):
#   1. the varlen 16x1024 graph bench, fla-core 0.6 in the same run (history record);
#   2. the whole sm90 target file;
#   3. the T=32768 and T=8192 graph benches with what is left.
#   (carry [".gpuhost/g", ".gpuhost/tcache.tgz"])
#   bash .gpuhost/g/install.sh; ATREX_BENCH_COMMIT=<sha> GDN_TEST_WORKERS=14 bash scripts/gdn-r99.sh
. scripts/gdn-call.sh
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader > "$OUT/smi.txt"; cat "$OUT/smi.txt"
grep -E "^(GL_WS_QSIDE|GL_WS_QSCALE|GL_RC_QNORM_MMA|GL_RC_L2_PREFETCH|GL_RC_HT_REMAT|PDL) =" \
  packages/nvidia/src/atrex_nvidia/chunk_gdn/sm90/launch.py | tr '\n' ' '; echo
CAP=${R99_CAP:-585}
gdn_bench_case "$CAP" 140 varlen
grep -h "^| perf" "$OUT"/graph/varlen/bench_*.md 2>/dev/null | cut -c1-140
gdn_target_tests 230
for c in T32768 T8192-H16-HV32; do
  gdn_bench_case "$CAP" 140 "$c"
  grep -h "^| perf" "$OUT"/graph/"$c"/bench_*.md 2>/dev/null | cut -c1-140
done
gdn_archive r99
