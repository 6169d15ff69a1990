# Round 33, call r122 (asked for nvidia-h200): GL_RC2_ITEMS_PER_SM = 1 (gl_rc2 only with more (sequence, value head)
# items than SMs, else gl_rc with one chain per CTA).
#   on an H200: its target tests (the new default-shape test, the fp16 default test, gl_rc2 against gl_rc), then the
#     goal records (scripts/calls/gdn-r103.sh, ~420 s; the goal shapes' plans are unchanged: 512 items at varlen);
#   on an H100: the whole sm90 target file (cap 280 s into the call), then the serving shapes' graph bench with
#     fla-core 0.6 in the same run (history records of <sha>).
#   (carry [".gpuhost/g", ".gpuhost/tcache.tgz"]) ATREX_BENCH_COMMIT=<sha> OUT=$OUT bash scripts/calls/gdn-r122.sh
bash .gpuhost/g/install.sh > /dev/null 2>&1
. scripts/gdn-call.sh
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee "$OUT/smi.txt"
if grep -q H200 "$OUT/smi.txt"; then
  gdn_tests_k 90 "fewer_items_than_sms or fp16_default or two_chains_same_bits" tests_r122.log
  bash scripts/calls/gdn-r103.sh; exit
fi
GDN_TEST_WORKERS=14 gdn_target_tests 280
gzip -f "$OUT/tests.log"
gdn_bench_cases 560 260 r122 serve
