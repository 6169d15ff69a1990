# Round 12, call r34, at the session's final kernels: intra v3 GVA pairs with MASK_OUT at 168 registers (the round-12
# default) and STATE_SPLIT_XU (Triton state kernels, calls without in-kernel L2 norm). The whole sm90 target file,
# `atrex verify chunk_gdn --size small` (the decay-0 probe), then `atrex bench run chunk_gdn --size perf --graph`
# (fla-core 0.6 in the same run; history). Needs the fla bundle.   ATREX_BENCH_COMMIT=<sha> bash scripts/calls/gdn-r34.sh
. scripts/gdn-call.sh
gdn_target_tests 160
gdn_verify 60
gdn_graph_bench 300
gdn_archive r34
