# Round 26, call r91 (written in round 26, when no device was lent after r90; for the next session): gl_rc's output
# partition after r90. GL_RC_QSCALE, GL_RC_EARLY_FREE and GL_RC_OUT_TMA are switched on in the call's copy of launch.py
# (the candidate default; in the tree they stay off until this call has passed), so that every step below, the target
# file included, runs them; record the graph bench as ATREX_BENCH_COMMIT=<sha>+r26. Build the carried cache from a
# tree with the same three lines switched on. One call:
#   1. the gl_rc GPU cases: test_rc_qscale (bit-equality of EARLY_FREE / OUT_TMA, QSCALE against float64 and round
#      25), test_rc_qside (round 24/25 forms), test_rc_late_factors_same_bits, test_rc_two_chains_same_bits_as_gl_rc
#      (gl_rc2, GL_RC_TWO_CHAINS), the Gluon state kernel cases and variant hooks of gl_rc;
#   2. bench_gdn sweep, varlen 16x1024, ATREX alone: the default, round 25's form, each knob off, GL_RC_QNORM_MMA,
#      GL_RC_LATE_FACTORS, gl_rc2 (two chains per CTA: as is, with QNORM_MMA, at 136 output / 176 chain registers);
#   3. graph bench of varlen 16x1024 with fla-core 0.6 in the same run (history record);
#   4. the whole sm90 target file with what is left of the call.
#   (carry [".gpuhost/g", ".gpuhost/tcache.tgz"])
#   bash .gpuhost/g/install.sh; ATREX_BENCH_COMMIT=<sha> bash scripts/calls/gdn-r91.sh
. scripts/gdn-call.sh
sed -i -E 's/^(GL_RC_QSCALE|GL_RC_EARLY_FREE|GL_RC_OUT_TMA) = False$/\1 = True/' \
  packages/nvidia/src/atrex_nvidia/chunk_gdn/sm90/launch.py
grep -E "^GL_RC_(QSCALE|EARLY_FREE|OUT_TMA) =" packages/nvidia/src/atrex_nvidia/chunk_gdn/sm90/launch.py | tr '\n' ' '; echo
nvidia-smi --query-gpu=name --format=csv,noheader > "$OUT/smi.txt"; cat "$OUT/smi.txt"
gdn_tests_k 170 "(rc_qscale or rc_qside or gl_rc or gluon_rc or rc_qreg or rc_rings or rc_late) and not rc2 and not two_chains" tests_rc.log
gdn_tests_k 100 "two_chains or gluon_rc2" tests_rc2.log  # (gl_rc2 apart: a hang of the new kernel costs only this step)
GDN_CASES=varlen16x1024_H32_HV32
root="$OUT"; OUT="$root/sweep"; mkdir -p "$OUT"
GDN_SWEEP_ARGS=--no-fla gdn_sweep 130 default,rc_r25,rc_no_qscale,rc_no_early,rc_no_out_tma,rc_qnorm_mma,rc26_late_fac,rc2,rc2_mma,rc2_o136
OUT="$root"
gdn_bench_case 490 110 varlen16x1024
grep -h "^| perf" "$OUT"/graph/*/bench_*.md 2>/dev/null | cut -c1-140
gdn_target_tests_left 590
gdn_archive r91
