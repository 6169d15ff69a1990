# Round 11 (H200), call 3: intra v3 pairs two value heads per program (GVA: shared q/k tiles; G = 1: each its own) with their fp16
# inverses interleaved (INTRA_V3_PAIR_INV, INTRA_V3_PAIR_HEADS) at a 232-register cap. The whole sm90 target file (the
# pairing check for both layouts, variant cases), then a bench_gdn sweep of the intra variants
# on T=8192/16/32, T=32768/16/32 and varlen 16x1024 (fla-core 0.6 in the same process).
# Needs the fla bundle: bash .gpuhost/g/install.sh first.   bash scripts/calls/gdn-r29.sh
set -uo pipefail
OUT="${OUT:-/tmp/atrex-out}"; mkdir -p "$OUT"
export PYTHONPATH="$PWD/packages/core/python:$PWD/packages/nvidia/src:$PWD/packages/ppu/src:${PYTHONPATH:-}"
export ATREX_EXTRA_PLUGINS=atrex_nvidia._plugin:plugin ATREX_STRICT_PLUGINS=1 PYTHONUNBUFFERED=1
timeout 170 python3 -m pytest op_test/nvidia/chunk_gdn/test_chunk_gdn_sm90.py -v -p no:cacheprovider -n 8 > "$OUT/tests.log" 2>&1
echo "tests: rc $? $(tail -n 1 "$OUT/tests.log")"; grep -E "^\[gw.*(FAILED|ERROR)" "$OUT/tests.log" | sed 's/.*:://' | head -8
grep -m 4 -E "^E  " "$OUT/tests.log" | cut -c1-200
C=T8192_H16_HV32,T32768_H16_HV32,varlen16x1024_H32_HV32
timeout 260 python3 -m atrex_nvidia.chunk_gdn.sm90.bench_gdn --out "$OUT/gdnv" --sweep --ref-heads "" --deadline 240 \
  --cases $C --sweep-cases $C --variants default,i3_round10,i3_gs1,i3_nopair,i3_pair_r200,i3_pair_r255,i3_gs2_r168 \
  > "$OUT/sweep.log" 2>&1
echo "sweep exit $?"; grep "^| [Tv]" "$OUT/gdnv/gdn_bench.md" | tail -n 24 | cut -c1-200
tar czf "$OUT/r29.tgz" -C "$OUT" --exclude r29.tgz . 2>/dev/null
