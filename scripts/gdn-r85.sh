# Round 25, call r85: GL_RC_QREG on by default (r84: varlen 16x1024 0.481 -> 0.469 ms, sweep):
#   1. the QSIDE / QREG GPU cases (test_rc_qside's qreg cases failed in r84 on the test's own launch filter, fixed);
#   2. the graph bench of varlen 16x1024 (the only goal case whose kernels changed), fla-core 0.6 in the same run;
#   3. bench_gdn's sweep on varlen 16x1024: the default (152 output registers) against round 24's slot form and
#      136 / 168 / 184 registers;
#   4. the whole sm90 target file with what is left of the call.
#   (carry [".gpuhost/g", ".gpuhost/tcache.tgz"])
#   bash .gpuhost/g/install.sh; ATREX_BENCH_COMMIT=<sha> R85_CAP=560 bash scripts/gdn-r85.sh
. scripts/gdn-call.sh
nvidia-smi --query-gpu=name --format=csv,noheader > "$OUT/smi.txt"; cat "$OUT/smi.txt"
timeout 120 python3 -m pytest op_test/nvidia/chunk_gdn/test_chunk_gdn_sm90.py -v -p no:cacheprovider -n 14 \
  -k "qside or qreg" > "$OUT/tests_qside.log" 2>&1
echo "tests qside/qreg: rc $? $(tail -n 1 "$OUT/tests_qside.log")"
grep -E "(FAILED|ERROR)" "$OUT/tests_qside.log" | sed 's/.*:://' | head -10; grep -m 6 -E "^E  " "$OUT/tests_qside.log" | cut -c1-240
gdn_bench_case "${R85_CAP:-560}" 170 varlen
grep -h "^| perf" "$OUT"/graph/*/bench_*.md | cut -c1-160
GDN_CASES=varlen16x1024_H32_HV32 gdn_sweep 130 default,rc_qside_slot,rc_qreg_o136,rc_qreg_o168,rc_qreg_o184
t=$(( ${R85_CAP:-560} - SECONDS - 10 ))
if [ "$t" -ge 60 ]; then
  gdn_target_tests "$t"
else
  echo "target file skipped (${t}s left)"
fi
gdn_archive r85
