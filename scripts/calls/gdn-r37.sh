# Round 13, call r37: Nsight Compute source-level profile (SASS, warp-stall samples) of one gl_ws launch at
# T=8192/16/32 (the default state kernel there), to place the ~1.15 us chain step's time by instruction.
#   bash scripts/calls/gdn-r37.sh        (no fla needed; as run at 4cd8dce, before gdn_ncu moved into gdn-call.sh)
. scripts/gdn-call.sh
gdn_ncu 150 ws gl_ws T8192_H16_HV32
gdn_archive r37
