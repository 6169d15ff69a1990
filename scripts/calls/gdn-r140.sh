# Round 37, call r140 (an H200 only; exits at once on any other card): the varlen 16x1024 goal record alone at main's
# defaults with fla-core 0.6 in the same run (history record of ATREX_BENCH_COMMIT), for a session with too little
# device time left for gdn-r138.sh's three cases; T=8192 after it if the cap allows (R140_CAP, default 200 s).
#   (carry [".gpuhost/g", ".gpuhost/tcache.tgz"]) bash .gpuhost/g/install.sh; ATREX_BENCH_COMMIT=<sha> bash scripts/calls/gdn-r140.sh
. scripts/gdn-call.sh
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader | tee "$OUT/smi.txt"
grep -q H200 "$OUT/smi.txt" || { echo "not an H200: nothing run"; exit 0; }
gdn_bench_cases ${R140_CAP:-200} 140 r140 varlen T8192-H16-HV32
