# Round 30, call r103 (an H200): the initial-state prefetch measured and checked, and the H200 goal records at the
# current defaults, in one call (~590 s).
#   1. bench_gdn sweep by graph replay, varlen 16x1024 with the perf case's fp32 initial state (--h0), ATREX alone:
#      default, h0pf1, h0pf2;
#   2. the prefetch's GPU cases (test_rc_h0_prefetch_same_bits, 24), cut at 330 s;
#   3. the graph benches with fla-core 0.6 in the same run at the defaults, one case per process: varlen 16x1024
#      (cut at 460 s), T=32768 (cut at 590 s); history records of <sha>.
#   (carry [".gpuhost/g", ".gpuhost/tcache.tgz"]; the cache: scripts/gdn_host_cache.py --h0 --variants
#   default,h0pf1,h0pf2 --cases varlen16x1024_H32_HV32, merged with --variants default --cases
#   T32768_H16_HV32,T8192_H16_HV32) bash .gpuhost/g/install.sh; ATREX_BENCH_COMMIT=<sha> bash scripts/gdn-r103.sh
. scripts/gdn-call.sh
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader > "$OUT/smi.txt"; cat "$OUT/smi.txt"
root="$OUT"; OUT="$root/sweep"; mkdir -p "$OUT"
GDN_CASES=varlen16x1024_H32_HV32 GDN_SWEEP_ARGS="--no-fla --graph --h0" gdn_sweep 170 default,h0pf1,h0pf2
OUT="$root"
gdn_archive r103
gdn_tests_k $(( 330 - SECONDS )) "h0_prefetch" tests_h0pf.log
gdn_archive r103
gdn_bench_case 460 140 varlen
gdn_archive r103
gdn_bench_case 590 140 T32768
grep -h "^| perf" "$OUT"/graph/*/bench_*.md 2>/dev/null | cut -c1-140
gdn_archive r103
