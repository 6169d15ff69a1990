# Round 20, call r75 (diagnostic, timing only; written without a GPU): where the fused kernel's time goes, if r73
# shows it correct but not faster than the two-kernel call. FUSED_RC = True in this call's copy of the tree (and
# FUSED_DIAG16 from the environment), then bench_gdn sweeps of that default on varlen 16x1024 and T=8192/16/32 as it
# is and with scripts/diag patches applied to kernels_gluon.py in turn:
#   fused_aux_no_inverse: the aux partition stores A = I instead of forming the inverse;
#   fused_chain_no_dots:  the chain partition skips its three dots (P = 0, U = X, S scaled only);
#   and both. A time that falls with the first patch and not with the second says the aux partition bounds the
#   kernel; the reverse, the chain. The patched kernels compute wrong outputs (their rrmse column shows it).
#   bash .gpuhost/g/install.sh; FUSED_DIAG16=True bash scripts/calls/gdn-r75.sh
F=packages/nvidia/src/atrex_nvidia/chunk_gdn/sm90/launch.py
sed -i 's/^FUSED_RC = False/FUSED_RC = True/' "$F"
[ -n "${FUSED_DIAG16:-}" ] && sed -i "s/^FUSED_DIAG16 = False/FUSED_DIAG16 = ${FUSED_DIAG16}/" "$F"
grep -E "^FUSED_(RC|DIAG16) =" "$F"
. scripts/gdn-call.sh
GDN_CASES=varlen16x1024_H32_HV32,T8192_H16_HV32 gdn_diag_sweeps 120 base aux_no_inverse:fused_aux_no_inverse \
  chain_no_dots:fused_chain_no_dots both:fused_aux_no_inverse+fused_chain_no_dots
gdn_archive r75
