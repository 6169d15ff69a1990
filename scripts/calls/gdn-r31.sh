# Round 11, prepared for the next device session (NOT run in round 11): INTRA_V3_MASK_OUT, the intra inverse's merges
# masking the product L X_b instead of L (same bits: CPU interpreter check), which lets the kernel fit a 128-register
# cap with little spilling (fp16 path, Triton 3.6 SASS: 88 bytes of stack against 552 without it), i.e. four CTAs per
# SM against three. Its target cases (mask_out check, variant case intra_v3_mask_out_r128), then a bench_gdn sweep of
# the mask-out variants against the default on T=8192/16/32, T=32768/16/32 and varlen 16x1024 (fla-core 0.6 in the
# same process). Needs the fla bundle: bash .gpuhost/g/install.sh first.   bash scripts/calls/gdn-r31.sh
. scripts/gdn-call.sh
gdn_target_tests 120 "mask_out or gva_share or fp16_inverse"
gdn_sweep 260 default,i3_mo,i3_mo_r128,i3_mo_r128_gs1,i3_mo_r144,i3_r128,i3_mo_gs2_r168
gdn_archive r31
