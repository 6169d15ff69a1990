# Round-6 H200 call 4: the target tests twice more under xdist (-v: each worker's order, to attribute the
# intermittent device fault of call 1), then atrex bench run chunk_gdn --size perf (history).
# ATREX_BENCH_COMMIT=<sha> bash scripts/calls/gdn-r6d.sh
set -uo pipefail
bash .gpuhost/g/install.sh > $OUT/install.log 2>&1
export PYTHONPATH="$PWD/packages/core/python:$PWD/packages/nvidia/src:$PWD/packages/ppu/src"
export ATREX_EXTRA_PLUGINS=atrex_nvidia._plugin:plugin ATREX_STRICT_PLUGINS=1 PYTHONUNBUFFERED=1
for i in 1 2; do
  timeout 80 python3 -m pytest op_test/nvidia/chunk_gdn/test_chunk_gdn_sm90.py -v -p no:cacheprovider -n 8 > $OUT/tests_$i.log 2>&1
  echo "tests run $i: rc $? $(tail -n 1 $OUT/tests_$i.log)"; grep -m 2 -E "^\[gw[0-9]+\] .*(FAILED|ERROR)" $OUT/tests_$i.log | cut -c1-160
done
timeout 290 python3 -m atrex bench run chunk_gdn --size perf --out $OUT --history $OUT/history.jsonl --no-progress > $OUT/chunk_gdn_bench.log 2>&1; echo "bench exit $?"
grep -h "^|" $OUT/bench_*.md | cut -c1-170
