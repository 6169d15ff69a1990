# Round 24, call r80: the H200 record of the current default (INTRA_V3_DIAG16 and FAST_LAUNCH on), the first on an
# H200 since round 18 (r79 ran on an H100):
#   1. round 23's FAST_LAUNCH GPU test and round 22's two DIAG16 checks, on this card;
#   2. the graph bench (`atrex bench run chunk_gdn --size perf --graph`), one case per process, fla-core 0.6 in the
#      same process, goal cases first, varlen with more time than r79 left it (55 s: timed out).
#   (carry [".gpuhost/g", ".gpuhost/tcache.tgz"])
#   bash .gpuhost/g/install.sh; ATREX_BENCH_COMMIT=<sha> R80_CAP=540 bash scripts/calls/gdn-r80.sh
. scripts/gdn-call.sh
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,memory.total --format=csv > "$OUT/smi.txt"; tail -1 "$OUT/smi.txt"
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
gdn_target_tests 80 "intra_diag16 or default_inverse_form or fast_launch"
FL=True; grep -q "fast_launch.*FAILED\|FAILED.*fast_launch" "$OUT/tests.log" && FL=False && echo "FAST_LAUNCH off for the bench"
FL_PY="import atrex_nvidia.chunk_gdn.sm90.launch as L; L.FAST_LAUNCH = $FL"
for c in "130 T8192-H16-HV32" "110 T32768" "150 varlen" "60 T4096" "60 T8192-H32"; do
  set -- $c; gdn_bench_case "${R80_CAP:-540}" "$1" "$2" "$FL_PY"
done
grep -h "^| perf" "$OUT"/graph/*/bench_*.md | cut -c1-160
gdn_archive r80
