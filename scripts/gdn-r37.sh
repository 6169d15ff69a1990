# Round 13, call r37: Nsight Compute source-level profile (SASS, warp-stall samples) of one gl_ws launch at
# T=8192/16/32 (the default state kernel there), to place the ~1.15 us chain step's time by instruction.
#   bash scripts/gdn-r37.sh        (no fla needed)
. scripts/gdn-call.sh
timeout 150 ncu --clock-control none --kernel-name regex:gl_ws --launch-skip 1 --launch-count 1 --set full \
  --import-source yes -o "$OUT/ws" python3 scripts/gdn_ncu.py T8192_H16_HV32 > "$OUT/ncu_ws.log" 2>&1
echo "ncu exit $?"; tail -n 3 "$OUT/ncu_ws.log" | cut -c1-200
ncu -i "$OUT/ws.ncu-rep" --page source --csv --print-source sass > "$OUT/ws_sass.csv" 2> "$OUT/ws_sass.err"
ncu -i "$OUT/ws.ncu-rep" --page details > "$OUT/ws_details.txt" 2>&1
grep -E "Duration|Issued Warp Per Scheduler|Warp Cycles Per Issued" "$OUT/ws_details.txt" | head -4
wc -c "$OUT/ws_sass.csv"; head -c 300 "$OUT/ws_sass.err"
gzip -f "$OUT/ws_sass.csv"; rm -f "$OUT/ws.ncu-rep"
gdn_archive r37
