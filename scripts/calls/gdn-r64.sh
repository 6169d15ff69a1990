# Round 17, call r64: the graph bench (`atrex bench run chunk_gdn --size perf --graph`, fla-core 0.6 in the same run)
# on the INTRA_V3_GATES = "gs1" default, then the bench_gdn sweep r63 ran out of time for (its first call on a cold
# machine compiled everything inside the sweep): the one-head cases, default against i3_nogates.
#   bash .gpuhost/g/install.sh; ATREX_BENCH_COMMIT=<commit> bash scripts/calls/gdn-r64.sh
. scripts/gdn-call.sh
gdn_graph_bench 280
GDN_CASES=varlen16x1024_H32_HV32,T8192_H32_HV32 gdn_sweep 230 default,i3_nogates
gdn_archive r64
