# Prepared in round 14 for the next session (run in round 15 as scripts/calls/gdn-r52.sh): the final round-14 default (slot map; accumulating merges
# in two-head programs) in one call: the whole sm90 target file, `atrex verify chunk_gdn --size small`, then
# `atrex bench run chunk_gdn --size perf --graph` (fla-core 0.6 in the same run; history).
#   bash .gpuhost/g/install.sh; ATREX_BENCH_COMMIT=<sha> bash scripts/calls/gdn-r49.sh
. scripts/gdn-call.sh
gdn_target_tests 170
gdn_verify 60
gdn_graph_bench 260
gdn_archive r49
