# Round 17, call r63: INTRA_V3_GATES = "gs1" (the default since r62: one-head programs only). bench_gdn sweep on the
# one-head cases (varlen 16x1024 and fixed-length T=8192/32/32) and one two-head case (unchanged binary), default
# against i3_nogates; then the whole sm90 target file on the new default.
#   bash .gpuhost/g/install.sh; bash scripts/calls/gdn-r63.sh
. scripts/gdn-call.sh
GDN_CASES=varlen16x1024_H32_HV32,T8192_H32_HV32,T8192_H16_HV32 gdn_sweep 200 default,i3_nogates
gdn_target_tests 330
gdn_archive r63
