# Round 10 (H200), call 1: the register-chain Gluon state kernel (STATE_IMPL "gl_rc"). Its target cases (Gluon cases,
# rings across items of persistent CTAs, graph replay, variant cases), then a bench_gdn sweep against gl_ws and the
# default on T=8192/16/32, T=32768/16/32 and varlen 16x1024 (fla-core 0.6 in the same process), per-kernel times by the
# torch profiler. Needs the fla bundle: bash .gpuhost/g/install.sh first.   bash scripts/calls/gdn-r22.sh
set -uo pipefail
OUT="${OUT:-/tmp/atrex-out}"; mkdir -p "$OUT"
export PYTHONPATH="$PWD/packages/core/python:$PWD/packages/nvidia/src:$PWD/packages/ppu/src"
export ATREX_EXTRA_PLUGINS=atrex_nvidia._plugin:plugin ATREX_STRICT_PLUGINS=1 PYTHONUNBUFFERED=1
timeout 170 python3 -m pytest op_test/nvidia/chunk_gdn/test_chunk_gdn_sm90.py -v -p no:cacheprovider -n 8 \
  -k "gl_rc or rc_rings" > "$OUT/tests.log" 2>&1
echo "tests: rc $? $(tail -n 1 "$OUT/tests.log")"; grep -E "^\[gw.*(FAILED|ERROR)" "$OUT/tests.log" | sed 's/.*:://' | head -8
grep -m 4 -E "^E  " "$OUT/tests.log" | cut -c1-200
C=T8192_H16_HV32,T32768_H16_HV32,varlen16x1024_H32_HV32
timeout 200 python3 -m atrex_nvidia.chunk_gdn.sm90.bench_gdn --out "$OUT/gdnv" --sweep --ref-heads "" --deadline 180 \
  --cases $C --sweep-cases $C --variants default,gl_rc,gl_rc_s2,gl_rc_np,gl_rc_o96 > "$OUT/sweep.log" 2>&1
echo "sweep exit $?"; grep "^| [Tv]" "$OUT/gdnv/gdn_bench.md" | tail -n 15 | cut -c1-260
tar czf "$OUT/r22.tgz" -C "$OUT" --exclude r22.tgz . 2>/dev/null
