"""``nvidia.decode_splitkv`` domain on nvidia/sm90 as data, read by ``impl.check``."""

import torch

#: target ``<family>/<arch>`` this implementation serves
FAMILY, ARCH = "nvidia", "sm90"
#: q/k/v dtypes (all three equal: the core rejects mixed dtypes); output in the same dtype
HALF_DTYPES = (torch.float16, torch.bfloat16)
#: fp8 q/k/v with optional fp32 [B, Hk] descales; output bf16
FP8_DTYPES = (torch.float8_e4m3fn,)
#: D = Dv: inclusive range and multiple
HEAD_DIM_RANGE = (8, 256)
HEAD_DIM_MULTIPLE = 8
#: paged KV only (block_table + seqused_k); any page size >= 1 (tuned for 16, 32, 64, 128)
PAGED_ONLY = True
#: decode and MTP shapes: query tokens per sequence
MAX_SEQLEN_Q = 16
#: s_aux [Hq] dtypes
SINK_DTYPES = (torch.bfloat16, torch.float32)
#: everything else of the vLLM contract is accepted: any Hq % Hk == 0, causal (bottom-right), any
#: window, softcap, LSE, out=, strided (HND-permuted, interleaved) K/V views, column-sliced block
#: tables, num_splits (0 = auto and graph-static, 1 honoured, n > 1 an upper bound), deterministic.


def dtypes_text() -> str:
    return ", ".join(str(d).replace("torch.", "") for d in HALF_DTYPES + FP8_DTYPES)
