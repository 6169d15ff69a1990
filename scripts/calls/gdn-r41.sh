# Round 13, call r41, at the session's final kernels (gl_ws with GL_WS_FAC_SMEM, the round-13 default): the whole sm90
# target file, `atrex verify chunk_gdn --size small`, then `atrex bench run chunk_gdn --size perf --graph` (fla-core
# 0.6 in the same run; history). Needs the fla bundle.   ATREX_BENCH_COMMIT=<sha> bash scripts/calls/gdn-r41.sh
. scripts/gdn-call.sh
gdn_target_tests 170
gdn_verify 60
gdn_graph_bench 300
gdn_archive r41
