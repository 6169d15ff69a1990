# Round 27, call r95: the tree's defaults after r91 (GL_RC_QSCALE, GL_RC_EARLY_FREE, GL_RC_OUT_TMA on; "auto" takes
# gl_rc2 at varlen, GL_RC_TWO_CHAINS), with the tests r91 showed wrong fixed (test_rc_qscale / test_ws_qscale against
# the recurrence with the normalised q unrounded, the rings and fused comparisons pinned to the same q rounding) and
# GL_RC_QNORM_MMA's ones tile made K-major (off). One call:
#   1. the whole sm90 target file except the QNORM_MMA cases (a wrong wgmma there faulted r91's workers);
#   2. graph bench of varlen 16x1024 with fla-core 0.6 in the same run (history record);
#   3. the QNORM_MMA cases apart;
#   4. graph bench of T=32768 with fla-core 0.6;
#   5. bench_gdn sweep without fla, varlen 16x1024: the default (gl_rc2), gl_rc with one chain, gl_rc2 with QNORM_MMA.
#   (carry [".gpuhost/g", ".gpuhost/tcache.tgz"])
#   bash .gpuhost/g/install.sh; ATREX_BENCH_COMMIT=<sha> GDN_TEST_WORKERS=14 bash scripts/calls/gdn-r95.sh
. scripts/gdn-call.sh
grep -E "^GL_RC_(QSCALE|EARLY_FREE|OUT_TMA|TWO_CHAINS|QNORM_MMA) =" packages/nvidia/src/atrex_nvidia/chunk_gdn/sm90/launch.py | tr '\n' ' '; echo
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader > "$OUT/smi.txt"; cat "$OUT/smi.txt"
gdn_target_tests 250 "not mma"
gdn_bench_case 560 120 varlen
grep -h "^| perf" "$OUT"/graph/*/bench_*.md 2>/dev/null | cut -c1-140
gdn_tests_k 80 "mma" tests_mma.log
gdn_bench_case 560 120 T32768
grep -h "^| perf" "$OUT"/graph/T32768/bench_*.md 2>/dev/null | cut -c1-140
t=$(( 575 - SECONDS ))
if [ "$t" -ge 45 ]; then
  root="$OUT"; OUT="$root/sweep"; mkdir -p "$OUT"
  GDN_CASES=varlen16x1024_H32_HV32 GDN_SWEEP_ARGS=--no-fla gdn_sweep "$t" default,rc1,rc2_mma
  OUT="$root"
fi
gdn_archive r95
