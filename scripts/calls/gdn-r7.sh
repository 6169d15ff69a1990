# Prepared in round 6 for the next H200 session (one call, ~8 min):
#   1) replay of the intermittent-fault order, 4 processes default + 4 processes STATE_IMPL=v2 at once (as xdist);
#   2) the target tests (-n 8 -v);
#   3) bench_gdn sweep of the persistent tma kernel on varlen 16x1024 and T=8192 against the default.
# bash .gpuhost/g/install.sh && bash scripts/calls/gdn-r7.sh      (.gpuhost/g: fla-core + flash-linear-attention 0.6.0)
set -uo pipefail
OUT="${OUT:-/tmp/atrex-out}"; mkdir -p "$OUT"
export PYTHONPATH="$PWD/packages/core/python:$PWD/packages/nvidia/src:$PWD/packages/ppu/src"
export ATREX_EXTRA_PLUGINS=atrex_nvidia._plugin:plugin ATREX_STRICT_PLUGINS=1 PYTHONUNBUFFERED=1
for i in 1 2 3 4; do
  timeout 90 python3 scripts/gdn_fault_repro.py default 8 > "$OUT/repro_default_$i.log" 2>&1 &
  timeout 90 python3 scripts/gdn_fault_repro.py v2 8 > "$OUT/repro_v2_$i.log" 2>&1 &
done
wait
for f in "$OUT"/repro_*.log; do echo "$(basename "$f"): $(tail -n 1 "$f" | cut -c1-120)"; done
timeout 120 python3 -m pytest op_test/nvidia/chunk_gdn/test_chunk_gdn_sm90.py -v -p no:cacheprovider -n 8 > "$OUT/tests.log" 2>&1
echo "tests: rc $? $(tail -n 1 "$OUT/tests.log")"; grep -m 3 -E "^\[gw[0-9]+\] .*(FAILED|ERROR)" "$OUT/tests.log" | cut -c1-160
timeout 200 python3 -m atrex_nvidia.chunk_gdn.sm90.bench_gdn --out "$OUT/gdnv" --sweep --ref-heads "" --deadline 170 \
  --cases varlen16x1024_H32_HV32,T8192_H16_HV32 --sweep-cases varlen16x1024_H32_HV32,T8192_H16_HV32 \
  --variants default,v2,tma,tma_p,tma_p_s3 > "$OUT/sweep.log" 2>&1
echo "sweep exit $?"; grep "^|" "$OUT/gdnv/gdn_bench.md" | cut -c1-200
