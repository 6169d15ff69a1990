# Round 14, call r44: Nsight Compute source-level profiles of the intra kernel v3 (the default intra pass) at
# T=32768/16/32 (GS = 2 programs) and varlen 16x1024 H = HV = 32 (GS = 1), to see what bounds it (tensor pipe,
# issue, shared memory or stalls) before changing its inverse.
#   bash scripts/calls/gdn-r44.sh        (no fla needed)
. scripts/gdn-call.sh
gdn_ncu 200 i32k atrex_sm90_gdn_intra_chunk_v3 T32768_H16_HV32
gdn_ncu 200 ivl atrex_sm90_gdn_intra_chunk_v3 varlen16x1024_H32_HV32
for n in i32k ivl; do
  echo "== $n"; grep -E "Duration|Compute \(SM\) Throughput|Memory Throughput|Issue Slots Busy|Achieved Occupancy|Theoretical Occupancy|Registers Per|Shared Memory Configuration Size|Dynamic Shared|Static Shared|Block Limit" "$OUT/${n}_details.txt" | head -16
done
gdn_archive r44
