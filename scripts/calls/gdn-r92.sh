# Round 26, call r92 (for the session after r91; written in round 26): where gl_rc's step goes with round 26's output
# partition, and the goal table. Run with GL_RC_QSCALE / GL_RC_EARLY_FREE / GL_RC_OUT_TMA on: after r91 has passed
# and the tree's defaults were switched, or with R92_SWITCH=1 (the r91 sed on the call's copy of launch.py).
#   1. r90's timing-only patches (rebased onto the QSCALE path), ATREX alone: base, no tile store, no Q K^T, no output
#      dots, neither (the chain alone): is the output partition still on the step's path?
#   2. GL_WS_QSCALE (gl_ws's QSIDE output partition in the same form, built in round 26): its GPU cases, then a sweep
#      of T=32768/16/32 and T=8192/16/32, ATREX alone: default, round 25's GL_WS_QSIDE, GL_WS_QSCALE (+ QNORM_MMA,
#      + 128 output registers);
#   3. Nsight Compute of one gl_rc launch (warp-stall samples; scripts/gdn_sass_samples.py reads them).
# The goal table (graph bench of the three goal cases with fla-core 0.6) is scripts/calls/gdn-r93.sh.
#   (carry [".gpuhost/g", ".gpuhost/tcache.tgz"]; the cache built from a tree with the options on)
#   bash .gpuhost/g/install.sh; ATREX_BENCH_COMMIT=<sha> R92_SWITCH=1 bash scripts/calls/gdn-r92.sh
. scripts/gdn-call.sh
if [ "${R92_SWITCH:-0}" = 1 ]; then
  sed -i -E 's/^(GL_RC_QSCALE|GL_RC_EARLY_FREE|GL_RC_OUT_TMA) = False$/\1 = True/' \
    packages/nvidia/src/atrex_nvidia/chunk_gdn/sm90/launch.py
fi
grep -E "^GL_RC_(QSCALE|EARLY_FREE|OUT_TMA) =" packages/nvidia/src/atrex_nvidia/chunk_gdn/sm90/launch.py | tr '\n' ' '; echo
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader > "$OUT/smi.txt"; cat "$OUT/smi.txt"
root="$OUT"; OUT="$root/diag"; mkdir -p "$OUT"
GDN_CASES=varlen16x1024_H32_HV32 gdn_diag_sweeps 50 base no_output_store:gl_rc_no_output_store no_qk:gl_rc_no_qk \
  no_output_dots:gl_rc_no_output_dots idle:gl_rc_no_output_dots+gl_rc_no_output_store
OUT="$root"
gdn_tests_k 120 "ws_qscale" tests_ws.log
OUT="$root/ws"; mkdir -p "$OUT"
GDN_CASES=T32768_H16_HV32,T8192_H16_HV32 GDN_SWEEP_ARGS=--no-fla gdn_sweep 130 \
  default,ws_qside,ws_qscale,ws_qscale_mma,ws_qscale_o128
OUT="$root"
gdn_ncu 120 rc gl_rc varlen16x1024_H32_HV32
gdn_archive r92
