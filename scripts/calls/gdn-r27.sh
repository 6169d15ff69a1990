# Round 11 (H200), call 1, at f571cc5 + this script: the whole sm90 target file (includes the gl_rc int64 case, the
# refactored ring tests and the FOLD_QK_NORM variant cases, none run on a GPU before), `atrex verify chunk_gdn`, then a
# bench_gdn sweep of the fold variants against the default on T=8192/16/32, T=32768/16/32 and varlen 16x1024 (fla-core
# 0.6 in the same process). Needs the fla bundle: bash .gpuhost/g/install.sh first.   bash scripts/calls/gdn-r27.sh
set -uo pipefail
OUT="${OUT:-/tmp/atrex-out}"; mkdir -p "$OUT"
export PYTHONPATH="$PWD/packages/core/python:$PWD/packages/nvidia/src:$PWD/packages/ppu/src:${PYTHONPATH:-}"
export ATREX_EXTRA_PLUGINS=atrex_nvidia._plugin:plugin ATREX_STRICT_PLUGINS=1 PYTHONUNBUFFERED=1
timeout 170 python3 -m pytest op_test/nvidia/chunk_gdn/test_chunk_gdn_sm90.py -v -p no:cacheprovider -n 8 > "$OUT/tests.log" 2>&1
echo "tests: rc $? $(tail -n 1 "$OUT/tests.log")"; grep -E "^\[gw.*(FAILED|ERROR)" "$OUT/tests.log" | sed 's/.*:://' | head -8
grep -m 4 -E "^E  " "$OUT/tests.log" | cut -c1-200
timeout 100 python3 -m atrex verify chunk_gdn --size small > "$OUT/verify_chunk_gdn.log" 2>&1; echo "verify exit $?"
tail -n 2 "$OUT/verify_chunk_gdn.log" | cut -c1-200; grep -h FAIL "$OUT/verify_chunk_gdn.log" | head -4 | cut -c1-200
C=T8192_H16_HV32,T32768_H16_HV32,varlen16x1024_H32_HV32
timeout 180 python3 -m atrex_nvidia.chunk_gdn.sm90.bench_gdn --out "$OUT/gdnv" --sweep --ref-heads "0" --deadline 160 \
  --cases $C --sweep-cases $C --variants default,fold,fold_rc > "$OUT/sweep.log" 2>&1
echo "sweep exit $?"; grep "^| [Tv]" "$OUT/gdnv/gdn_bench.md" | tail -n 12 | cut -c1-220
tar czf "$OUT/r27.tgz" -C "$OUT" --exclude r27.tgz . 2>/dev/null
