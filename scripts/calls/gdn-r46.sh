# Round 14, call r46, at the session's final kernels (INTRA_SLOT_MAP on; INTRA_V3_EARLY_LOADS removed): the whole sm90
# target file, `atrex verify chunk_gdn --size small`, `atrex bench run chunk_gdn --size perf --graph` (fla-core 0.6 in
# the same run; history), then a bench_gdn sweep of the slot map against round 13's intra pass at varlen 16x1024.
#   bash .gpuhost/g/install.sh; ATREX_BENCH_COMMIT=<sha> bash scripts/calls/gdn-r46.sh
. scripts/gdn-call.sh
gdn_target_tests 170
gdn_verify 60
gdn_graph_bench 240
GDN_CASES=varlen16x1024_H32_HV32 gdn_sweep 100 i3_r13,i3_map
gdn_archive r46
