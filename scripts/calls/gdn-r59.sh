# Round 16, call r59: the whole sm90 target file after round 16's new cases (r57 ran only the tests whose id names fp16;
# the checks that loop over SMALL_CASES / GPU_CASES inside one test, e.g. mask-out and slot-map, now include the fp16
# cases too).
#   bash .gpuhost/g/install.sh; bash scripts/calls/gdn-r59.sh
. scripts/gdn-call.sh
gdn_target_tests 280
gdn_archive r59
