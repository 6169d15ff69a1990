"""``nvidia.paged_prefill_sm90`` domain on nvidia/sm90 as data, read by ``impl.check``."""

import torch

#: target ``<family>/<arch>`` this implementation serves
FAMILY, ARCH = "nvidia", "sm90"
#: q/k/v dtypes (all three equal: the core rejects mixed dtypes); output in the same dtype
HALF_DTYPES = (torch.float16, torch.bfloat16)
#: fp8 q/k/v with optional fp32 [B, Hk] descales (any strides, stride 0 included); output bf16
FP8_DTYPES = (torch.float8_e4m3fn,)
#: D = Dv: inclusive range and multiple (padded to the next power of two inside the kernel)
HEAD_DIM_RANGE = (8, 256)
HEAD_DIM_MULTIPLE = 8
#: paged KV only (block_table + seqused_k); any page size >= 1, keys gathered per row (tuned for 16..128)
PAGED_ONLY = True
#: s_aux [Hq] dtypes
SINK_DTYPES = (torch.bfloat16, torch.float32)
#: everything else of the vLLM contract is accepted: any query length (prefill, chunked prefill, mixed
#: prefill + decode), any Hq % Hk == 0, causal (bottom-right), any window, softcap, LSE, out=, strided
#: (HND-permuted, interleaved) K/V views, column-sliced block tables, any alignment, num_splits (never
#: splits: 1 honoured, 0 and n > 1 are hints), deterministic (no atomics, one program per output row).


def dtypes_text() -> str:
    return ", ".join(str(d).replace("torch.", "") for d in HALF_DTYPES + FP8_DTYPES)
