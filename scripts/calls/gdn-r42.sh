# Round 13, call r42: STATE_SPLIT_XU "small" (the split for every call with K <= 32, L2 norm or not; the new default):
# the whole sm90 target file (its split check now covers the small/varlen-gva-vfirst probe too) and
# `atrex verify chunk_gdn --size small`.   bash scripts/calls/gdn-r42.sh   (no fla needed)
. scripts/gdn-call.sh
gdn_target_tests 200
gdn_verify 60
gdn_archive r42
