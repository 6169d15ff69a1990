# Round 33, call r121 (asked for nvidia-h200): on an H200 the goal records (scripts/calls/gdn-r103.sh, ~420 s); on an
# H100: r120 found gl_rc2 (two chains per CTA, the many-program default) 23% slower than one chain per CTA (gl_rc) on
# the TP 2 mixed batch (8 sequences x 16 value heads: fewer two-chain items than SMs). This sweeps default (gl_rc2)
# against rc1 (gl_rc, one chain per CTA) and gl_ws, by graph replay with fp32 initial states (--h0), ATREX alone, on
# balanced and mixed batches with sequences x value heads from 64 to 640, in two processes.
#   (carry [".gpuhost/g", ".gpuhost/tcache.tgz"]) ATREX_BENCH_COMMIT=<sha> OUT=$OUT bash scripts/calls/gdn-r121.sh
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  bash .gpuhost/g/install.sh > /dev/null 2>&1
  exec bash scripts/calls/gdn-r103.sh
fi
. scripts/gdn-call.sh
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee "$OUT/smi.txt"
root="$OUT"
for i in 1 2; do
  OUT="$root/sweep$i"; mkdir -p "$OUT"
  GDN_CASES=mixed8_H8_HV16,varlen8x1024_H8_HV16,varlen4x2048_H8_HV16,mixed20_H16_HV32,varlen16x1024_H32_HV32 \
    GDN_SWEEP_ARGS="--no-fla --graph --h0" gdn_sweep 150 default,rc1,gl_ws > /dev/null
  grep -E "^\| [A-Za-z0-9_]+ \| (default|rc1|gl_ws) \|" "$OUT/gdnv/gdn_bench.md" | cut -c1-60
done
OUT="$root"; gdn_archive r121
