# Round 29, call r102: the initial-state prefetch (GL_RC_H0_PREFETCH, off) measured and checked in one call (~480 s).
#   Not run in round 29 (no device could be started after r101); for the next session.
#   1. bench_gdn sweep by graph replay, varlen 16x1024 with an fp32 initial state in the state_v_first layout (--h0:
#      the atrex bench perf case's form), ATREX alone: default, h0pf1, h0pf2;
#   2. its GPU cases (test_rc_h0_prefetch_same_bits: bit for bit the call without it, 24 cases), cut at 330 s;
#   3. the varlen graph bench with fla-core 0.6 in the same run, mode 1 switched on in the process (history records
#      of "<sha>+h0pf1"), cut at 470 s.
#   (carry [".gpuhost/g", ".gpuhost/tcache.tgz"]: scripts/gdn_host_cache.py --h0 --variants default,h0pf1,h0pf2
#   --cases varlen16x1024_H32_HV32) bash .gpuhost/g/install.sh; ATREX_BENCH_COMMIT=<sha>+h0pf1 bash scripts/calls/gdn-r102.sh
. scripts/gdn-call.sh
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader > "$OUT/smi.txt"; cat "$OUT/smi.txt"
root="$OUT"; OUT="$root/sweep"; mkdir -p "$OUT"
GDN_CASES=varlen16x1024_H32_HV32 GDN_SWEEP_ARGS="--no-fla --graph --h0" gdn_sweep 170 default,h0pf1,h0pf2
OUT="$root"
gdn_archive r102
gdn_tests_k $(( 330 - SECONDS )) "h0_prefetch" tests_h0pf.log
gdn_archive r102
gdn_bench_case 470 150 varlen "import atrex_nvidia.chunk_gdn.sm90.launch as L; L.GL_RC_H0_PREFETCH = 1"
grep -h "^| perf" "$OUT"/graph/varlen/bench_*.md 2>/dev/null | cut -c1-140
gdn_archive r102
