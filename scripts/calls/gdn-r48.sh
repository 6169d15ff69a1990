# Round 14, call r48: INTRA_V3_ACC_MERGE on one-head programs (r47's graph bench had T=8192/32/32, which runs them,
# at 0.301 ms against 0.273 in r46): bench_gdn sweep of the merges accumulating everywhere, in two-head programs only
# and nowhere, on the one-head cases and T=8192/16/32 (fla-core 0.6 in the process).
#   bash .gpuhost/g/install.sh; bash scripts/calls/gdn-r48.sh
. scripts/gdn-call.sh
GDN_CASES=T8192_H32_HV32,varlen16x1024_H32_HV32,T8192_H16_HV32 gdn_sweep 200 i3_sub,i3_acc,i3_acc_gs2
gdn_archive r48
