# Round 33, call r124 (any sm90 card): the whole sm90 target file at round 33's final defaults (GL_RC2_ITEMS_PER_SM,
# ONE_SEQUENCE_FIXED), on 14 workers.
#   (carry [".gpuhost/tcache.tgz"]) bash scripts/calls/gdn-r124.sh
. scripts/gdn-call.sh
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee "$OUT/smi.txt"
GDN_TEST_WORKERS=14 gdn_target_tests 300
gzip -f "$OUT/tests.log"
