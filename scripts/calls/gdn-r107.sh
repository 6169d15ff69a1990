# Round 31, call r107 (any sm90 card; on an H200 also the goal records): GL_RC2_KNORM (gl_rc2's output partition
# normalises the raw k tiles in shared memory with the intra kernel's row norms; no normalised k copy) checked and
# measured in one call.
#   1. its GPU cases (test_rc2_knorm: 7 cases, bit for bit the call without it on the full grid and on 3 CTAs);
#   2. bench_gdn sweep by graph replay, varlen 16x1024 with the perf case's fp32 initial state (--h0), ATREX alone:
#      default, knorm; twice (two processes);
#   3. the varlen graph bench with fla-core 0.6 in the same run with knorm on (history records of "<sha>+knorm");
#   4. ncu of gl_rc2 with knorm;
#   5. on an H200 only: the T=32768 and T=8192 graph benches with fla (records of <sha>; KNORM plans nothing there).
#   (carry [".gpuhost/g", ".gpuhost/tcache.tgz"]: scripts/gdn_host_cache.py --h0 --variants default,knorm --cases
#   varlen16x1024_H32_HV32, merged with --variants default --cases T32768_H16_HV32,T8192_H16_HV32)
#   bash .gpuhost/g/install.sh; ATREX_BENCH_COMMIT=<sha> bash scripts/calls/gdn-r107.sh
# (Ran on an H100 at commit ee7fc2d. GL_RC2_KNORM was removed in round 31, so this script needs that commit's tree; the
# results are in BENCH_H200.md's round 31.)
. scripts/gdn-call.sh
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader > "$OUT/smi.txt"; cat "$OUT/smi.txt"
sha="${ATREX_BENCH_COMMIT:-unknown}"
gdn_tests_k 150 "rc2_knorm" tests_knorm.log
gdn_sweep_twice default,knorm
gdn_archive r107
ATREX_BENCH_COMMIT="$sha+knorm" gdn_bench_case 380 140 varlen "import atrex_nvidia.chunk_gdn.sm90.launch as L; L.GL_RC2_KNORM = True"
grep -h "^| perf" "$OUT"/graph/varlen/bench_*.md 2>/dev/null | cut -c1-140
gdn_archive r107
if grep -q H200 "$OUT/smi.txt"; then
  ATREX_BENCH_COMMIT="$sha" gdn_bench_cases 560 110 r107 T32768 T8192-H16-HV32
elif [ $(( 440 - SECONDS )) -ge 30 ]; then
  gdn_ncu 25 rc2_knorm "atrex_sm90_gdn_state_output_gl_rc2" varlen16x1024_H32_HV32 GL_RC2_KNORM=True
  gdn_ncu 25 intra_knorm "atrex_sm90_gdn_intra_chunk_v3" varlen16x1024_H32_HV32 GL_RC2_KNORM=True
  gdn_archive r107
fi
