# Round 30, call r103 (an H200 only; exits at once on any other card): the H200 goal records at round 30's defaults
# (GL_RC_H0_PREFETCH = 1) in one call (~400 s). The whole target file passed at these defaults on an H100 (r103h).
#   1. the graph benches with fla-core 0.6 in the same run, one case per process: varlen 16x1024, T=32768 (history
#      records of <sha>; the H200 goal table);
#   2. bench_gdn sweep by graph replay, varlen 16x1024 with the perf case's fp32 initial state (--h0), ATREX alone:
#      the prefetch off (h0pf0) against the default;
#   3. the T=8192 graph bench with what is left before 420 s.
#   (carry [".gpuhost/g", ".gpuhost/tcache.tgz"]; the cache: scripts/gdn_host_cache.py --h0 --variants
#   default,h0pf0,h0pf2 --cases varlen16x1024_H32_HV32, merged with --variants default --cases
#   T32768_H16_HV32,T8192_H16_HV32) bash .gpuhost/g/install.sh; ATREX_BENCH_COMMIT=<sha> bash scripts/calls/gdn-r103.sh
. scripts/gdn-call.sh
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader > "$OUT/smi.txt"; cat "$OUT/smi.txt"
grep -q H200 "$OUT/smi.txt" || { echo "not an H200: nothing run"; exit 0; }
gdn_bench_cases 300 140 r103 varlen T32768
root="$OUT"; OUT="$root/sweep"; mkdir -p "$OUT"
GDN_CASES=varlen16x1024_H32_HV32 GDN_SWEEP_ARGS="--no-fla --graph --h0" gdn_sweep 70 h0pf0,default
OUT="$root"
gdn_archive r103
gdn_bench_cases 420 110 r103 T8192-H16-HV32
