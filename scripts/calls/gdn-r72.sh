# Round 19, call r72 (written without a GPU: none was lent in round 19), after r71:
#   1. one intra program's latency alone on its SM and at 2 / 4 / 8 per SM (r70's measurement), without DIAG16, with
#      it, and with it at 128 registers with masked products (four CTAs per SM);
#   2. the packed slot map (INTRA_SLOT_MAP "packed": each varlen slot's token range, one load level before a program's
#      tile loads) alone and with the 128-register DIAG16 configuration, on the varlen goal case and T=8192/16/32
#      (where it must change nothing: fixed-length calls have no map);
#   3. one value head per program for the GVA cases at 128 registers with DIAG16 (i3_d16_gs1_r128).
# Sweeps by bench_gdn in the same process as fla. Budget: ~520 s of the 600 s a call may run.
#   (carry [".gpuhost/g", ".gpuhost/tcache.tgz"]: the fla bundle and the Triton cache prebuilt by scripts/gdn_host_cache.py)
#   bash .gpuhost/g/install.sh; bash scripts/calls/gdn-r72.sh
. scripts/gdn-call.sh
for h in "" "--hook INTRA_V3_DIAG16=True" "--hook INTRA_V3_DIAG16=True --hook INTRA_V3_MASK_OUT=True --hook INTRA_V3_MAXNREG=128"; do
  timeout 55 python3 scripts/gdn_intra_latency.py $h >> "$OUT/latency.log" 2>&1; echo "latency exit $?"
done
grep LAT "$OUT/latency.log" | cut -c1-300
root="$OUT"  # each sweep in its own folder (gdn_sweep writes $OUT/gdnv and $OUT/sweep.log)
OUT="$root/packed"; mkdir -p "$OUT"
GDN_CASES=varlen16x1024_H32_HV32,T8192_H16_HV32 gdn_sweep 200 default,i3_map_packed,i3_d16_r128_packed
OUT="$root/gs1"; mkdir -p "$OUT"
GDN_CASES=T8192_H16_HV32,T32768_H16_HV32 gdn_sweep 140 default,i3_d16_gs1_r128
OUT="$root"
gdn_archive r72
