# Round 25, call r86: GL_RC_OUT_REGS 184 by default (r85: varlen 16x1024 gl_rc 0.275 against 0.303 ms at 152):
#   1. bench_gdn's sweep on varlen 16x1024: the default against 152 / 200 / 216 registers and the slot form at 184;
#   1b. the same sweep on T=8192 and T=32768 (H=16, HV=32): gl_ws's output partition at 144 / 184 registers;
#   2. the graph bench of varlen 16x1024 with the default, fla-core 0.6 in the same run;
#   3. the whole sm90 target file with what is left of the call.
#   (carry [".gpuhost/g", ".gpuhost/tcache.tgz"])
#   bash .gpuhost/g/install.sh; ATREX_BENCH_COMMIT=<sha> R86_CAP=570 bash scripts/calls/gdn-r86.sh
. scripts/gdn-call.sh
nvidia-smi --query-gpu=name --format=csv,noheader > "$OUT/smi.txt"; cat "$OUT/smi.txt"
GDN_CASES=varlen16x1024_H32_HV32 gdn_sweep 140 default,rc_qreg_o152,rc_qreg_o200,rc_qreg_o216,rc_slot_o184
mv "$OUT/gdnv" "$OUT/gdnv_varlen"; mv "$OUT/sweep.log" "$OUT/sweep_varlen.log"
GDN_CASES=T8192_H16_HV32,T32768_H16_HV32 gdn_sweep 190 default,ws_o160,ws_o200
gdn_bench_case "${R86_CAP:-570}" 150 varlen
grep -h "^| perf" "$OUT"/graph/*/bench_*.md | cut -c1-160
gdn_target_tests_left "${R86_CAP:-570}"
gdn_archive r86
