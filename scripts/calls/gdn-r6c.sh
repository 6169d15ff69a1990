# Round-6 H200 call 3: target tests (xdist -v: worker order, to attribute a device fault), the tail tests in one
# process when the xdist run failed, atrex bench run chunk_gdn --size perf (history), a T=32768 split sweep.
# ATREX_BENCH_COMMIT=<sha> bash scripts/calls/gdn-r6c.sh
set -uo pipefail
bash .gpuhost/g/install.sh > $OUT/install.log 2>&1
export PYTHONPATH="$PWD/packages/core/python:$PWD/packages/nvidia/src:$PWD/packages/ppu/src"
export ATREX_EXTRA_PLUGINS=atrex_nvidia._plugin:plugin ATREX_STRICT_PLUGINS=1 PYTHONUNBUFFERED=1
timeout 150 python3 -m pytest op_test/nvidia/chunk_gdn/test_chunk_gdn_sm90.py -v -p no:cacheprovider -n 8 > $OUT/tests.log 2>&1; rc=$?
echo "tests (xdist): rc $rc $(tail -n 1 $OUT/tests.log)"
if [ $rc -ne 0 ]; then
  grep -m 3 -E "^\[gw[0-9]+\] .*(FAILED|ERROR)" $OUT/tests.log | cut -c1-160
  timeout 90 python3 -m pytest op_test/nvidia/chunk_gdn/test_chunk_gdn_sm90.py -v -p no:cacheprovider -k "wy_form or graph or carry or names or dispatch or unwarmed" > $OUT/tests_tail.log 2>&1
  echo "tail tests (one process): $(tail -n 1 $OUT/tests_tail.log)"
fi
timeout 200 python3 -m atrex bench run chunk_gdn --size perf --out $OUT --history $OUT/history.jsonl --no-progress > $OUT/chunk_gdn_bench.log 2>&1; echo "bench exit $?"
timeout 110 python3 -m atrex_nvidia.chunk_gdn.sm90.bench_gdn --out $OUT/gdnv --sweep --ref-heads "" --deadline 80 --cases T32768_H16_HV32 --sweep-cases T32768_H16_HV32 --variants default,nosplit,split3,split4 > $OUT/sweep.log 2>&1; echo "sweep exit $?"
grep -h "^|" $OUT/bench_*.md | cut -c1-170
grep "^|" $OUT/gdnv/gdn_bench.md | cut -c1-200
