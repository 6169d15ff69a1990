# Round 18, call r66 (written without a GPU; for the next session that has one): the fused kernel's GPU cases
# (FUSED: test_fused, its graph capture, the four fused variant hooks on the variant cases), then a bench_gdn sweep of
# its configurations against the default on the varlen goal case, varlen at the Qwen3-Next heads and T=8192/16/32.
#   bash .gpuhost/g/install.sh; bash scripts/gdn-r66.sh
. scripts/gdn-call.sh
gdn_target_tests 220 fused
GDN_CASES=varlen16x1024_H32_HV32,varlen16x1024_H16_HV32,T8192_H16_HV32 gdn_sweep 340 default,fused*
gdn_archive r66
