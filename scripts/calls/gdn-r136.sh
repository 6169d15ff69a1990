# Round 36, call r136 (any sm90 card): GL_RC_SCHEDULE (the persistent varlen state pass's longest-first item order,
# off until measured) on a GPU for the first time.
#   1. test_item_schedule_same_bits: bit for bit the call without it, gl_rc and gl_rc2, full and 13-CTA grids, and the
#      order equal to the Python reference;
#   2. bench_gdn graph sweep with the perf cases' fp32 initial states, ATREX alone: default against `sched` on the mixed
#      serving batches in two sequence orders (mixed8 / mixed8p, mixed20 / mixed20p: round-robin's longest CTA 64 / 56
#      and 88 / 70 chunk steps) and the varlen goal batch (equal lengths: nothing to gain, the schedule's cost).
#   (r136 ran `default,sched` only: sched_snake came after it; R136_MORE sets the third variant.)
#   With R136_GOAL=1 on an H200 the varlen goal record first (ATREX_BENCH_COMMIT=<sha>). R136_TEST_S, R136_SWEEP_S: caps.
#   (carry [".gpuhost/g", ".gpuhost/tcache.tgz"]; the cache: scripts/gdn_host_cache.py --h0 --variants default,sched
#   --cases mixed8_H8_HV16,mixed20_H16_HV32,varlen16x1024_H32_HV32)
#   bash .gpuhost/g/install.sh; OUT=$OUT bash scripts/calls/gdn-r136.sh
. scripts/gdn-call.sh
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader | tee "$OUT/smi.txt"
# on an H200 first the varlen goal record at main's defaults, with fla-core 0.6 in the same run (~100 s)
[ -n "${R136_GOAL:-}" ] && grep -q H200 "$OUT/smi.txt" && gdn_bench_cases 140 130 r136 varlen
gdn_tests_k ${R136_TEST_S:-150} "item_schedule" r136-sched.log
GDN_CASES=mixed8_H8_HV16,mixed8p_H8_HV16,mixed20_H16_HV32,mixed20p_H16_HV32,varlen16x1024_H32_HV32 \
  GDN_SWEEP_ARGS="--no-fla --graph --h0" gdn_sweep ${R136_SWEEP_S:-150} default,sched,${R136_MORE:-sched_snake}
gdn_archive r136
