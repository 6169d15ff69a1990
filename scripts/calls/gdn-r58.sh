# Round 16, call r58 (r57's sweep ran out of time compiling fla's fp16 kernels): bench_gdn on the fp16 cases, default
# (the fast path, round 16) against "slow_path" (the round-1 pair fp16 inputs took until round 16), fla-core 0.6 fp16
# in the same process, value heads 0, 5, 31 checked against the float64 recurrence.
#   bash .gpuhost/g/install.sh; bash scripts/calls/gdn-r58.sh
. scripts/gdn-call.sh
C=T8192_H16_HV32_fp16,varlen16x1024_H32_HV32_fp16
timeout 420 python3 -m atrex_nvidia.chunk_gdn.sm90.bench_gdn --out "$OUT/gdnv" --sweep --ref-heads 0,5,31 \
  --deadline 400 --cases $C --sweep-cases $C --variants default,slow_path > "$OUT/sweep.log" 2>&1
echo "sweep exit $?"; grep "^| [Tv]" "$OUT/gdnv/gdn_bench.md" | tail -n 30 | cut -c1-220
gdn_archive r58
