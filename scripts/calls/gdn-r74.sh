# Round 20, call r74 (written without a GPU), only after r73 has shown the fused kernel correct (its GPU cases) and
# faster than the two-kernel call at varlen 16x1024: the candidate default in this call's copy of the tree,
#   FUSED_RC = "auto" (the fused kernel for calls in its domain with at least as many items as SMs) and, with
#   FUSED_DIAG16=True / FUSED_STAGES=3 in the environment, the aux form and slot count r73 chose,
# then what a default change needs: `atrex verify chunk_gdn --size small`, the whole sm90 target file, and the graph
# bench (`atrex bench run chunk_gdn --size perf --graph`, fla-core 0.6 in the same run; records in $OUT/history.jsonl).
# Budget: ~560 s of the 600 s a call may run.
#   (carry [".gpuhost/g", ".gpuhost/tcache.tgz"])
#   bash .gpuhost/g/install.sh; ATREX_BENCH_COMMIT=<sha> FUSED_DIAG16=True bash scripts/calls/gdn-r74.sh
F=packages/nvidia/src/atrex_nvidia/chunk_gdn/sm90/launch.py
sed -i 's/^FUSED_RC = False/FUSED_RC = "auto"/' "$F"
[ -n "${FUSED_DIAG16:-}" ] && sed -i "s/^FUSED_DIAG16 = False/FUSED_DIAG16 = ${FUSED_DIAG16}/" "$F"
[ -n "${FUSED_STAGES:-}" ] && sed -i "s/^FUSED_STAGES = 2 /FUSED_STAGES = ${FUSED_STAGES} /" "$F"
grep -E "^FUSED_(RC|DIAG16|STAGES) =" "$F"
. scripts/gdn-call.sh
export ATREX_BENCH_COMMIT="${ATREX_BENCH_COMMIT:-unknown}+fused-auto"  # (the tree on the host has no .git)
gdn_verify 110
gdn_target_tests 250
gdn_graph_bench 170
gdn_archive r74
