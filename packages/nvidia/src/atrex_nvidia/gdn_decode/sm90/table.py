"""``nvidia.gdn_decode_sm90`` domain on nvidia/sm90 as data, read by ``impl.check``."""

import torch

#: target ``<family>/<arch>`` this implementation serves
FAMILY, ARCH = "nvidia", "sm90"
#: q/k/v dtypes (one dtype; the output in it)
IO_DTYPES = (torch.bfloat16, torch.float16)
#: state pool dtypes (the core accepts no others)
POOL_DTYPES = (torch.float32, torch.bfloat16)
#: head dims K and V: powers of two in this range (the state tile is [BV, K] in registers)
HEAD_DIMS = (16, 32, 64, 128, 256)
#: everything else of the contract is accepted: both pool layouts, any slot stride, GVA, varlen, 1-D / 2-D
#: slot indices, num_accepted_tokens, in place or returned, beta None, L2 norm, strided q/k/v/g/beta.


def dims_text() -> str:
    return ", ".join(str(d) for d in HEAD_DIMS)


def dtypes_text(dtypes) -> str:
    return " or ".join(str(d).replace("torch.", "") for d in dtypes)
