# Round 15, call r56: the contract cases with the intra variant "intra_v3_acc_mask_out" (bench_gdn i3_acc_mo: the
# accumulating merges with masked products in every intra program), new in VARIANT_HOOKS, on the H200.
#   bash .gpuhost/g/install.sh; bash scripts/calls/gdn-r56.sh
. scripts/gdn-call.sh
gdn_target_tests 150 "intra_v3_acc_mask_out"
gdn_archive r56
