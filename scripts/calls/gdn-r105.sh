# Round 31, call r105 (any sm90 card; the comparison is in one run): GL_RC2_KRAW (gl_rc2 on the raw k and the
# intra kernel's k row norms plane, no normalised k copy) measured and checked in one call (~400 s).
#   1. bench_gdn sweep by graph replay, varlen 16x1024 with the perf case's fp32 initial state (--h0), ATREX alone:
#      default, kraw; twice (two processes);
#   2. its GPU cases (test_rc2_kraw: 7 cases against the float64 recurrence, bounds set before this run), cut at 250 s;
#   3. the varlen graph bench with fla-core 0.6 in the same run with kraw on (history records of "<sha>+kraw"), cut at
#      370 s;
#   4. ncu of the intra kernel and gl_rc2 with kraw, with what is left before 440 s.
#   (carry [".gpuhost/g", ".gpuhost/tcache.tgz"]: scripts/gdn_host_cache.py --h0 --variants default,kraw --cases
#   varlen16x1024_H32_HV32, merged with --variants default --cases T32768_H16_HV32,T8192_H16_HV32)
#   bash .gpuhost/g/install.sh; ATREX_BENCH_COMMIT=<sha>+kraw bash scripts/calls/gdn-r105.sh
# (Ran on an H100 at commit df474cb. GL_RC2_KRAW was removed in round 31, so this script needs that commit's tree; the
# results are in BENCH_H200.md's round 31.)
. scripts/gdn-call.sh
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader > "$OUT/smi.txt"; cat "$OUT/smi.txt"
gdn_sweep_twice default,kraw
gdn_archive r105
gdn_tests_k $(( 250 - SECONDS )) "rc2_kraw" tests_kraw.log
gdn_archive r105
gdn_bench_case 370 140 varlen "import atrex_nvidia.chunk_gdn.sm90.launch as L; L.GL_RC2_KRAW = True"
grep -h "^| perf" "$OUT"/graph/varlen/bench_*.md 2>/dev/null | cut -c1-140
gdn_archive r105
if [ $(( 440 - SECONDS )) -ge 40 ]; then
  gdn_ncu 25 intra_kraw "atrex_sm90_gdn_intra_chunk_v3" varlen16x1024_H32_HV32 GL_RC2_KRAW=True
  gdn_ncu 25 rc2_kraw "atrex_sm90_gdn_state_output_gl_rc2" varlen16x1024_H32_HV32 GL_RC2_KRAW=True
  gdn_archive r105
fi
