# Round 26, call r94 (for a later session; written in round 26): gl_rc2 as the candidate default, once r91 has shown
# its bit-equality cases green and its sweep faster. GL_RC_TWO_CHAINS (and round 26's three gl_rc options, if the tree
# has not switched them yet) on in the call's copy of launch.py; then the whole sm90 target file and the varlen graph
# bench with fla-core 0.6 (record as ATREX_BENCH_COMMIT=<sha>+rc2). Build the carried cache from a tree switched the
# same way.
#   (carry [".gpuhost/g", ".gpuhost/tcache.tgz"])
#   bash .gpuhost/g/install.sh; ATREX_BENCH_COMMIT=<sha>+rc2 bash scripts/calls/gdn-r94.sh
. scripts/gdn-call.sh
sed -i -E 's/^(GL_RC_QSCALE|GL_RC_EARLY_FREE|GL_RC_OUT_TMA|GL_RC_TWO_CHAINS) = False$/\1 = True/' \
  packages/nvidia/src/atrex_nvidia/chunk_gdn/sm90/launch.py
grep -E "^GL_RC_(QSCALE|EARLY_FREE|OUT_TMA|TWO_CHAINS) =" packages/nvidia/src/atrex_nvidia/chunk_gdn/sm90/launch.py | tr '\n' ' '
echo; nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader > "$OUT/smi.txt"; cat "$OUT/smi.txt"
gdn_bench_case 200 140 varlen
grep -h "^| perf" "$OUT"/graph/*/bench_*.md | cut -c1-160
gdn_target_tests_left 590
gdn_archive r94
