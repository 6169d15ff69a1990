# Round 10 (H200), call 4: gl_rc reads e^gamma_last before converting S (Nsight r24: the read stalled the P^T issue).
# The whole sm90 target file (gl_rc default for many programs, both e^gamma_last placements as variants); a bench_gdn
# sweep (default, gl_rc, gl_rc_egl_late, gl_ws) on T=8192/16/32, T=32768/16/32 and varlen 16x1024; then
# `atrex bench run chunk_gdn --size perf` under --graph and eager (fla-core 0.6 in the same runs; history).
# Needs the fla bundle: bash .gpuhost/g/install.sh first.   ATREX_BENCH_COMMIT=<sha> bash scripts/calls/gdn-r25.sh
set -uo pipefail
OUT="${OUT:-/tmp/atrex-out}"; mkdir -p "$OUT"
export PYTHONPATH="$PWD/packages/core/python:$PWD/packages/nvidia/src:$PWD/packages/ppu/src:${PYTHONPATH:-}"
export ATREX_EXTRA_PLUGINS=atrex_nvidia._plugin:plugin ATREX_STRICT_PLUGINS=1 PYTHONUNBUFFERED=1
timeout 150 python3 -m pytest op_test/nvidia/chunk_gdn/test_chunk_gdn_sm90.py -v -p no:cacheprovider -n 8 > "$OUT/tests.log" 2>&1
echo "tests: rc $? $(tail -n 1 "$OUT/tests.log")"; grep -E "^\[gw.*(FAILED|ERROR)" "$OUT/tests.log" | sed 's/.*:://' | head -8
grep -m 4 -E "^E  " "$OUT/tests.log" | cut -c1-200
C=T8192_H16_HV32,T32768_H16_HV32,varlen16x1024_H32_HV32
timeout 140 python3 -m atrex_nvidia.chunk_gdn.sm90.bench_gdn --out "$OUT/gdnv" --sweep --ref-heads "" --deadline 125 \
  --cases $C --sweep-cases $C --variants default,gl_rc,gl_rc_egl_late,gl_ws > "$OUT/sweep.log" 2>&1
echo "sweep exit $?"; grep "^| [Tv]" "$OUT/gdnv/gdn_bench.md" | tail -n 12 | cut -c20-200
for mode in graph eager; do
  flag=""; [ $mode = graph ] && flag="--graph"
  timeout 130 python3 -m atrex bench run chunk_gdn --size perf $flag --out "$OUT/$mode" --history "$OUT/history.jsonl" \
    --no-progress > "$OUT/bench_$mode.log" 2>&1; echo "bench $mode exit $?"
  grep -h "^| perf" "$OUT/$mode"/bench_*.md | cut -c1-120
done
tar czf "$OUT/r25.tgz" -C "$OUT" --exclude r25.tgz . 2>/dev/null
