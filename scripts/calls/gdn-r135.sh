# Round 36, call r135 (any sm90 card). Never ran: no machine started for it. r136 (gdn-r136.sh) measured its
# reordered batches (mixed8p, mixed20p) beside the schedule instead.
#   on an H200: the three goal records with fla-core 0.6 in the same run, one case per process (varlen 16x1024,
#   T=32768, T=8192; ~420 s);
#   on any other card: how much the persistent state pass's static item order costs the mixed serving batches. The
#   same batches in two sequence orders (bench_gdn mixed8 / mixed8p, mixed20 / mixed20p: the longest CTA's chunk steps
#   64 / 56 and 88 / 70 under the round-robin hand-out), bench_gdn graph sweep with the perf cases' fp32 initial
#   states, ATREX alone, two processes.
#   (carry [".gpuhost/g", ".gpuhost/tcache.tgz"]; the cache as gdn-r134.sh's)
#   bash .gpuhost/g/install.sh; ATREX_BENCH_COMMIT=<sha> OUT=$OUT bash scripts/calls/gdn-r135.sh
. scripts/gdn-call.sh
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader | tee "$OUT/smi.txt"
if grep -q H200 "$OUT/smi.txt"; then
  gdn_bench_cases 420 140 r135 varlen T32768 T8192-H16-HV32
  exit 0
fi
root="$OUT"
for i in 1 2; do
  OUT="$root/order$i"; mkdir -p "$OUT"
  GDN_CASES=mixed8_H8_HV16,mixed8p_H8_HV16,mixed20_H16_HV32,mixed20p_H16_HV32 GDN_SWEEP_ARGS="--no-fla --graph --h0" \
    gdn_sweep 90 default
done
OUT="$root"
gdn_archive r135
