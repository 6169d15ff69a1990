# Ran at commit 11847bc; the knob it measures was removed afterwards (launch.py notes), so check out 11847bc to rerun it.
# Round 15, call r54: GL_WS_OUT_SPLIT (gl_ws's output dots as three waited groups of four wgmma steps, so that the
# chain's wgmmas queue behind at most four of them): its GPU cases (same bits as the unsplit kernel), then a bench_gdn
# sweep against the default on the gl_ws shapes (fla-core 0.6 in the process).
#   bash .gpuhost/g/install.sh; bash scripts/calls/gdn-r54.sh
. scripts/gdn-call.sh
gdn_target_tests 120 "out_split"
GDN_CASES=T8192_H16_HV32,T32768_H16_HV32,T4096_H16_HV32 gdn_sweep 200 default,ws_osplit
gdn_archive r54
