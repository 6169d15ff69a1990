# Round 24, call r83: GL_RC_QSIDE_NORM "scale" and GL_RC_OUT_REGS 152 as the tree's defaults (r82: 0.467 and 0.479 ms
# against 0.487 for the inplace form at 128 registers, varlen 16x1024, each alone):
#   1. test_rc_qside, both norm forms (14 cases; "scale": no further from float64 than the knob-off call); if a
#      "scale" case fails, the call's tree goes back to "inplace" for the steps below;
#   2. bench_gdn's sweep on varlen 16x1024: the default against round 24's first form (inplace, 128 registers);
#   3. the graph bench of varlen 16x1024 with the default, as time allows.
#   (carry [".gpuhost/g", ".gpuhost/tcache.tgz"])
#   bash .gpuhost/g/install.sh; ATREX_BENCH_COMMIT=<sha> R83_CAP=240 bash scripts/calls/gdn-r83.sh
. scripts/gdn-call.sh
nvidia-smi --query-gpu=name --format=csv,noheader > "$OUT/smi.txt"; cat "$OUT/smi.txt"
timeout 90 python3 -m pytest op_test/nvidia/chunk_gdn/test_chunk_gdn_sm90.py -v -p no:cacheprovider -n 14 -k rc_qside \
  > "$OUT/tests.log" 2>&1
echo "tests: rc $? $(tail -n 1 "$OUT/tests.log")"
grep -E "(FAILED|ERROR)" "$OUT/tests.log" | sed 's/.*:://' | head -8; grep -m 4 -E "^E  " "$OUT/tests.log" | cut -c1-240
if grep -q "scale.*FAILED\|FAILED.*scale" "$OUT/tests.log" || ! grep -q " passed" "$OUT/tests.log"; then
  sed -i 's/^GL_RC_QSIDE_NORM = "scale"$/GL_RC_QSIDE_NORM = "inplace"/' packages/nvidia/src/atrex_nvidia/chunk_gdn/sm90/launch.py
  echo "GL_RC_QSIDE_NORM back to inplace for this call"
fi
GDN_CASES=varlen16x1024_H32_HV32 gdn_sweep 75 default,rc_qside_inplace_o128
t=$(( ${R83_CAP:-240} - SECONDS ))
if [ "$t" -ge 60 ]; then
  timeout "$t" python3 -m atrex bench run chunk_gdn --size perf --match varlen --graph --out "$OUT/graph/varlen" \
    --history "$OUT/history.jsonl" --no-progress >> "$OUT/bench_graph.log" 2>&1
  echo "bench varlen exit $? at ${SECONDS}s"; grep -h "^| perf" "$OUT"/graph/*/bench_*.md | cut -c1-160
else
  echo "graph bench skipped (${t}s left)"
fi
gdn_archive r83
