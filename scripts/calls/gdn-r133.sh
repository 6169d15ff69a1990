# Round 35, call r133 (any sm90 card): the composition at 8 columns (SEQ_PAR_SCAN_BV, round 35's default).
#   on an H200 first: the goal records at main's defaults (gdn-r103.sh's steps, ~420 s);
#   then on any card: the plan's and the composition's target tests; a graph sweep, ATREX alone, at TP 4 and TP 8
#   (8 columns against round 34's 16); the serve-tp4/tp8 graph benches with fla-core 0.6 in the same run.
#   (carry [".gpuhost/g", ".gpuhost/tcache.tgz"]) bash .gpuhost/g/install.sh; ATREX_BENCH_COMMIT=<sha> OUT=$OUT \
#   bash scripts/calls/gdn-r133.sh
. scripts/gdn-call.sh
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader | tee "$OUT/smi.txt"
root="$OUT"
if grep -q H200 "$OUT/smi.txt"; then
  gdn_bench_cases 300 140 r133 varlen T32768
  OUT="$root/sweep"; mkdir -p "$OUT"
  GDN_CASES=varlen16x1024_H32_HV32 GDN_SWEEP_ARGS="--no-fla --graph --h0" gdn_sweep 70 h0pf0,default
  OUT="$root"
  gdn_archive r133
  gdn_bench_cases 420 110 r133 T8192-H16-HV32
  cap=590
else
  cap=380
fi
gdn_tests_k 90 "seq_parallel or segment_scan" r133-seq.log
OUT="$root/graph"; mkdir -p "$OUT"
GDN_CASES=T4096_H4_HV8,T8192_H4_HV8,T32768_H4_HV8,T4096_H2_HV4,T8192_H2_HV4 GDN_SWEEP_ARGS="--no-fla --graph" \
  gdn_sweep 80 default,scan_bv16
OUT="$root"
gdn_archive r133
gdn_bench_cases $cap 200 r133 serve-tp
