# Round 13, call r43: Nsight Compute source-level profile (SASS, warp-stall samples) of one gl_rc launch at varlen
# 16x1024, H = HV = 32 (the default state kernel there), to place its ~1.5 us chain step by instruction.
#   bash scripts/gdn-r43.sh        (no fla needed)
. scripts/gdn-call.sh
timeout 150 ncu --clock-control none --kernel-name regex:gl_rc --launch-skip 1 --launch-count 1 --set full \
  --import-source yes -o "$OUT/rc" python3 scripts/gdn_ncu.py varlen16x1024_H32_HV32 > "$OUT/ncu_rc.log" 2>&1
echo "ncu exit $?"; tail -n 2 "$OUT/ncu_rc.log" | cut -c1-200
ncu -i "$OUT/rc.ncu-rep" --page source --csv --print-source sass > "$OUT/rc_sass.csv" 2> "$OUT/rc_sass.err"
ncu -i "$OUT/rc.ncu-rep" --page details > "$OUT/rc_details.txt" 2>&1
grep -E "Duration|Issued Warp Per Scheduler|Warp Cycles Per Issued|L2 Cache Throughput" "$OUT/rc_details.txt" | head -4
gzip -f "$OUT/rc_sass.csv"; rm -f "$OUT/rc.ncu-rep"
gdn_archive r43
