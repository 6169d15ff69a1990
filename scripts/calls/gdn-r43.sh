# Round 13, call r43: Nsight Compute source-level profile (SASS, warp-stall samples) of one gl_rc launch at varlen
# 16x1024, H = HV = 32 (the default state kernel there), to place its ~1.5 us chain step by instruction.
#   bash scripts/calls/gdn-r43.sh        (no fla needed; as run at acca97d, before gdn_ncu moved into gdn-call.sh)
. scripts/gdn-call.sh
gdn_ncu 150 rc gl_rc varlen16x1024_H32_HV32
gdn_archive r43
