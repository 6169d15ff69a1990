"""``nvidia.fa4`` domain on nvidia/sm100 (B200 class), TARGETS §3.4 (CPU-verified only).

FA4 b19 facts: fp16/bf16 and fp8 e4m3/e5m2 (fp8 only on 10.x, with fp32 [B, Hk] descales, bf16
out); generic kernel D = Dv in 8..128, a multiple of 16 bytes; D = Dv = 256 only through the
dedicated 2-CTA kernel (no softcap, sink, seqused_k, window, descales: non-paged only here);
tile_n 128 (page 128 -> TMA paged path, other pages cp.async with D % 16 == 0).
num_splits: ATREX passes 1 (a valid answer to 0 and to any upper bound n > 1; FA4's own split
heuristic reads max_seqlen_k, which is not graph-static). Not hardware-verified.
"""

from __future__ import annotations

import torch

from atrex_nvidia.flash_attn.common_utils.fa4_domain import FP8, Fa4Domain


def tile_n_sm100(head_dim: int, causal: bool, local: bool) -> int:
    """FA4 b19 default forward tile on 10.x (``FwdConfig(128, 128)``)."""
    return 128


DOMAIN = Fa4Domain(
    arch="sm100",
    fa4_arch=100,
    dtypes=(torch.float16, torch.bfloat16),
    head_dim_range=(8, 128),
    head_dim_align_bytes=16,
    paged=True,
    paged_cpasync_head_dim_multiple=16,
    tile_n=tile_n_sm100,
    sink_dtypes=(torch.bfloat16,),
    softcap=True,
    window=True,
    fp8_dtypes=FP8,
    hd256_dedicated=True,
    decode_policy=None,
    notes=("not hardware-verified (CPU check tables only)",),
)
