# Round 10 (H200), call 2: "auto" takes gl_rc for calls with more BV=32 state programs than SMs (varlen 16x1024), and
# gl_rc reads e^gamma_last from its factor slot. The whole sm90 target file; a bench_gdn sweep (default, gl_rc, gl_ws)
# on T=8192/16/32 and varlen 16x1024; `atrex bench run chunk_gdn --size perf --graph` (fla-core 0.6 in the same run).
# Needs the fla bundle: bash .gpuhost/g/install.sh first.   ATREX_BENCH_COMMIT=<sha> bash scripts/calls/gdn-r23.sh
set -uo pipefail
OUT="${OUT:-/tmp/atrex-out}"; mkdir -p "$OUT"
export PYTHONPATH="$PWD/packages/core/python:$PWD/packages/nvidia/src:$PWD/packages/ppu/src:${PYTHONPATH:-}"
export ATREX_EXTRA_PLUGINS=atrex_nvidia._plugin:plugin ATREX_STRICT_PLUGINS=1 PYTHONUNBUFFERED=1
timeout 210 python3 -m pytest op_test/nvidia/chunk_gdn/test_chunk_gdn_sm90.py -v -p no:cacheprovider -n 8 > "$OUT/tests.log" 2>&1
echo "tests: rc $? $(tail -n 1 "$OUT/tests.log")"; grep -E "^\[gw.*(FAILED|ERROR)" "$OUT/tests.log" | sed 's/.*:://' | head -8
grep -m 4 -E "^E  " "$OUT/tests.log" | cut -c1-200
C=T8192_H16_HV32,varlen16x1024_H32_HV32
timeout 130 python3 -m atrex_nvidia.chunk_gdn.sm90.bench_gdn --out "$OUT/gdnv" --sweep --ref-heads "" --deadline 110 \
  --cases $C --sweep-cases $C --variants default,gl_rc,gl_ws > "$OUT/sweep.log" 2>&1
echo "sweep exit $?"; grep "^| [Tv]" "$OUT/gdnv/gdn_bench.md" | tail -n 8 | cut -c1-260
timeout 170 python3 -m atrex bench run chunk_gdn --size perf --graph --out "$OUT/graph" --history "$OUT/history.jsonl" \
  --no-progress > "$OUT/chunk_gdn_bench_graph.log" 2>&1; echo "bench --graph exit $?"
grep -h "^| perf" "$OUT"/graph/bench_*.md | cut -c1-170; tail -n 3 "$OUT/chunk_gdn_bench_graph.log" | cut -c1-200
tar czf "$OUT/r23.tgz" -C "$OUT" --exclude r23.tgz . 2>/dev/null
