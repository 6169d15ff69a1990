# Round 12, call r35: the cost of STATE_SPLIT_XU (X and U as bf16 hi + lo pairs in the Triton state kernels, the
# default for calls without in-kernel L2 norm) where those kernels are the state pass: tma and v2 with and without the
# split, forced on T=8192/16/32 and varlen 16x1024 (fla-core 0.6 in the same process). Needs the fla bundle.
#   bash scripts/calls/gdn-r35.sh
. scripts/gdn-call.sh
GDN_CASES=T8192_H16_HV32,varlen16x1024_H32_HV32
gdn_sweep 170 default,tma,tma_split,v2,v2_split
gdn_archive r35
