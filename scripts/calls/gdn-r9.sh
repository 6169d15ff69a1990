# Round 7, call 3: catch the intermittent T=1 illegal address in a CUDA core dump (the recipe of vLLM's
# "CUDA debugging" post) and read the faulting kernel, PC and registers with cuda-gdb. Up to 3 target-test runs
# (-n 8 -v), stopping at the first that leaves a core dump.
set -uo pipefail
FINAL="${OUT:-/tmp/atrex-out}"; OUT="$FINAL/logs"; mkdir -p "$OUT"
export PYTHONPATH="$PWD/packages/core/python:$PWD/packages/nvidia/src:$PWD/packages/ppu/src"
export ATREX_EXTRA_PLUGINS=atrex_nvidia._plugin:plugin ATREX_STRICT_PLUGINS=1 PYTHONUNBUFFERED=1
export CUDA_ENABLE_COREDUMP_ON_EXCEPTION=1 CUDA_COREDUMP_SHOW_PROGRESS=1
export CUDA_COREDUMP_GENERATION_FLAGS='skip_nonrelocated_elf_images,skip_global_memory,skip_shared_memory,skip_local_memory,skip_constbank_memory,skip_abort'
export CUDA_COREDUMP_FILE="$OUT/core_%p.nvcudmp"
CG=$(command -v cuda-gdb || ls /usr/local/cuda*/bin/cuda-gdb 2>/dev/null | head -n 1)
echo "cuda-gdb: ${CG:-none}"
for i in 1 2 3; do
  timeout 150 python3 -m pytest op_test/nvidia/chunk_gdn/test_chunk_gdn_sm90.py -v -p no:cacheprovider -n 8 > "$OUT/tests_$i.log" 2>&1
  echo "tests $i: rc $? $(tail -n 1 "$OUT/tests_$i.log")"; grep -m 3 -E "^\[gw[0-9]+\] .*(FAILED|ERROR)" "$OUT/tests_$i.log" | cut -c1-160
  ls "$OUT"/core_* >/dev/null 2>&1 && break
done
for f in "$OUT"/core_*; do
  [ -e "$f" ] || continue
  ls -la "$f"
  [ -n "$CG" ] && timeout 120 "$CG" -batch -ex "target cudacore $f" -ex "info cuda kernels" -ex "bt" \
      -ex 'x/12i $pc-96' -ex "info registers" > "$f.txt" 2>&1
  grep -v "^[A-Z]*R[0-9]* \|^P[0-9]" "$f.txt" | head -40 | cut -c1-200
done
tar czf "$FINAL/r9.tgz" -C "$OUT" --exclude='core_*.nvcudmp' . && rm -rf "$OUT"
