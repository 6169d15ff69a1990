# Round 25, call r85: GL_RC_QREG on by default (r84: varlen 16x1024 0.481 -> 0.469 ms, sweep):
#   1. the QSIDE / QREG GPU cases (test_rc_qside's qreg cases failed in r84 on the test's own launch filter, fixed);
#   2. the graph bench of varlen 16x1024 (the only goal case whose kernels changed), fla-core 0.6 in the same run;
#   3. bench_gdn's sweep on varlen 16x1024: the default (152 output registers) against round 24's slot form and
#      136 / 168 / 184 registers;
#   4. the whole sm90 target file with what is left of the call.
#   (carry [".gpuhost/g", ".gpuhost/tcache.tgz"])
#   bash .gpuhost/g/install.sh; ATREX_BENCH_COMMIT=<sha> R85_CAP=560 bash scripts/calls/gdn-r85.sh
. scripts/gdn-call.sh
nvidia-smi --query-gpu=name --format=csv,noheader > "$OUT/smi.txt"; cat "$OUT/smi.txt"
gdn_tests_k 120 "qside or qreg" tests_qside.log
gdn_bench_case "${R85_CAP:-560}" 170 varlen
grep -h "^| perf" "$OUT"/graph/*/bench_*.md | cut -c1-160
GDN_CASES=varlen16x1024_H32_HV32 gdn_sweep 130 default,rc_qside_slot,rc_qreg_o136,rc_qreg_o168,rc_qreg_o184
gdn_target_tests_left "${R85_CAP:-560}"
gdn_archive r85
