# Round 19, call r71 (written without a GPU: none was lent in round 19): INTRA_V3_DIAG16 (the v3 fp16 inverse's four
# 16x16 diagonal blocks per warp, kernels._diag16_inverse) on the H200:
#   1. its GPU cases (test_intra_diag16, the inverse's accuracy rows against float64, the variant hooks on the variant
#      cases), and those of the packed slot map (INTRA_SLOT_MAP "packed": test_intra_slot_map, its variant hook);
#   2. one intra program's latency alone on its SM and at 2 / 4 / 8 per SM, without and with it, and with it at 128
#      registers with masked products (four CTAs per SM) (r70's measurement);
#   3. a bench_gdn sweep against the default on the goal cases and T=8192/32/32 (fixed-length one-head programs).
#   bash .gpuhost/g/install.sh; bash scripts/gdn-r71.sh
. scripts/gdn-call.sh
gdn_target_tests 200 "diag16 or ut_inverse or slot_map"
for h in "" "--hook INTRA_V3_DIAG16=True" "--hook INTRA_V3_DIAG16=True --hook INTRA_V3_MASK_OUT=True --hook INTRA_V3_MAXNREG=128"; do
  timeout 80 python3 scripts/gdn_intra_latency.py $h >> "$OUT/latency.log" 2>&1; echo "latency exit $?"
done
grep LAT "$OUT/latency.log" | cut -c1-300
GDN_CASES=T8192_H16_HV32,T32768_H16_HV32,varlen16x1024_H32_HV32,T8192_H32_HV32 gdn_sweep 290 default,i3_d16,i3_d16_r128
gdn_archive r71
