# (The state kernel this call measured was removed after it, in 6d71094; its bench variants with it. Kept as the
# record of the call.)
# Round 12, call r32: gl_ws2 (two chains of BV / 2 per CTA on one copy of the k, q, A, Aqk tiles) first run, and the
# round-12 intra default (GVA pairs with MASK_OUT at 168). Target cases of gl_ws2 and the Gluon kernels, then a
# bench_gdn sweep of gl_ws2 configurations against the default (fla-core 0.6 in the same process). Needs the fla
# bundle: bash .gpuhost/g/install.sh first.   bash scripts/calls/gdn-r32.sh
. scripts/gdn-call.sh
gdn_target_tests 170 "ws2 or gluon_state_kernel or mask_out or gva_share or variants"
gdn_sweep 250 default,ws2,ws2_s2,ws2_bv64,ws2_c168_o64,i3_round11,i3_gs2_r128
gdn_archive r32
