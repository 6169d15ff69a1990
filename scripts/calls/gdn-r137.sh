# Round 37, call r137 (any sm90 card; ~560 s on an H200, ~200 s on an H100).
#   On an H200: the goal records at main's defaults with fla-core 0.6 in the same run, one case per process (varlen
#   16x1024, T=32768, T=8192; history records of ATREX_BENCH_COMMIT), then the schedule sweep with what is left.
#   On any other card (~280 s): test_item_schedule_same_bits (both forms, bit for bit) and the schedule sweep.
#   Round 37's tree: the schedule kernel runs second in the call (after the chunk offsets), no longer right before
#   the state kernel; the state kernel's partitions load each slot's entry an item ahead. The sweep runs twice.
#   The schedule sweep: bench_gdn graph replay with fp32 initial states, ATREX alone: default / sched / sched_snake on
#   the mixed serving batches (two sequence orders) and the varlen goal batch; from 1668466 on also sched_cta (the snake
#   order formed in the state kernel's prologue, no schedule kernel).
#   (carry [".gpuhost/g", ".gpuhost/tcache.tgz"]; the cache: scripts/gdn_host_cache.py --h0 --variants
#   default,sched,sched_snake --cases mixed8_H8_HV16,mixed20_H16_HV32,varlen16x1024_H32_HV32, merged with --variants
#   default --cases T32768_H16_HV32,T8192_H16_HV32,varlen16x1024_H32_HV32)
#   bash .gpuhost/g/install.sh; ATREX_BENCH_COMMIT=<sha> bash scripts/calls/gdn-r137.sh
. scripts/gdn-call.sh
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader | tee "$OUT/smi.txt"
if grep -q H200 "$OUT/smi.txt"; then
  gdn_bench_cases 420 140 r137 varlen T32768 T8192-H16-HV32; cap=${R137_CAP:-575}
else
  gdn_tests_k ${R137_TEST_S:-110} "item_schedule" r137-sched.log; cap=${R137_CAP:-280}
fi
root="$OUT"
for i in 1 2; do  # (two processes: the spread between processes, as in r136)
  t=$(( cap - SECONDS ))
  if [ "$t" -ge 60 ]; then
    OUT="$root/sweep$i"; mkdir -p "$OUT"
    GDN_CASES=mixed8_H8_HV16,mixed8p_H8_HV16,mixed20_H16_HV32,mixed20p_H16_HV32,varlen16x1024_H32_HV32 \
      GDN_SWEEP_ARGS="--no-fla --graph --h0" gdn_sweep $(( t < 150 ? t : 150 )) default,sched,sched_snake,sched_cta
    OUT="$root"
  else
    echo "sweep $i skipped (${t}s left)"
  fi
done
if [ -n "${R137_NCU:-}" ]; then  # Nsight Compute duration of the state kernel alone, varlen 16x1024 (r138's check)
  for v in def:GL_RC_SCHEDULE=False cta:GL_RC_SCHEDULE=cta snake:GL_RC_SCHEDULE=snake; do
    gdn_ncu_duration "${v%%:*}" varlen16x1024_H32_HV32 "${v#*:}"
  done
fi
gdn_archive r137
