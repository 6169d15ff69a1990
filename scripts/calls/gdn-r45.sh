# Round 14, call r45: intra v3 with every global load issued first (INTRA_V3_EARLY_LOADS) and the varlen slot map
# (INTRA_SLOT_MAP): bench_gdn sweep of round 13's intra pass (i3_r13) against each change and both (fla-core 0.6 in
# the process), then the whole sm90 target file (its new check compares both with round 13's pass).
#   bash .gpuhost/g/install.sh; bash scripts/calls/gdn-r45.sh
. scripts/gdn-call.sh
gdn_sweep 290 i3_r13,i3_early,i3_map,i3_early_map
gdn_target_tests 230
grep -o "early_loads_[A-Za-z0-9_]*': \[[^]]*\]" "$OUT/tests.log" | head -8
gdn_archive r45
