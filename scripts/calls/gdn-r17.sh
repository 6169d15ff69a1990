# Round 9 (H200), call 3: intra v3 with fp16 merges and no Newton step (INTRA_V3_INV_FP16): its target variant cases,
# then a bench_gdn sweep default / i3_fp16 on T=8192/16/32, T=32768/16/32 and varlen 16x1024 (no fla).
set -uo pipefail
OUT="${OUT:-/tmp/atrex-out}"; mkdir -p "$OUT"
export PYTHONPATH="$PWD/packages/core/python:$PWD/packages/nvidia/src:$PWD/packages/ppu/src"
export ATREX_EXTRA_PLUGINS=atrex_nvidia._plugin:plugin ATREX_STRICT_PLUGINS=1 PYTHONUNBUFFERED=1
timeout 100 python3 -m pytest op_test/nvidia/chunk_gdn/test_chunk_gdn_sm90.py -v -p no:cacheprovider -n 8 \
  -k "intra_v3_fp16" > "$OUT/tests.log" 2>&1
echo "tests: rc $? $(tail -n 1 "$OUT/tests.log")"; grep -E "^\[gw.*FAILED" "$OUT/tests.log" | sed 's/.*:://' | head
grep -m 4 -E "^E  " "$OUT/tests.log" | cut -c1-200
C=T8192_H16_HV32,T32768_H16_HV32,varlen16x1024_H32_HV32
timeout 200 python3 -m atrex_nvidia.chunk_gdn.sm90.bench_gdn --out "$OUT/gdnv" --sweep --ref-heads "" --deadline 180 \
  --cases $C --sweep-cases $C --variants default,i3_fp16 > "$OUT/sweep.log" 2>&1
echo "sweep exit $?"; grep "^| [Tv]" "$OUT/gdnv/gdn_bench.md" | tail -n 6 | cut -c1-200
tar czf "$OUT/r17.tgz" -C "$OUT" --exclude r17.tgz . 2>/dev/null
