# Round 14, call r47 (as run at b0c987d, where INTRA_V3_ACC_MERGE was True; after r48 the default is "gs2", so its
# graph bench now runs the accumulating merges in two-head programs only): INTRA_V3_ACC_MERGE (the fp16 merges
# accumulating onto X): bench_gdn sweep
# against round 13's merges (fla-core 0.6 in the process), the GPU cases that exercise the intra kernel (inverse
# accuracy with and without it, its whole-call check, the contract cases), then `atrex bench run chunk_gdn --size perf
# --graph` at this commit.   bash .gpuhost/g/install.sh; ATREX_BENCH_COMMIT=<sha> bash scripts/calls/gdn-r47.sh
. scripts/gdn-call.sh
gdn_sweep 130 i3_sub,i3_acc
gdn_target_tests 170 "inverse or acc_merge or slot_map or mask_out or gva_share or test_cases"
gdn_graph_bench 240
gdn_archive r47
