# Round-6 H200 call 2: locate the device fault of call 1 (59 target tests failed, all in one xdist worker).
set -uo pipefail
bash .gpuhost/g/install.sh > $OUT/install.log 2>&1
export PYTHONPATH="$PWD/packages/core/python:$PWD/packages/nvidia/src:$PWD/packages/ppu/src"
export ATREX_EXTRA_PLUGINS=atrex_nvidia._plugin:plugin ATREX_STRICT_PLUGINS=1 PYTHONUNBUFFERED=1
CUDA_LAUNCH_BLOCKING=1 timeout 230 python3 -m pytest op_test/nvidia/chunk_gdn/test_chunk_gdn_sm90.py -v -x -p no:cacheprovider > $OUT/tests_seq.log 2>&1; echo "seq tests: $(tail -n 1 $OUT/tests_seq.log)"
grep -E "FAILED|PASSED" $OUT/tests_seq.log | tail -3 | cut -c1-160
PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 300 compute-sanitizer --tool memcheck --print-limit 10 python3 scripts/gdn_memcheck.py > $OUT/memcheck.log 2>&1; echo "memcheck exit $?"
grep -E "^BEGIN|^END|Invalid|ERROR SUMMARY|at .*atrex|Address" $OUT/memcheck.log | grep -B2 -A6 -E "Invalid|FAIL|Error" | head -40 | cut -c1-200
grep -c "^END.*PASS" $OUT/memcheck.log; tail -n 3 $OUT/memcheck.log | cut -c1-200
