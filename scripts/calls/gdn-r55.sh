# Ran at commit 23ac1b2; the knob it measures was removed afterwards (launch.py notes), so check out 23ac1b2 to rerun it.
# Round 15, call r55: GL_WS_SU_BUFS = 3 (gl_ws's S_c / U_c hand-off ring three deep: the chain may run one more chunk
# ahead of the output partition; r53 had the state kernel 14% faster without the output dots, r54 found splitting those
# dots slower). Its GPU cases (same bits as the default), then a bench_gdn sweep against the default on the gl_ws shapes.
#   bash .gpuhost/g/install.sh; bash scripts/calls/gdn-r55.sh
. scripts/gdn-call.sh
gdn_target_tests 120 "schedule_knobs"
GDN_CASES=T8192_H16_HV32,T32768_H16_HV32,T4096_H16_HV32 gdn_sweep 200 default,ws_su3
gdn_archive r55
