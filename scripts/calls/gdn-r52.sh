# Round 15, call r52 (round 14's prepared r49, run after r50-r51): the default (round 14's final one; round 15 changed
# no kernel) in one call: the whole sm90 target file, `atrex verify chunk_gdn --size small`, then
# `atrex bench run chunk_gdn --size perf --graph` (fla-core 0.6 in the same run; history).
#   bash .gpuhost/g/install.sh; ATREX_BENCH_COMMIT=<sha> bash scripts/calls/gdn-r52.sh
. scripts/gdn-call.sh
gdn_target_tests 170
gdn_verify 60
gdn_graph_bench 260
gdn_archive r52
