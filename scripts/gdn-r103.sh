# Round 29, call r103: scripts/gdn-r102.sh without its fla bench, for ~200 s of device time (what was left):
#   1. bench_gdn sweep by graph replay, varlen 16x1024 with an fp32 initial state (--h0), ATREX alone: default,
#      h0pf1, h0pf2;
#   2. test_rc_h0_prefetch_same_bits with what is left before 190 s.
#   (carry [".gpuhost/g", ".gpuhost/tcache.tgz"], the cache of gdn-r102.sh) bash scripts/gdn-r103.sh
. scripts/gdn-call.sh
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader > "$OUT/smi.txt"; cat "$OUT/smi.txt"
root="$OUT"; OUT="$root/sweep"; mkdir -p "$OUT"
GDN_CASES=varlen16x1024_H32_HV32 GDN_SWEEP_ARGS="--no-fla --graph --h0" gdn_sweep 100 default,h0pf1,h0pf2
OUT="$root"
gdn_archive r103
gdn_tests_k $(( 190 - SECONDS )) "h0_prefetch" tests_h0pf.log
gdn_archive r103
