# Round 31, call r106 (any sm90 card; on an H200 also the goal records): GL_RC2_KRAW's second form (the intra kernel's
# K K^T from the raw k scaled by the norms, the state pass's normalised k) checked and measured in one call.
#   1. its GPU cases (test_rc2_kraw: 7 cases against the float64 recurrence; the bounds r105 set, unchanged);
#   2. bench_gdn sweep by graph replay, varlen 16x1024 with the perf case's fp32 initial state (--h0), ATREX alone:
#      default, kraw; twice (two processes);
#   3. the varlen graph bench with fla-core 0.6 in the same run with kraw on (history records of "<sha>+kraw");
#   4. on an H200 only: the T=32768 and T=8192 graph benches with fla (records of <sha>; KRAW plans nothing there:
#      their state pass is gl_ws).
#   (carry [".gpuhost/g", ".gpuhost/tcache.tgz"]: scripts/gdn_host_cache.py --h0 --variants default,kraw --cases
#   varlen16x1024_H32_HV32, merged with --variants default --cases T32768_H16_HV32,T8192_H16_HV32)
#   bash .gpuhost/g/install.sh; ATREX_BENCH_COMMIT=<sha> bash scripts/calls/gdn-r106.sh
# (Ran on an H100 at commit 65f4ecb. GL_RC2_KRAW's second form was removed in round 31, so this script needs that commit's tree; the
# results are in BENCH_H200.md's round 31.)
. scripts/gdn-call.sh
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader > "$OUT/smi.txt"; cat "$OUT/smi.txt"
sha="${ATREX_BENCH_COMMIT:-unknown}"
gdn_tests_k 150 "rc2_kraw" tests_kraw.log
gdn_sweep_twice default,kraw
gdn_archive r106
ATREX_BENCH_COMMIT="$sha+kraw" gdn_bench_case 380 140 varlen "import atrex_nvidia.chunk_gdn.sm90.launch as L; L.GL_RC2_KRAW = True"
grep -h "^| perf" "$OUT"/graph/varlen/bench_*.md 2>/dev/null | cut -c1-140
gdn_archive r106
if grep -q H200 "$OUT/smi.txt"; then
  ATREX_BENCH_COMMIT="$sha" gdn_bench_cases 560 110 r106 T32768 T8192-H16-HV32
fi
