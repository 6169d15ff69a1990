# Round 15, call r53 (diagnostic, timing only): where gl_ws's ~1.07 us chain step goes. The state kernel is timed
# (bench_gdn sweep, default launch, T=8192/16/32 and T=32768/16/32) as it is and with each patch of scripts/diag/
# applied in turn: no output dots (the output partition stores zeros + 1), no proxy fences in the chain (unsafe), no
# U = A X round trip in the chain (U = X), and no output dots + no fences. The patched kernels compute wrong outputs
# (their rrmse column shows it); only their state-kernel times mean anything. The tree is restored after each.
#   bash .gpuhost/g/install.sh; bash scripts/calls/gdn-r53.sh
. scripts/gdn-call.sh
GDN_CASES=T8192_H16_HV32,T32768_H16_HV32 gdn_diag_sweeps 110 base no_output_dots:gl_ws_no_output_dots chain_no_fences:gl_ws_chain_no_fences chain_no_ax:gl_ws_chain_no_ax no_output_no_fences:gl_ws_no_output_dots+gl_ws_chain_no_fences
gdn_archive r53
