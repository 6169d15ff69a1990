# Round 13, call r38: GL_WS_FAC_SMEM as rebuilt after r37's profile (the loader warp loads the factors one chunk ahead
# and stores them into the slot before its ready arrive; no cp.async) with and without GL_WS_LATE_U: GPU cases, a
# bench_gdn sweep on T=8192/16/32 and T=32768/16/32 (fla-core 0.6 in the same process), and an Nsight Compute
# source-level profile of gl_ws with both options at T=8192/16/32.
# Needs the fla bundle:  bash .gpuhost/g/install.sh; bash scripts/calls/gdn-r38.sh   (at 113fba6: GL_WS_LATE_U and the
# ws_lateu variants were removed in cd52383)
. scripts/gdn-call.sh
gdn_target_tests 200 "gluon_ws or gluon_state_kernel or state_gluon_ws"
GDN_CASES=T8192_H16_HV32,T32768_H16_HV32
gdn_sweep 200 default,ws_fac,ws_fac_lateu,ws_lateu
gdn_ncu 100 ws gl_ws T8192_H16_HV32 GL_WS_FAC_SMEM=True GL_WS_LATE_U=True
gdn_archive r38
