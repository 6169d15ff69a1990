# Round 35, call r133 (any sm90 card): the composition at 8 columns (SEQ_PAR_SCAN_BV, round 35's default) and
# through TMA descriptors (SEQ_PAR_SCAN_DESC, off until measured).
#   on an H200: the varlen and T=32768 goal records at main's defaults (~300 s; device time), the plan's tests;
#   then on any card: the plan's and the composition's target tests; the composition alone (scripts/gdn_scan_probe.py,
#   descriptors against pointers); a graph sweep, ATREX alone, at TP 4 and TP 8 (the default against descriptors at 8
#   and 16 columns and round 34's 16 columns); the serve-tp8 graph bench with fla-core 0.6 in the same run.
#   (carry [".gpuhost/g", ".gpuhost/tcache.tgz"]) bash .gpuhost/g/install.sh; ATREX_BENCH_COMMIT=<sha> OUT=$OUT \
#   bash scripts/calls/gdn-r133.sh
# (after r133 the descriptor form and its variants scan_desc / scan_desc_bv16 were removed: rerun this at 1388f0c)
. scripts/gdn-call.sh
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader | tee "$OUT/smi.txt"
root="$OUT"
if grep -q H200 "$OUT/smi.txt"; then
  gdn_bench_cases 300 140 r133 varlen T32768
  gdn_tests_k $(( 380 - SECONDS )) "seq_parallel or segment_scan" r133-seq.log
  gdn_archive r133
  exit 0
fi
gdn_tests_k 90 "seq_parallel or segment_scan" r133-seq.log
timeout 90 python3 scripts/gdn_scan_probe.py --prec tf32x3 --bvs 8 16 --warps 8 --stages 2 3 --out "$root/scan_probe.json" \
  > "$root/scan_probe.log" 2>&1; echo "scan probe exit $?"; grep -E "^ +[0-9]" "$root/scan_probe.log" | sort -n -k1,1 -k2,2 -k8,8 | head -40
OUT="$root/graph"; mkdir -p "$OUT"
GDN_CASES=T4096_H4_HV8,T8192_H4_HV8,T32768_H4_HV8,T4096_H2_HV4,T8192_H2_HV4 GDN_SWEEP_ARGS="--no-fla --graph" \
  gdn_sweep 90 default,scan_desc,scan_desc_bv16,scan_bv16
OUT="$root"
gdn_archive r133
gdn_bench_cases 300 100 r133 serve-tp8
