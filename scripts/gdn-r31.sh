# Round 11, prepared for the next device session (NOT run in round 11): INTRA_V3_MASK_OUT, the intra inverse's merges
# masking the product L X_b instead of L (same bits: CPU interpreter check), which lets the kernel fit a 128-register
# cap with little spilling (fp16 path, Triton 3.6 SASS: 88 bytes of stack against 552 without it), i.e. four CTAs per
# SM against three. Its target cases (mask_out check, variant case intra_v3_mask_out_r128), then a bench_gdn sweep of
# the mask-out variants against the default on T=8192/16/32, T=32768/16/32 and varlen 16x1024 (fla-core 0.6 in the
# same process). Needs the fla bundle: bash .gpuhost/g/install.sh first.   bash scripts/gdn-r31.sh
set -uo pipefail
OUT="${OUT:-/tmp/atrex-out}"; mkdir -p "$OUT"
export PYTHONPATH="$PWD/packages/core/python:$PWD/packages/nvidia/src:$PWD/packages/ppu/src:${PYTHONPATH:-}"
export ATREX_EXTRA_PLUGINS=atrex_nvidia._plugin:plugin ATREX_STRICT_PLUGINS=1 PYTHONUNBUFFERED=1
timeout 120 python3 -m pytest op_test/nvidia/chunk_gdn/test_chunk_gdn_sm90.py -v -p no:cacheprovider -n 8 \
  -k "mask_out or gva_share or fp16_inverse" > "$OUT/tests.log" 2>&1
echo "tests: rc $? $(tail -n 1 "$OUT/tests.log")"; grep -E "^\[gw.*(FAILED|ERROR)" "$OUT/tests.log" | sed 's/.*:://' | head -8
grep -m 4 -E "^E  " "$OUT/tests.log" | cut -c1-200
C=T8192_H16_HV32,T32768_H16_HV32,varlen16x1024_H32_HV32
timeout 260 python3 -m atrex_nvidia.chunk_gdn.sm90.bench_gdn --out "$OUT/gdnv" --sweep --ref-heads "" --deadline 240 \
  --cases $C --sweep-cases $C --variants default,i3_mo,i3_mo_r128,i3_mo_r128_gs1,i3_mo_r144,i3_r128,i3_mo_gs2_r168 > "$OUT/sweep.log" 2>&1
echo "sweep exit $?"; grep "^| [Tv]" "$OUT/gdnv/gdn_bench.md" | tail -n 24 | cut -c1-200
tar czf "$OUT/r31.tgz" -C "$OUT" --exclude r31.tgz . 2>/dev/null
