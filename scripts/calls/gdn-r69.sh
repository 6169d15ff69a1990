# (Ran at commit e6944a4; the fused kernel it exercises was removed after r69: BENCH_H200.md round 18.)
# Round 18, call r69: the fused kernel with CTA barriers between its parts (FUSED_SYNC, default on): r68's failing
# (case, knobs) pairs again (two without the barriers as a control), the fused GPU tests, then the varlen sweep.
. scripts/gdn-call.sh
PERF="dict(T=512, H=4, HV=8, K=128)"
{
for ck in "T130_B2_gva_bf16h0|" "T64|FUSED_LATE_Q=False" "T63|STATE_SPLIT_XU='never'" "T63|FUSED_CFG=(64,8,1)" \
          "T64|FUSED_PIPE=True" "$PERF|FUSED_CFG=(32,4,1)" "$PERF|FUSED_TMA=False FUSED_CFG=(32,4,1)" \
          "varlen_fp16_noL2_vfirst|FUSED_PIPE=True" "T130_B2_gva_bf16h0|FUSED_CFG=(64,8,1)" \
          "T130_B2_gva_bf16h0|FUSED_TMA=False" "T130_B2_gva_bf16h0|FUSED_SYNC=False" "$PERF|FUSED_SYNC=False FUSED_CFG=(32,4,1)" \
          "T130_B2_gva_fp16|" "$PERF|FUSED_PIPE=True" "g_tiny_long|FUSED_CFG=(32,4,1)" "qwen_varlen_mixed|FUSED_CFG=(16,4,1)"; do
  c=${ck%%|*}; k=${ck#*|}
  printf 'timeout 120 python3 scripts/gdn_fused_diag.py %q %s 2>&1 | grep -E "DIAG|Error" | tail -2 | cut -c1-300\n' \
    "$c" "$(for a in $k; do printf '%q ' "$a"; done)"
done
} > "$OUT/combos.sh"
timeout 140 xargs -P 8 -d '\n' -I{} bash -c {} < "$OUT/combos.sh" > "$OUT/diag.log" 2>&1
sort "$OUT/diag.log" | cut -c1-230
gdn_target_tests 200 fused
GDN_CASES=varlen16x1024_H32_HV32 gdn_sweep 190 default,fused,fused_bv128w8
gdn_archive r69
