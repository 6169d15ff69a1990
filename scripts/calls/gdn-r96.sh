# Round 27, call r96: GL_RC_QNORM_MMA switched on in the call's tree (r95: its 28 GPU cases passed with the K-major ones
# tile), on top of r95's defaults; if the target file passes, switch it on in the tree. One call, the goal records first:
#   1. graph bench of varlen 16x1024 with fla-core 0.6 in the same run (history record);
#   2. the whole sm90 target file;
#   3. Nsight Compute of gl_rc2 on varlen 16x1024 (what bounds its step: scripts/gdn_sass_samples.py), if time is left.
#   (carry [".gpuhost/g", ".gpuhost/tcache.tgz"])
#   bash .gpuhost/g/install.sh; ATREX_BENCH_COMMIT=<sha> GDN_TEST_WORKERS=14 bash scripts/calls/gdn-r96.sh
. scripts/gdn-call.sh
sed -i -E 's/^GL_RC_QNORM_MMA = False$/GL_RC_QNORM_MMA = True/' packages/nvidia/src/atrex_nvidia/chunk_gdn/sm90/launch.py
grep -E "^GL_RC_(QSCALE|EARLY_FREE|OUT_TMA|TWO_CHAINS|QNORM_MMA) =" packages/nvidia/src/atrex_nvidia/chunk_gdn/sm90/launch.py | tr '\n' ' '; echo
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader > "$OUT/smi.txt"; cat "$OUT/smi.txt"
gdn_bench_case "${R96_CAP:-420}" 110 varlen
grep -h "^| perf" "$OUT"/graph/varlen/bench_*.md 2>/dev/null | cut -c1-140
gdn_target_tests 200
t=$(( ${R96_CAP:-420} - SECONDS ))
if [ "$t" -ge 50 ]; then gdn_ncu "$t" rc2 gl_rc2 varlen16x1024_H32_HV32; else echo "ncu skipped (${t}s left)"; fi
gdn_archive r96
