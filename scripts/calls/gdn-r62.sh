# Round 17, call r62: INTRA_V3_GATES (the gate rows from the separate gates kernel; the v3 program loads gamma and beta
# beside q and k). Its GPU cases (test_intra_gates: against the v3 kernel forming the rows itself, within 1e-3 rrmse;
# the variant cases against float64), then a bench_gdn sweep on the three goal cases: default, gates, gates without the
# accumulating merges (with them the two-head Triton 3.6 binary grows from 4264 to 5528 instructions).
#   bash .gpuhost/g/install.sh; bash scripts/calls/gdn-r62.sh
. scripts/gdn-call.sh
gdn_target_tests 170 gates
gdn_sweep 330 default,i3_gates,i3_gates_sub
gdn_archive r62
