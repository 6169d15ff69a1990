# Round 28, call r98 (folds round 27's r96 into it): one call, one whole-file run with every candidate knob on.
#   1. the new GPU cases: test_rc_round27_options_same_bits (GL_RC_L2_PREFETCH, GL_RC_HT_REMAT; gl_rc and gl_rc2,
#      bit for bit), the gl_rc2 rings test;
#   2. bench_gdn sweep without fla, varlen 16x1024: the default (gl_rc2), with the L2 prefetch, HT_REMAT, both,
#      QNORM_MMA with and without the prefetch, and gl_rc with one chain with the prefetch;
#   3. bench_gdn sweep without fla, T=32768 and T=8192: the default and GL_WS_QSIDE + GL_WS_QSCALE (r97 on an H100:
#      0.905 against 0.947 ms and 0.258 against 0.266; QNORM_MMA slower there);
#   4. the whole sm90 target file with GL_WS_QSIDE, GL_WS_QSCALE and GL_RC_QNORM_MMA switched on in the call's tree,
#      and GL_RC_L2_PREFETCH + GL_RC_HT_REMAT too where step 1 passed (a failure names its knob by its test);
#   5. with what is left: the varlen graph bench of that tree with fla-core 0.6 in the same run.
#   (carry [".gpuhost/g", ".gpuhost/tcache.tgz"])
#   bash .gpuhost/g/install.sh; ATREX_BENCH_COMMIT=<sha> GDN_TEST_WORKERS=14 bash scripts/gdn-r98.sh
. scripts/gdn-call.sh
L=packages/nvidia/src/atrex_nvidia/chunk_gdn/sm90/launch.py
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader > "$OUT/smi.txt"; cat "$OUT/smi.txt"
gdn_tests_k 100 "round27_options or rc2_rings" tests_pf.log
knobs="GL_WS_QSIDE|GL_WS_QSCALE|GL_RC_QNORM_MMA"
if tail -n 1 "$OUT/tests_pf.log" | grep -q " passed" && ! tail -n 1 "$OUT/tests_pf.log" | grep -qE "failed|error"; then
  knobs="$knobs|GL_RC_L2_PREFETCH|GL_RC_HT_REMAT"
fi
root="$OUT"; OUT="$root/sweep"; mkdir -p "$OUT"
GDN_CASES=varlen16x1024_H32_HV32 GDN_SWEEP_ARGS=--no-fla gdn_sweep 100 default,rc2_pf,rc2_remat,rc2_pf_remat,rc2_mma,rc2_mma_pf,rc1_pf
OUT="$root/ws"; mkdir -p "$OUT"
GDN_CASES=T32768_H16_HV32,T8192_H16_HV32 GDN_SWEEP_ARGS=--no-fla gdn_sweep 90 default,ws_qscale,ws_qscale_o128
OUT="$root"
sed -i -E "s/^($knobs) = False\$/\\1 = True/" $L
grep -E "^GL_(WS_QSIDE|WS_QSCALE|RC_QNORM_MMA|RC_L2_PREFETCH|RC_HT_REMAT) =" $L | tr '\n' ' '; echo
gdn_target_tests_left 450
gdn_bench_case 585 120 varlen
grep -h "^| perf" "$OUT"/graph/varlen/bench_*.md 2>/dev/null | cut -c1-140
gdn_archive r98
