# Round 25, call r84: GL_RC_QREG (q normalised into registers in gl_rc's QSIDE step) and GL_WS_QSIDE (the q side in
# gl_ws's output partition), both off in the tree:
#   1. their GPU cases: test_rc_qside (both forms), test_ws_qside, the variant hooks state_gluon_{rc_qside,rc_qreg,
#      ws_qside} on the variant cases;
#   2. bench_gdn's sweep on the three goal cases: the default against rc_qreg, ws_qside (152 / 128 / 184 registers).
#   (carry [".gpuhost/g", ".gpuhost/tcache.tgz"])
#   bash .gpuhost/g/install.sh; ATREX_BENCH_COMMIT=<sha> bash scripts/calls/gdn-r84.sh
. scripts/gdn-call.sh
nvidia-smi --query-gpu=name --format=csv,noheader > "$OUT/smi.txt"; cat "$OUT/smi.txt"
gdn_tests_k 170 "qside or qreg" tests.log
gdn_sweep 260 default,rc_qreg,ws_qside,ws_qside_o128,ws_qside_o184
gdn_archive r84
