# Ran at commit 711cdd2; the knob it measures was removed afterwards (launch.py notes), so check out 711cdd2 to rerun it.
# Round 15, call r51: r50 again after its fix (r50's lookahead cases failed to compile under Triton 3.6: the key-product
# kernel read the module's BT global; its sweep measured i3_acc_mo). GL_WS_LOOKAHEAD's GPU target cases, then, if they
# passed, a bench_gdn sweep of it against the default on the goal cases (fla-core 0.6 in the process).
#   bash .gpuhost/g/install.sh; bash scripts/calls/gdn-r51.sh
. scripts/gdn-call.sh
gdn_target_tests 150 "lookahead or kk_prev"
if grep -q " passed" "$OUT/tests.log" && ! grep -qE "failed|error" "$OUT/tests.log"; then
  GDN_CASES=T8192_H16_HV32,T32768_H16_HV32,T4096_H16_HV32 gdn_sweep 260 default,ws_la
fi
gdn_archive r51
