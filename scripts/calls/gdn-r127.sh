# Round 34, call r127 (any sm90 card): the sequence-parallel state pass's first GPU run (SEQ_PARALLEL, on by default in
# this tree): its target tests, then its graph-replay sweep against the single-chain plan (no_seqpar) at Qwen3-Next's
# TP 4 / TP 8 heads, 1k-32k tokens, ATREX alone, then the whole sm90 target file with the time left (~560 s in all).
#   (carry [".gpuhost/g", ".gpuhost/tcache.tgz"]; the cache: scripts/gdn_host_cache.py --variants
#   default,no_seqpar,seqpar_c8,seqpar_bv64 --cases <GDN_CASES below>) bash .gpuhost/g/install.sh; OUT=$OUT bash scripts/calls/gdn-r127.sh
. scripts/gdn-call.sh
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader | tee "$OUT/smi.txt"
gdn_tests_k 150 "seq_parallel or segment_scan or one_sequence" r127-seq.log
root="$OUT"; OUT="$root/sweep"; mkdir -p "$OUT"
GDN_CASES=T1024_H4_HV8,T2048_H4_HV8,T4096_H4_HV8,T8192_H4_HV8,T32768_H4_HV8,T8192_H2_HV4,varlen1x8192_H4_HV8 \
  GDN_SWEEP_ARGS="--no-fla --graph" gdn_sweep 150 default,no_seqpar,seqpar_c8,seqpar_bv64
OUT="$root"
gdn_archive r127
GDN_TEST_WORKERS=14 gdn_target_tests $(( 560 - SECONDS ))
gdn_archive r127
