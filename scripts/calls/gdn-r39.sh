# Round 13, call r39: gl_rc with the factor rows prefetched by its loader (GL_RC_FAC_LOADS), gl_ws's new default
# (GL_WS_FAC_SMEM): every Gluon GPU case (the same-bits checks of both options included), then bench_gdn sweeps:
# varlen 16x1024 (gl_rc) default vs rc_facl, and T=8192 / T=32768 default vs gl_ws at BV = 64 (fla-core 0.6 in the
# same process). Needs the fla bundle:  bash .gpuhost/g/install.sh; bash scripts/calls/gdn-r39.sh   (at afd2789: rc_facl was
# removed in cd52383)
. scripts/gdn-call.sh
gdn_target_tests 240 "gluon or state_gluon"
GDN_CASES=varlen16x1024_H32_HV32
gdn_sweep 120 default,rc_facl
mv "$OUT/gdnv" "$OUT/gdnv_varlen"; mv "$OUT/sweep.log" "$OUT/sweep_varlen.log"
GDN_CASES=T8192_H16_HV32,T32768_H16_HV32
gdn_sweep 150 default,gl_ws_64
gdn_archive r39
