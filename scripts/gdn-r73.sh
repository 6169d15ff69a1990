# Round 20, call r73 (written without a GPU: none was lent in rounds 19-20): the fused kernel (launch.FUSED_RC, one
# persistent Gluon launch per call: kernels_gluon.atrex_sm90_gdn_fused_rc) on the H200, for the first time:
#   1. a smoke run, case by case with each row printed at once (a lost mbarrier phase hangs: the timeout ends it);
#   2. its GPU cases (test_fused_rc: 14 cases x the aux partition's two inverse forms, against float64 and the
#      two-kernel call; the 3-CTA rings; graph capture);
#   3. a bench_gdn sweep of default / fused / fused_d16 / fused_s3 / fused_d16_s3 / fused_a200 on the varlen goal case
#      and T=8192/16/32, in the same process as fla.
# Budget: ~520 s of the 600 s a call may run. If the smoke run hangs or fails, steps 2-3 still run (their logs say
# which cases).
#   (carry [".gpuhost/g", ".gpuhost/tcache"]: the fla bundle and the Triton cache prebuilt by scripts/gdn_host_cache.py)
#   bash .gpuhost/g/install.sh; bash scripts/gdn-r73.sh
. scripts/gdn-call.sh
timeout 100 python3 scripts/gdn_fused_smoke.py > "$OUT/smoke.log" 2>&1; echo "smoke exit $?"
grep -E "SMOKE .*(FAIL|ok)" "$OUT/smoke.log" | grep -c ok; grep -E "FAIL|Error|error" "$OUT/smoke.log" | head -8 | cut -c1-200
tail -n 2 "$OUT/smoke.log" | cut -c1-200
gdn_target_tests 150 "fused"
GDN_CASES=varlen16x1024_H32_HV32,T8192_H16_HV32 gdn_sweep 230 default,fused,fused_d16,fused_s3,fused_d16_s3,fused_a200
gdn_archive r73
