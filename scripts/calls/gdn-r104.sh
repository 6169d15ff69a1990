# Round 30, call r104 (ran on an H100 at commit 83e7f98; GL_RC2_KFOLD lost and was removed after it: commits 83e7f98 and
# 28dee2f hold its code, BENCH_H200.md round 30 the results): GL_RC2_KFOLD (gl_rc2 on the raw k, the k norms folded into the factor planes) measured and
# checked in one call (~330 s).
#   1. bench_gdn sweep by graph replay, varlen 16x1024 with the perf case's fp32 initial state (--h0), ATREX alone:
#      default, kfold; twice (two processes);
#   2. its GPU cases (test_rc2_kfold: 7 cases against the float64 recurrence and the call without it), cut at 260 s;
#   3. the varlen graph bench with fla-core 0.6 in the same run with kfold on (history records of "<sha>+kfold"),
#      cut at 400 s.
#   (carry [".gpuhost/g", ".gpuhost/tcache.tgz"]: scripts/gdn_host_cache.py --h0 --variants default,kfold --cases
#   varlen16x1024_H32_HV32) bash .gpuhost/g/install.sh; ATREX_BENCH_COMMIT=<sha>+kfold bash scripts/calls/gdn-r104.sh
. scripts/gdn-call.sh
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader > "$OUT/smi.txt"; cat "$OUT/smi.txt"
gdn_sweep_twice default,kfold
gdn_archive r104
gdn_tests_k $(( 260 - SECONDS )) "rc2_kfold" tests_kfold.log
gdn_archive r104
gdn_bench_case 400 140 varlen "import atrex_nvidia.chunk_gdn.sm90.launch as L; L.GL_RC2_KFOLD = True"
grep -h "^| perf" "$OUT"/graph/varlen/bench_*.md 2>/dev/null | cut -c1-140
gdn_archive r104
