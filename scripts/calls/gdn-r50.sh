# Ran at commit b5f3310; the knob it measures was removed afterwards (launch.py notes), so check out b5f3310 to rerun it.
# Round 15, call r50: GL_WS_LOOKAHEAD (gl_ws's chain with the next chunk's K S product looked ahead, plus the
# atrex_sm90_gdn_kk_prev kernel): its GPU target cases first (against gl_ws without it and float64; the key-product
# kernel against torch), then, if they passed, a bench_gdn sweep of it against the default on the goal cases; and the
# accumulating merges with masked products in every intra program (i3_acc_mo: the varlen case runs one-head programs).
#   bash .gpuhost/g/install.sh; bash scripts/calls/gdn-r50.sh
. scripts/gdn-call.sh
gdn_target_tests 150 "lookahead or kk_prev"
if grep -q " passed" "$OUT/tests.log" && ! grep -qE "failed|error" "$OUT/tests.log"; then
  gdn_sweep 300 default,ws_la,i3_acc_mo
else
  echo "lookahead cases did not pass: sweep without ws_la"
  gdn_sweep 200 default,i3_acc_mo
fi
gdn_archive r50
