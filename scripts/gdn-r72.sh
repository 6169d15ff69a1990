# Round 19, call r72 (written without a GPU: none was lent in round 19), after r71: the packed slot map
# (INTRA_SLOT_MAP "packed": each varlen slot's token range, one load level before a program's tile loads) alone and
# with r71's 128-register DIAG16 configuration, on the varlen goal case and T=8192/16/32 (where it must change nothing:
# fixed-length calls have no map), bench_gdn sweep in the same process as fla; one value head per program for the GVA
# cases at 128 registers with DIAG16 (i3_d16_gs1_r128). Then `atrex verify chunk_gdn --size small` on the default.
#   bash .gpuhost/g/install.sh; bash scripts/gdn-r72.sh
. scripts/gdn-call.sh
root="$OUT"  # each sweep in its own folder (gdn_sweep writes $OUT/gdnv and $OUT/sweep.log)
OUT="$root/packed"; mkdir -p "$OUT"
GDN_CASES=varlen16x1024_H32_HV32,T8192_H16_HV32 gdn_sweep 250 default,i3_map_packed,i3_d16_r128,i3_d16_r128_packed
# one value head per program for the GVA cases too, at 128 registers with DIAG16 (four CTAs per SM)
OUT="$root/gs1"; mkdir -p "$OUT"
GDN_CASES=T8192_H16_HV32,T32768_H16_HV32 gdn_sweep 150 default,i3_d16_gs1_r128
OUT="$root"
gdn_verify 150
gdn_archive r72
