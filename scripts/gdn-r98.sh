# Round 27, call r98 (for the next session): after r96 (GL_RC_QNORM_MMA's whole-file run) or instead of it.
#   1. the new GPU cases: test_rc_round27_options_same_bits (GL_RC_L2_PREFETCH, GL_RC_HT_REMAT; gl_rc and gl_rc2,
#      bit for bit), the gl_rc2 rings test;
#   2. bench_gdn sweep without fla, varlen 16x1024: the default (gl_rc2), with the L2 prefetch, HT_REMAT, both,
#      QNORM_MMA with and without the prefetch, and gl_rc with one chain with the prefetch;
#   3. bench_gdn sweep without fla, T=32768 and T=8192: the default and GL_WS_QSIDE + GL_WS_QSCALE (r97 on an H100:
#      0.905 against 0.947 ms and 0.258 against 0.266; QNORM_MMA slower there);
#   4. the whole sm90 target file with GL_WS_QSIDE and GL_WS_QSCALE switched on in the call's tree (the few-program
#      default candidate), with what is left.
#   (carry [".gpuhost/g", ".gpuhost/tcache.tgz"])
#   bash .gpuhost/g/install.sh; GDN_TEST_WORKERS=14 bash scripts/gdn-r98.sh
. scripts/gdn-call.sh
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader > "$OUT/smi.txt"; cat "$OUT/smi.txt"
gdn_tests_k 100 "round27_options or rc2_rings" tests_pf.log
root="$OUT"; OUT="$root/sweep"; mkdir -p "$OUT"
GDN_CASES=varlen16x1024_H32_HV32 GDN_SWEEP_ARGS=--no-fla gdn_sweep 100 default,rc2_pf,rc2_remat,rc2_pf_remat,rc2_mma,rc2_mma_pf,rc1_pf
OUT="$root/ws"; mkdir -p "$OUT"
GDN_CASES=T32768_H16_HV32,T8192_H16_HV32 GDN_SWEEP_ARGS=--no-fla gdn_sweep 100 default,ws_qscale,ws_qscale_o128
OUT="$root"
sed -i -E 's/^(GL_WS_QSIDE|GL_WS_QSCALE) = False$/\1 = True/' packages/nvidia/src/atrex_nvidia/chunk_gdn/sm90/launch.py
grep -E "^GL_WS_(QSIDE|QSCALE) =" packages/nvidia/src/atrex_nvidia/chunk_gdn/sm90/launch.py | tr '\n' ' '; echo
gdn_target_tests_left 580
gdn_archive r98
