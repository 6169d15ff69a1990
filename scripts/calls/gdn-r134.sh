# Round 36, call r134 (any sm90 card; main's defaults since round 35, commit d76ca6c's kernels).
#   on an H200: the three goal records with fla-core 0.6 in the same run, one case per process (varlen 16x1024,
#   T=32768, T=8192; ~420 s), then the serve rows with what is left before 560 s;
#   on any other card: the serve rows against fla-core 0.6 in one process (`--match serve`, the README rows at round
#   35's composition), then the whole sm90 target file at the final tree.
#   (carry [".gpuhost/g", ".gpuhost/tcache.tgz"]; the cache: scripts/gdn_host_cache.py --h0 --variants default --cases
#   varlen16x1024_H32_HV32,mixed8_H8_HV16,mixed20_H16_HV32, merged with --variants default --cases
#   T32768_H16_HV32,T8192_H16_HV32,T8192_H4_HV8,T32768_H4_HV8,T8192_H2_HV4)
#   r134 gave the serve bench 180 s and it timed out (five cases with fla autotuning need ~300 s, as r130 gave them);
#   r134b reruns it with 300 s. R134_H200_ONLY=1: nothing on other cards (r134c and later: the goal records only).
#   bash .gpuhost/g/install.sh; ATREX_BENCH_COMMIT=<sha> OUT=$OUT bash scripts/calls/gdn-r134.sh
. scripts/gdn-call.sh
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader | tee "$OUT/smi.txt"
if grep -q H200 "$OUT/smi.txt"; then
  gdn_bench_cases 420 140 r134 varlen T32768 T8192-H16-HV32
  [ -z "${R134_H200_ONLY:-}" ] && gdn_bench_cases 560 130 r134 serve
  exit 0
fi
[ -n "${R134_H200_ONLY:-}" ] && { echo "not an H200: nothing run"; exit 0; }
gdn_bench_cases 330 300 r134 serve
[ -n "${R134_TESTS:-}" ] && gdn_target_tests_left 560  # (r134 ran it: 550 passed; r134b did not)
gdn_archive r134
