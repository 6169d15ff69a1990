# (The state kernel this call measured was removed after it, in 6d71094; its bench variants with it. Kept as the
# record of the call.)
# Round 12, call r33: gl_z (two-dot state chain, U = Y - Z S, with Z and Y formed by a producer partition) first
# run: its target cases and the other Gluon state cases, then a bench_gdn sweep of gl_z against the default (gl_ws) on
# the three goal cases (fla-core 0.6 in the same process). Needs the fla bundle.   bash scripts/calls/gdn-r33.sh
. scripts/gdn-call.sh
gdn_target_tests 150 "gl_z or gluon_state_kernel or variants"
gdn_sweep 220 default,gl_z,gl_z_p200,gl_z_p136
gdn_archive r33
