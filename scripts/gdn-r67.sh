# Round 18, call r67 (after r66): the other fused configurations on the varlen goal case and at the Qwen3-Next heads.
#   bash .gpuhost/g/install.sh; bash scripts/gdn-r67.sh
. scripts/gdn-call.sh
GDN_CASES=varlen16x1024_H32_HV32,varlen16x1024_H16_HV32 gdn_sweep 560 default,fused,fused_pipe,fused_earlyq,fused_ptr,fused_nomo,fused_r168,fused_r128
gdn_archive r67
