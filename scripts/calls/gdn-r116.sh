# Round 32, call r116 (any sm90 card): the whole sm90 target file at GL_WS_OUT2's default, with time to finish
# (r115's 220 s cap left 2 of 534 cases unfinished; 532 passed, none failed), on 14 workers.
#   (carry [".gpuhost/tcache.tgz"]) bash scripts/calls/gdn-r116.sh
. scripts/gdn-call.sh
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee "$OUT/smi.txt"
GDN_TEST_WORKERS=14 gdn_target_tests 380
gzip -f "$OUT/tests.log"
