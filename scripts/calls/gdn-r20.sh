# Round 9 (H200), call 6: the fp16-inverse guard case on the GPU, with its rows printed (r19: the bit-for-bit comparison
# with the Newton path failed there: a different binary).
set -uo pipefail
OUT="${OUT:-/tmp/atrex-out}"; mkdir -p "$OUT"
export PYTHONPATH="$PWD/packages/core/python:$PWD/packages/nvidia/src:$PWD/packages/ppu/src:$PWD/op_test/nvidia/chunk_gdn:$PWD/op_test"
export ATREX_EXTRA_PLUGINS=atrex_nvidia._plugin:plugin ATREX_STRICT_PLUGINS=1 PYTHONUNBUFFERED=1
timeout 60 python3 -c "
import _gdn_cases as C
from atrex_nvidia.chunk_gdn.sm90 import launch
for k, v in C.fp16_inverse_guard(launch, 'cuda').items(): print(k, v, 'OK' if v[0] <= v[2] else 'FAIL')
" 2>&1 | tail -n 5
timeout 60 python3 -m pytest op_test/nvidia/chunk_gdn/test_chunk_gdn_sm90.py -q -p no:cacheprovider -k "fp16_inverse_guard or intra_v3_newton" 2>&1 | tail -n 2
