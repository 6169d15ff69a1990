# (Ran at commit 387e124; the fused kernel it exercises was removed after r69: BENCH_H200.md round 18.)
# Round 18, call r68: diagnose r66's fused failures (wrong outputs for GVA cases with small K / V, illegal addresses at
# 32 and 16 columns and with PIPE): each (case, knobs) in its own process (an illegal address ends the context),
# eight at a time; then compute-sanitizer on the 32-column perf shape.
. scripts/gdn-call.sh
P=(T64 T130_B2_gva_bf16h0 T63 varlen_fp16_noL2_vfirst "dict(T=512, H=4, HV=8, K=128)")
K=("" "FUSED_TMA=False" "FUSED_LATE_Q=False" "FUSED_MASK_OUT=False" "INTRA_V3_FAST_EXP=False" "FUSED_CFG=(32,4,1)"
   "FUSED_PIPE=True" "FUSED_CFG=(64,8,1)" "FUSED_TMA=False FUSED_CFG=(32,4,1)" "STATE_SPLIT_XU='never'")
for c in "${P[@]}"; do for k in "${K[@]}"; do
  printf 'timeout 150 python3 scripts/gdn_fused_diag.py %q %s 2>&1 | grep -E "DIAG|Error" | tail -2 | cut -c1-400\n' \
    "$c" "$(for a in $k; do printf '%q ' "$a"; done)"
done; done > "$OUT/combos.sh"
timeout 330 xargs -P 8 -d '\n' -I{} bash -c {} < "$OUT/combos.sh" > "$OUT/diag.log" 2>&1
sort "$OUT/diag.log" | cut -c1-330
timeout 150 compute-sanitizer --tool memcheck --print-limit 3 python3 scripts/gdn_fused_diag.py "dict(T=512, H=4, HV=8, K=128)" "FUSED_CFG=(32,4,1)" > "$OUT/sanitizer.log" 2>&1
grep -m 12 -E "Invalid|at 0x|by thread|Address|DIAG|ERROR SUMMARY" "$OUT/sanitizer.log" | cut -c1-220
gdn_archive r68
