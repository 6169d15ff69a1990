# Round 13, call r40: gl_ws with separate chain and output rings (GL_WS_SPLIT_RING, slots (4, 3), (3, 3), (4, 2)):
# the gl_ws GPU cases (same bits as round 12's gl_ws, float64 bounds, variants), then a bench_gdn sweep on T=8192/16/32
# and T=32768/16/32 (fla-core 0.6 in the same process).
# Needs the fla bundle:  bash .gpuhost/g/install.sh; bash scripts/calls/gdn-r40.sh   (at 056a510: the ws_split
# variants were removed in cd52383)
. scripts/gdn-call.sh
gdn_target_tests 200 "gluon_ws or state_gluon_ws"
GDN_CASES=T8192_H16_HV32,T32768_H16_HV32
gdn_sweep 220 default,ws_split,ws_split33,ws_split42
gdn_archive r40
