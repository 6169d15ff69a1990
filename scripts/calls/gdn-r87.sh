# Round 25, call r87 (the session's last device time), at the round-25 default (GL_RC_QREG, GL_RC_OUT_REGS 184):
#   1. bench_gdn's sweep on varlen 16x1024: the default against the one-head QSIDE intra programs at a 128-register cap
#      (INTRA_V3_QSIDE_MAXNREG: four CTAs per SM; with and without masked products) and gl_rc at 200 output registers;
#   2. if the 128 cap's intra kernel is faster by more than 5 us: the call's tree takes INTRA_V3_QSIDE_MAXNREG = 128,
#      runs the whole sm90 target file and the graph bench of varlen 16x1024 (fla-core 0.6 in the same run);
#      otherwise the graph bench of T=32768/16/32 at the default.
#   (carry [".gpuhost/g", ".gpuhost/tcache.tgz"])
#   bash .gpuhost/g/install.sh; ATREX_BENCH_COMMIT=<sha> R87_CAP=470 bash scripts/calls/gdn-r87.sh
. scripts/gdn-call.sh
nvidia-smi --query-gpu=name --format=csv,noheader > "$OUT/smi.txt"; cat "$OUT/smi.txt"
GDN_CASES=varlen16x1024_H32_HV32 gdn_sweep 140 default,i3q_r128,i3q_r128_mo,rc_qreg_o200
intra_ms() { grep "^| varlen16x1024_H32_HV32 | $1 |" "$OUT/gdnv/gdn_bench.md" | grep -o "intra_chunk_v3 [0-9.]*" | cut -d' ' -f2; }
d=$(intra_ms default); r=$(intra_ms i3q_r128)
echo "intra default ${d:-?} ms, 128-register cap ${r:-?} ms"
if [ -n "$d" ] && [ -n "$r" ] && python3 -c "import sys; sys.exit(0 if $r < $d - 0.005 else 1)"; then
  sed -i 's/^INTRA_V3_QSIDE_MAXNREG = None$/INTRA_V3_QSIDE_MAXNREG = 128/' \
    packages/nvidia/src/atrex_nvidia/chunk_gdn/sm90/launch.py
  echo "INTRA_V3_QSIDE_MAXNREG = 128 for the rest of this call"
  gdn_target_tests 170
  gdn_bench_case "${R87_CAP:-470}" 150 varlen
else
  gdn_bench_case "${R87_CAP:-470}" 150 T32768
fi
grep -h "^| perf" "$OUT"/graph/*/bench_*.md | cut -c1-160
gdn_archive r87
