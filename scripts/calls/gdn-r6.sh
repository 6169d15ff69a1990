set -uo pipefail
bash .gpuhost/g/install.sh > $OUT/install.log 2>&1; tail -1 $OUT/install.log
export PYTHONPATH="$PWD/packages/core/python:$PWD/packages/nvidia/src:$PWD/packages/ppu/src"
export ATREX_EXTRA_PLUGINS=atrex_nvidia._plugin:plugin ATREX_STRICT_PLUGINS=1 PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > $OUT/smi.txt
timeout 200 python3 -m pytest op_test/nvidia/chunk_gdn/test_chunk_gdn_sm90.py -q -p no:cacheprovider -n 8 > $OUT/tests.log 2>&1; echo "tests: $(tail -n 1 $OUT/tests.log)"
grep -E "^FAILED|Error" $OUT/tests.log | head -8
timeout 280 python3 -m atrex_nvidia.chunk_gdn.sm90.bench_gdn --out $OUT/gdnv --sweep --ref-heads "" --deadline 250 --cases T8192_H16_HV32,T32768_H16_HV32 --sweep-cases T8192_H16_HV32,T32768_H16_HV32 --variants default,split,split_np,split3,split4,split8,split4_s2,split2_s2 > $OUT/sweep.log 2>&1; echo "sweep exit $?"
grep "^|" $OUT/gdnv/gdn_bench.md | cut -c1-230
