# Round 13, call r36: gl_ws with the row factors in the load slots (GL_WS_FAC_SMEM) and the U hand-off after the
# update's issue (GL_WS_LATE_U): their GPU cases (same bits as plain gl_ws, float64 bounds, variant cases), then a
# bench_gdn sweep of the four combinations on T=8192/16/32 and T=32768/16/32 (fla-core 0.6 in the same process).
# Needs the fla bundle:  bash .gpuhost/g/install.sh; bash scripts/calls/gdn-r36.sh   (at 4cd8dce: the ws_lateu
# variants were removed in cd52383)
. scripts/gdn-call.sh
gdn_target_tests 200 "gluon_ws or gluon_state_kernel or state_gluon_ws"
GDN_CASES=T8192_H16_HV32,T32768_H16_HV32
gdn_sweep 260 default,ws_fac,ws_lateu,ws_fac_lateu
gdn_archive r36
