# Round 33, call r123 (asked for nvidia-h200; any sm90 card): ONE_SEQUENCE_FIXED (a one-sequence varlen call takes the
# fixed-length plan) and GL_RC2_ITEMS_PER_SM:
#   1. their target tests (the one-sequence test, the fewer-items test, the fp16 default test, the split-state-pass
#      tests whose varlen check changed);
#   2. bench_gdn graph sweep without fla: one 8192-token sequence as varlen at TP 4 and at the goal heads, the default
#      against one_seq_varlen (the varlen plan), in two processes.
#   (carry [".gpuhost/tcache.tgz"]) ATREX_BENCH_COMMIT=<sha> OUT=$OUT bash scripts/calls/gdn-r123.sh
. scripts/gdn-call.sh
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee "$OUT/smi.txt"
gdn_tests_k 120 "one_sequence or fewer_items or fp16_default or split_and_carry or split_state" tests_r123.log
root="$OUT"
for i in 1 2; do
  OUT="$root/sweep$i"; mkdir -p "$OUT"
  GDN_CASES=varlen1x8192_H4_HV8,varlen1x8192_H16_HV32 GDN_SWEEP_ARGS="--no-fla --graph" gdn_sweep 70 \
    default,one_seq_varlen > /dev/null
  grep -E "^\| [A-Za-z0-9_]+ \| (default|one_seq_varlen) \|" "$OUT/gdnv/gdn_bench.md" | cut -c1-60
done
OUT="$root"; gdn_archive r123
