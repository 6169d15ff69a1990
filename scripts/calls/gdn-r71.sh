# Round 19, call r71 (written without a GPU: none was lent in round 19): INTRA_V3_DIAG16 (the v3 inverse's four 16x16
# diagonal blocks per warp, kernels._diag16_inverse) and the packed slot map on the H200:
#   1. their GPU cases (test_intra_diag16, the inverse's accuracy rows against float64, the variant hooks on the
#      variant cases; INTRA_SLOT_MAP "packed": test_intra_slot_map, its variant hook);
#   2. a bench_gdn sweep of default / i3_d16 / i3_d16_r128 on the goal cases and T=8192/32/32 (fixed-length one-head
#      programs), in the same process as fla.
# Budget: ~500 s of the 600 s a call may run. r72 follows.
#   (carry [".gpuhost/g", ".gpuhost/tcache.tgz"]: the fla bundle and the Triton cache prebuilt by scripts/gdn_host_cache.py)
#   bash .gpuhost/g/install.sh; bash scripts/calls/gdn-r71.sh
. scripts/gdn-call.sh
gdn_target_tests 180 "diag16 or ut_inverse or slot_map"
GDN_CASES=T8192_H16_HV32,T32768_H16_HV32,varlen16x1024_H32_HV32,T8192_H32_HV32 gdn_sweep 300 default,i3_d16,i3_d16_r128
gdn_archive r71
