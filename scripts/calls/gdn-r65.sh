# Round 17, call r65: the review commit's gates cases (test_intra_gates now also fails unless the gates kernel ran with
# the knob on only; the gates kernel loads beta through _load_beta), then a bench_gdn sweep on varlen 16x1024 at the
# Qwen3-Next heads (H=16, HV=32: two-head intra programs, which r62 measured only at fixed length) and at H=HV=32:
# default ("varlen1"), gates for every program, gates without the accumulating merges.
#   bash .gpuhost/g/install.sh; bash scripts/calls/gdn-r65.sh
. scripts/gdn-call.sh
gdn_target_tests 170 gates
GDN_CASES=varlen16x1024_H16_HV32,varlen16x1024_H32_HV32 gdn_sweep 300 default,i3_gates,i3_gates_sub
gdn_archive r65
