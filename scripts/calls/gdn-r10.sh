# Round 7, call 4: the T = 1 fix (state kernels without T specialised for T == 1) on the H200.
# 1) the sm90 compile gate with the host's Triton 3.6 (ptxas 12.8): SASS check of every specialisation;
# 2) the target tests (-n 8 -v) four times with CUDA core dumps on (the fault showed up in 5 of 8 such runs before);
# 3) bench_gdn, default kernels, T=8192/16/32 and varlen 16x1024 (no fla), to confirm the perf path is unchanged.
set -uo pipefail
FINAL="${OUT:-/tmp/atrex-out}"; OUT="$FINAL/logs"; mkdir -p "$OUT"
export PYTHONPATH="$PWD/packages/core/python:$PWD/packages/nvidia/src:$PWD/packages/ppu/src"
export ATREX_EXTRA_PLUGINS=atrex_nvidia._plugin:plugin ATREX_STRICT_PLUGINS=1 PYTHONUNBUFFERED=1
timeout 170 python3 -m pytest op_test/nvidia/test_triton_sm90_compile.py op_test/nvidia/test_sass_check.py -v \
  -p no:cacheprovider > "$OUT/compile_gate.log" 2>&1
echo "compile gate: rc $? $(tail -n 1 "$OUT/compile_gate.log")"
export CUDA_ENABLE_COREDUMP_ON_EXCEPTION=1
export CUDA_COREDUMP_GENERATION_FLAGS='skip_nonrelocated_elf_images,skip_global_memory,skip_shared_memory,skip_local_memory,skip_constbank_memory,skip_abort'
export CUDA_COREDUMP_FILE="$OUT/core_%p.nvcudmp"
for i in 1 2 3 4; do
  timeout 150 python3 -m pytest op_test/nvidia/chunk_gdn/test_chunk_gdn_sm90.py -v -p no:cacheprovider -n 8 > "$OUT/tests_$i.log" 2>&1
  echo "tests $i: rc $? $(tail -n 1 "$OUT/tests_$i.log")"; grep -m 3 -E "^\[gw[0-9]+\] .*(FAILED|ERROR)" "$OUT/tests_$i.log" | cut -c1-160
done
for f in "$OUT"/core_*.nvcudmp; do
  [ -e "$f" ] || continue
  timeout 120 /usr/local/cuda/bin/cuda-gdb -batch -ex "target cudacore $f" -ex "info cuda kernels" -ex "bt" > "$f.txt" 2>&1
  head -12 "$f.txt" | cut -c1-200; rm -f "$f"
done
unset CUDA_ENABLE_COREDUMP_ON_EXCEPTION
timeout 150 python3 -m atrex_nvidia.chunk_gdn.sm90.bench_gdn --out "$OUT/gdnv" --sweep --ref-heads "" --deadline 120 \
  --cases varlen16x1024_H32_HV32,T8192_H16_HV32 --sweep-cases varlen16x1024_H32_HV32,T8192_H16_HV32 \
  --variants default > "$OUT/sweep.log" 2>&1
echo "sweep exit $?"; grep "^|" "$OUT/gdnv/gdn_bench.md" | tail -n 3 | cut -c1-200
tar czf "$FINAL/r10.tgz" -C "$OUT" . && rm -rf "$OUT"
