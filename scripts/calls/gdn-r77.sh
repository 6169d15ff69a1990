# Round 22, call r77 (after r76, which ran on an H100: INTRA_V3_DIAG16 = True cut the intra kernel 0.135 -> 0.105 ms
# at T=8192/16/32, 0.494 -> 0.390 at T=32768/16/32, 0.275 -> 0.249 at varlen 16x1024, its GPU cases passed, o rrmse vs
# fla 9.8e-4 -> 9.9e-4): what the default change needs, with INTRA_V3_DIAG16 = True in this call's copy of the tree:
# `atrex verify chunk_gdn --size small`, the whole sm90 target file (test_fused_rc now compares each inverse form with
# the two-kernel call in the same form), and the graph bench (`atrex bench run chunk_gdn --size perf --graph`,
# fla-core 0.6 in the same run; records in $OUT/history.jsonl). Budget: ~530 s of the 600 s a call may run.
#   (carry [".gpuhost/g", ".gpuhost/tcache.tgz"])
#   bash .gpuhost/g/install.sh; ATREX_BENCH_COMMIT=<sha> bash scripts/calls/gdn-r77.sh
F=packages/nvidia/src/atrex_nvidia/chunk_gdn/sm90/launch.py
sed -i 's/^INTRA_V3_DIAG16 = False/INTRA_V3_DIAG16 = True/' "$F"
grep -E "^INTRA_V3_DIAG16 =" "$F"
. scripts/gdn-call.sh
export ATREX_BENCH_COMMIT="${ATREX_BENCH_COMMIT:-unknown}+intra-diag16"  # (the tree on the host has no .git)
# the whole target file first (the correctness gate; every intra specialisation it needs is compiled here: the carried
# cache covers the bench's calls only), on 14 workers for the compiles; then the record, then verify
timeout 300 python3 -m pytest op_test/nvidia/chunk_gdn/test_chunk_gdn_sm90.py -v -p no:cacheprovider -n 14 \
  > "$OUT/tests.log" 2>&1
echo "tests: rc $? $(tail -n 1 "$OUT/tests.log")"
grep -E "^\[gw.*(FAILED|ERROR)" "$OUT/tests.log" | sed 's/.*:://' | head -8; grep -m 4 -E "^E  " "$OUT/tests.log" | cut -c1-200
gdn_graph_bench 150
gdn_verify 60
gdn_archive r77
