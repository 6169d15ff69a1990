#!/usr/bin/env bash
# One H200 session after the wheel bundles are installed (../shared/gpu-host/README.md):
# environment, target tests, atrex verify, atrex bench (history + reports). Logs go to $OUT;
# a short table is printed last. Reproduces the recorded numbers:
#   bash .gpuhost/b1/install.sh                       (first call)
#   bash .gpuhost/b2/install.sh && ATREX_BENCH_COMMIT=<sha> bash scripts/h200-session.sh   (second call)
set -uo pipefail
OUT="${OUT:-/tmp/atrex-out}"
mkdir -p "$OUT"
export PYTHONPATH="$PWD/packages/core/python:$PWD/packages/nvidia/src:$PWD/packages/ppu/src"
export ATREX_EXTRA_PLUGINS=atrex_nvidia._plugin:plugin ATREX_STRICT_PLUGINS=1 PYTHONUNBUFFERED=1
STEP="${STEPS:-env gdn-tests gdn-bench fa-bench-prefill fa-host}"
hist="$OUT/history.jsonl"
for s in $STEP; do
  case "$s" in
    env) python3 -m atrex env > "$OUT/env.log" 2>&1 ;;
    gdn-tests) timeout 200 python3 -m pytest op_test/nvidia/chunk_gdn -q -p no:cacheprovider -x > "$OUT/gdn_tests.log" 2>&1 ;;
    gdn-bench) timeout 150 python3 -m atrex bench run chunk_gdn --size perf --out "$OUT" --history "$hist" --no-progress > "$OUT/gdn_bench.log" 2>&1 ;;
    fa-bench-prefill) timeout 150 python3 -m atrex bench run flash_attn --match prefill/ --out "$OUT" --history "$hist" --no-progress > "$OUT/fa_bench.log" 2>&1 ;;
    decode-tests) timeout 240 python3 -m pytest op_test/nvidia/flash_attn/test_flash_attn_sm90.py -q -p no:cacheprovider -k decode > "$OUT/decode_tests.log" 2>&1 ;;
    decode-bench) timeout 300 python3 -m atrex_nvidia.flash_attn.sm90.decode_splitkv.bench_decode --out "$OUT" ${DECODE_ARGS:-} > "$OUT/decode_bench.log" 2>&1 ;;
    gdn-dispatch) timeout 120 python3 -m pytest op_test/nvidia/chunk_gdn/test_chunk_gdn_sm90.py -q -p no:cacheprovider -k "dispatch or capture_unwarmed or kernel_names" > "$OUT/gdn_dispatch.log" 2>&1 ;;
    fa-tests) timeout 300 python3 -m pytest op_test/nvidia/flash_attn/test_flash_attn_sm90.py -q -p no:cacheprovider -k "not decode" > "$OUT/fa_tests.log" 2>&1 ;;
    decode-sweep) timeout 150 python3 -m atrex_nvidia.flash_attn.sm90.decode_splitkv.bench_decode --out "$OUT/sweep" --sweep --shapes "${SWEEP_SHAPES:-1x8192,8x8192,32x4096}" > "$OUT/decode_sweep.log" 2>&1 ;;
    gdn-sweep) timeout 300 python3 -m atrex_nvidia.chunk_gdn.sm90.bench_gdn --out "$OUT/gdn" --sweep --deadline 240 --cases T8192_H16_HV32,varlen16x1024_H32_HV32 > "$OUT/gdn_sweep.log" 2>&1 ;;
    chunk-gdn-bench) timeout 280 python3 -m atrex bench run chunk_gdn --size perf --out "$OUT" --history "$hist" --no-progress > "$OUT/chunk_gdn_bench.log" 2>&1 ;;
    fa-bench-decode) timeout 200 python3 -m atrex bench run flash_attn --match decode/ --out "$OUT" --history "$hist" --no-progress > "$OUT/fa_bench_decode.log" 2>&1 ;;
    gdn-variants) timeout $(( ${GDN_DEADLINE:-420} + 60 )) python3 -m atrex_nvidia.chunk_gdn.sm90.bench_gdn --out "$OUT/gdnv" --sweep --ref-heads "" --deadline ${GDN_DEADLINE:-420} \
        --cases "${GDN_CASES:-T8192_H16_HV32,T32768_H16_HV32,varlen16x1024_H32_HV32}" --sweep-cases "${GDN_CASES:-T8192_H16_HV32,T32768_H16_HV32,varlen16x1024_H32_HV32}" \
        --variants "${GDN_VARIANTS:-default,v2_pf,v2_pf_s3,v2_pf_64x4,i2_v2_pf,i2tf_v2_pf}" > "$OUT/gdn_variants.log" 2>&1 ;;
    gdn-i2-probe)  # intra v2 in separate processes (a device fault must not hide the other cases)
      for c in T1 T64 qwen3next_T4224_vfirst varlen_0_1; do timeout 60 python3 scripts/gdn_debug.py "$c" fast INTRA_IMPL=v2 >> "$OUT/gdn_i2_probe.log" 2>&1 || echo "$c: exit $?" >> "$OUT/gdn_i2_probe.log"; done
      command -v compute-sanitizer >/dev/null && timeout 120 compute-sanitizer --tool memcheck python3 scripts/gdn_debug.py T1 fast INTRA_IMPL=v2 > "$OUT/gdn_i2_memcheck.log" 2>&1 ;;
    gdn-variant-tests)  # one pytest process per launcher variant
      for v in ${GDN_VTESTS:-v1_pair intra_v1 intra_v2_ieee state_v2_nopf}; do timeout ${GDN_VTEST_TIMEOUT:-150} python3 -m pytest op_test/nvidia/chunk_gdn/test_chunk_gdn_sm90.py -q -p no:cacheprovider -k "variants and $v" > "$OUT/gdn_vtests_$v.log" 2>&1; echo "variant $v: $(tail -n 1 "$OUT/gdn_vtests_$v.log")"; done ;;
    verify-gdn) timeout 200 python3 -m atrex verify chunk_gdn --size small > "$OUT/verify_chunk_gdn.log" 2>&1 ;;
    gdn-main) timeout 300 python3 -m atrex_nvidia.chunk_gdn.sm90.bench_gdn --out "$OUT/gdn" > "$OUT/gdn_main.log" 2>&1 ;;
    gdn-rest) timeout 100 python3 -m pytest op_test/nvidia/chunk_gdn/test_chunk_gdn_sm90.py -q -p no:cacheprovider -k "not test_cases" > "$OUT/gdn_rest.log" 2>&1 ;;
    fa-all) timeout "${FA_ALL_TIMEOUT:-330}" python3 -m pytest op_test/nvidia/flash_attn/test_flash_attn_sm90.py -q -p no:cacheprovider > "$OUT/fa_all.log" 2>&1 ;;
    gdn-host) timeout 120 python3 scripts/gdn_host_overhead.py > "$OUT/gdn_host.log" 2>&1 ;;
    host-dispatch) timeout 60 python3 scripts/host_dispatch_bench.py > "$OUT/host_dispatch.log" 2>&1 ;;
    gdn-ncu)  # Nsight Compute, full set, of the default kernels: one non-varlen and one varlen case
      for c in ${NCU_CASES:-T8192_H16_HV32 varlen16x1024_H32_HV32}; do
        case "$c" in varlen*) skip=3 ;; *) skip=2 ;; esac
        timeout 200 ncu --clock-control none --kernel-name regex:atrex_sm90_gdn_ --launch-skip $skip --launch-count $skip \
          --set full --import-source yes -f -o "$OUT/ncu_$c" python3 scripts/gdn_ncu.py "$c" ${NCU_HOOKS:-} > "$OUT/ncu_$c.txt" 2>&1
        ncu --import "$OUT/ncu_$c.ncu-rep" --page details >> "$OUT/ncu_$c.txt" 2>&1
        ncu --import "$OUT/ncu_$c.ncu-rep" --page source --csv --print-source sass > "$OUT/ncu_${c}_src.csv" 2>&1
      done ;;
    fa-host) timeout 120 python3 -m atrex_nvidia.flash_attn.bench_fa4 --skip prefill,decode --out "$OUT" > "$OUT/fa_host.log" 2>&1 ;;
  esac
  echo "step $s: exit $?"
done
tail -n 1 "$OUT/verify_chunk_gdn.log" 2>/dev/null; grep -h FAIL "$OUT/verify_chunk_gdn.log" 2>/dev/null | head -5
for f in gdn_tests gdn_rest gdn_dispatch decode_tests fa_tests fa_all; do [ -f "$OUT/$f.log" ] && echo "$f: $(tail -n 1 "$OUT/$f.log")"; done
grep -h "^|" "$OUT"/bench_*.md 2>/dev/null | cut -c1-150
grep -h "^|" "$OUT"/bench_decode.md "$OUT"/sweep/bench_decode.md 2>/dev/null | cut -c1-170
grep -h "^|" "$OUT"/gdn/gdn_bench.md "$OUT"/gdnv/gdn_bench.md 2>/dev/null | cut -c1-200
tail -n 8 "$OUT/gdn_i2_probe.log" 2>/dev/null; grep -m 5 -h "Invalid\|ERROR SUMMARY\|at .*atrex" "$OUT/gdn_i2_memcheck.log" 2>/dev/null
grep -h "us" "$OUT/fa_host.log" 2>/dev/null | tail -n 12
tail -n 14 "$OUT/host_dispatch.log" 2>/dev/null
for f in "$OUT"/ncu_*.txt; do [ -f "$f" ] && grep -h -E "^  [a-z_0-9]+|Duration|Registers Per|Achieved Occupancy|Theoretical Occupancy|Compute \\(SM\\) Throughput|Memory Throughput|Executed Ipc A|One or More Eligible|Issued Warp|Warp Cycles Per Issued" "$f" | cut -c1-120; done
