# Round 24, call r82: GL_RC_QSIDE on by default (after r81: its 14 GPU cases passed; varlen 16x1024 0.536 -> 0.487 ms):
#   1. bench_gdn's sweep on varlen 16x1024 (H = HV = 32; fla-core 0.6 in the process): the new default against
#      rc_noqside (the old one) and four configurations of it (152 / 104 output-partition registers, 2 load slots,
#      GL_RC_QSIDE_NORM "scale");
#   2. the graph bench of varlen 16x1024 with the tree's default (the record of the new default);
#   3. the whole sm90 target file with the new default (14 workers; what is cut by the cap is listed as not run).
#   (carry [".gpuhost/g", ".gpuhost/tcache.tgz"])
#   bash .gpuhost/g/install.sh; ATREX_BENCH_COMMIT=<sha> R82_CAP=470 bash scripts/calls/gdn-r82.sh
. scripts/gdn-call.sh
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,memory.total --format=csv > "$OUT/smi.txt"; tail -1 "$OUT/smi.txt"
GDN_CASES=varlen16x1024_H32_HV32 gdn_sweep 140 default,rc_noqside,rc_qside_o152,rc_qside_o104,rc_qside_s2,rc_qside_scale
timeout 110 python3 -m atrex bench run chunk_gdn --size perf --match varlen --graph --out "$OUT/graph/varlen" \
  --history "$OUT/history.jsonl" --no-progress >> "$OUT/bench_graph.log" 2>&1
echo "bench varlen exit $? at ${SECONDS}s"; grep -h "^| perf" "$OUT"/graph/*/bench_*.md | cut -c1-160
t=$(( ${R82_CAP:-470} - SECONDS ))
timeout "$t" python3 -m pytest op_test/nvidia/chunk_gdn/test_chunk_gdn_sm90.py -v -p no:cacheprovider -n 14 \
  > "$OUT/tests.log" 2>&1
echo "tests (${t}s): rc $? $(tail -n 1 "$OUT/tests.log")"
echo "passed $(grep -c 'PASSED' "$OUT/tests.log"), failed $(grep -c 'FAILED' "$OUT/tests.log"), skipped $(grep -c 'SKIPPED' "$OUT/tests.log")"
grep -E "^\[gw.*(FAILED|ERROR)" "$OUT/tests.log" | sed 's/.*:://' | head -12
grep -m 4 -E "^E  " "$OUT/tests.log" | cut -c1-200
gdn_archive r82
