# Round 10 (H200), call 3: gl_rc with e^gamma_last scaled while P^T runs and the lazy slot release; its Gluon target
# cases; a bench_gdn sweep of the split state pass with gl_rc (its 64 CTAs leave 68 SMs to the next piece's intra
# kernel) on T=32768/16/32 and T=8192/16/32 (fla-core 0.6 in the same process); Nsight Compute source-level profile
# (SASS, warp-stall samples) of one gl_rc launch at T=8192/16/32.
# Needs the fla bundle: bash .gpuhost/g/install.sh first.   bash scripts/calls/gdn-r24.sh
set -uo pipefail
OUT="${OUT:-/tmp/atrex-out}"; mkdir -p "$OUT"
export PYTHONPATH="$PWD/packages/core/python:$PWD/packages/nvidia/src:$PWD/packages/ppu/src:${PYTHONPATH:-}"
export ATREX_EXTRA_PLUGINS=atrex_nvidia._plugin:plugin ATREX_STRICT_PLUGINS=1 PYTHONUNBUFFERED=1
timeout 100 python3 -m pytest op_test/nvidia/chunk_gdn/test_chunk_gdn_sm90.py -v -p no:cacheprovider -n 8 \
  -k "gl_rc or rc_rings or T1" > "$OUT/tests.log" 2>&1
echo "tests: rc $? $(tail -n 1 "$OUT/tests.log")"; grep -E "^\[gw.*(FAILED|ERROR)" "$OUT/tests.log" | sed 's/.*:://' | head -8
grep -m 4 -E "^E  " "$OUT/tests.log" | cut -c1-200
C=T32768_H16_HV32,T8192_H16_HV32
timeout 200 python3 -m atrex_nvidia.chunk_gdn.sm90.bench_gdn --out "$OUT/gdnv" --sweep --ref-heads "" --deadline 180 \
  --cases $C --sweep-cases $C --variants default,gl_rc,split2_rc,split3_rc,split4_rc,split6_rc,split8_rc,split4_rc_prio0,split4 \
  > "$OUT/sweep.log" 2>&1
echo "sweep exit $?"; grep "^| T" "$OUT/gdnv/gdn_bench.md" | tail -n 20 | cut -c1-230
timeout 120 ncu --clock-control none --kernel-name regex:gl_rc --launch-skip 1 --launch-count 1 --set full \
  --import-source yes -o "$OUT/rc" python3 scripts/gdn_ncu.py T8192_H16_HV32 STATE_IMPL=gl_rc > "$OUT/ncu_rc.log" 2>&1
echo "ncu exit $?"
ncu -i "$OUT/rc.ncu-rep" --page source --csv --print-source sass > "$OUT/rc_sass.csv" 2> "$OUT/rc_sass.err"
ncu -i "$OUT/rc.ncu-rep" --page details > "$OUT/rc_details.txt" 2>&1
grep -E "Duration|Issued Warp Per Scheduler|Warp Cycles Per Issued|Compute \(SM\) Thr" "$OUT/rc_details.txt" | head -5
wc -c "$OUT/rc_sass.csv"; head -c 300 "$OUT/rc_sass.err"
tar czf "$OUT/r24.tgz" -C "$OUT" --exclude r24.tgz --exclude rc.ncu-rep . 2>/dev/null
