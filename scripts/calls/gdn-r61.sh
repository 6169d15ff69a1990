# Round 16, call r61: the target file's new test_fp16_default_takes_the_fast_kernels (the public operator on fp16 at
# the Qwen3-Next shapes: intra v3 + gl_ws / gl_rc, within the contract bound), then the whole file once more.
#   bash .gpuhost/g/install.sh; bash scripts/calls/gdn-r61.sh
. scripts/gdn-call.sh
gdn_target_tests 280
grep -E "fp16_default" "$OUT/tests.log" | sed 's/.*:://' | head -4
gdn_archive r61
