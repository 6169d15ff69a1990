# Round 20, call r73 (written without a GPU: none was lent in rounds 19-20): the fused kernel (launch.FUSED_RC, one
# persistent Gluon launch per call: kernels_gluon.atrex_sm90_gdn_fused_rc) on the H200, for the first time:
#   1. a smoke run, case by case with each row printed at once (a lost mbarrier phase hangs: the timeout ends it);
#   2. its GPU cases (test_fused_rc: 14 cases x the aux partition's two inverse forms, against float64 and the
#      two-kernel call; the 3-CTA rings; graph capture);
#   3. a bench_gdn sweep of default / fused / fused_d16 / fused_s3 / fused_d16_s3 / fused_a200 on the varlen goal case,
#      T=8192/16/32 and T=32768/16/32, in the same process as fla (swept in that order, so a deadline drops T=32768
#      first). T=32768 has 64 items for 132 SMs, so "auto" would not take the fused kernel there; its row says whether
#      the fused kernel's chain-bound time (~512 steps of ~1.5 us) beats the two-kernel call's 0.944 ms anyway. Its
#      specialisations are T=8192's (T is not specialised): the carried cache holds them.
# Budget: ~540 s of the 600 s a call may run. If the smoke run hangs (timeout) or fails, the probe
# (scripts/gdn_fused_probe.py with scripts/diag/fused_probe.patch, round 21) reruns the case it points at and prints
# where each partition stopped (a hang) or which intermediate tile is first wrong. Then, after a hang, the rest of the
# call runs r71's steps (round 19's knobs: the fused tests and sweep would hang too); after a failure, the sweep only
# (the fused GPU cases would fail; the timings still say what the design costs); after a device fault, memcheck on the
# case and r71's sweep (a fault is sticky for the process that meets it).
#   (carry [".gpuhost/g", ".gpuhost/tcache.tgz"]: the fla bundle and the Triton cache prebuilt by
#   scripts/gdn_host_cache.py, the probe's kernels included)
#   bash .gpuhost/g/install.sh; bash scripts/calls/gdn-r73.sh
. scripts/gdn-call.sh
timeout 100 python3 scripts/gdn_fused_smoke.py > "$OUT/smoke.log" 2>&1; rc=$?; echo "smoke exit $rc"
grep -E "SMOKE .*(FAIL|ok)" "$OUT/smoke.log" | grep -c ok; grep -E "FAIL|Error|error" "$OUT/smoke.log" | head -8 | cut -c1-200
grep WHERE "$OUT/smoke.log" | head -6 | cut -c1-300
tail -n 2 "$OUT/smoke.log" | cut -c1-200
failed=0; grep -q FAIL "$OUT/smoke.log" && failed=1
hung=0
if [ "$rc" != 0 ] || [ "$failed" = 1 ]; then
  gdn_fused_probe 90 --from-smoke "$OUT/smoke.log" --timeout 15
  # a smoke timeout is a hang only if the probe's launch (timed after its compile) hangs too: a slow compile (a cache
  # miss) would also run past the smoke run's timeout
  [ "$rc" = 124 ] && grep -q "PROBE HANG" "$OUT/probe.log" && hung=1
fi
fault=0; grep -q -i -E "illegal|misaligned|unspecified launch|an error occurred on the GPU" "$OUT/smoke.log" && fault=1
if [ "$fault" = 1 ]; then
  # a device fault: memcheck on the case the smoke run was in (Triton keeps line info: the report names the source line)
  c=$(grep -o -E "^SMOKE [A-Za-z0-9_]+ diag16=[A-Za-z]+ \.\.\." "$OUT/smoke.log" | tail -n 1 | cut -d' ' -f2)
  timeout 80 compute-sanitizer --tool memcheck --show-backtrace no python3 scripts/gdn_fused_smoke.py "$c" \
    > "$OUT/memcheck.log" 2>&1
  echo "memcheck ($c) exit $?"; grep -m 6 -E "Invalid|Address|at 0x|kernels_gluon|ERROR SUMMARY" "$OUT/memcheck.log" | cut -c1-220
fi
if [ "$fault" = 1 ]; then
  # a fault is sticky for the process: a sweep with fused variants would lose the rest; round 19's knobs instead
  echo "fused kernel faulted: r71's sweep instead"
  GDN_CASES=T8192_H16_HV32,T32768_H16_HV32,varlen16x1024_H32_HV32,T8192_H32_HV32 gdn_sweep 200 default,i3_d16,i3_d16_r128
elif [ "$hung" = 1 ]; then
  # the fused kernel hangs: the rest of the call measures round 19's knobs (r71)
  echo "fused kernel hung: r71's steps instead"
  gdn_target_tests 130 "diag16 or ut_inverse or slot_map"
  GDN_CASES=T8192_H16_HV32,T32768_H16_HV32,varlen16x1024_H32_HV32,T8192_H32_HV32 gdn_sweep 200 default,i3_d16,i3_d16_r128
elif [ "$failed" = 1 ] || { [ "$rc" != 0 ] && [ "$rc" != 124 ]; }; then
  GDN_CASES=varlen16x1024_H32_HV32,T8192_H16_HV32,T32768_H16_HV32 gdn_sweep 230 default,fused,fused_d16,fused_s3,fused_d16_s3,fused_a200
else  # (after a smoke timeout that was not a hang, the probe took 90 s of the tests' time)
  gdn_target_tests $([ "$rc" = 124 ] && echo 110 || echo 150) "fused"
  GDN_CASES=varlen16x1024_H32_HV32,T8192_H16_HV32,T32768_H16_HV32 gdn_sweep 230 default,fused,fused_d16,fused_s3,fused_d16_s3,fused_a200
fi
gdn_archive r73
