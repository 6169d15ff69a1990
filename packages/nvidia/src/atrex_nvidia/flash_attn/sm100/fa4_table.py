"""``nvidia.fa4`` domains on nvidia/sm100 (B200 class), per FA4 release (CPU-verified only).

FA4 b19 facts: fp16/bf16 and fp8 e4m3/e5m2 (fp8 only on 10.x, with fp32 [B, Hk] descales, bf16
out); generic kernel D = Dv in 8..128, a multiple of 16 bytes; D = Dv = 256 only through the
dedicated 2-CTA kernel (no softcap, sink, seqused_k, window, descales: non-paged only here);
tile_n 128 (page 128 -> TMA paged path, other pages cp.async with D % 16 == 0).
num_splits: ATREX passes 1 (a valid answer to 0 and to any upper bound n > 1; FA4's own split
heuristic reads max_seqlen_k, which is not graph-static). Not hardware-verified.

FA4 b36 facts that differ: learnable_sink fp16, bf16 or fp32; the dedicated D = 256 kernel is gone
(``sm100_hd256_2cta_fmha_forward`` removed): D = Dv = 256 runs the generic SM100 kernel, whose
1-CTA/2-CTA and pack_gqa choice reads batch size, heads and the SM count. ATREX's specialization
key does not carry those, so the b36 table declines D = 256 on 10.x (stricter than FA4). Varlen
batches above 256 get a block-count prefix sum and a block -> batch map as kernel arguments, and
the kernel takes max_seqlen_q at run time.
"""

from __future__ import annotations

import dataclasses

import torch

from atrex_nvidia.flash_attn.common_utils.fa4_domain import FA4_B19, FA4_B36, FP8, Fa4Domain


def tile_n_sm100(head_dim: int, causal: bool, local: bool) -> int:
    """FA4 default forward tile on 10.x (``FwdConfig(128, 128)``, b19 and b36)."""
    return 128


DOMAIN_B19 = Fa4Domain(
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

DOMAIN_B36 = dataclasses.replace(
    DOMAIN_B19,
    fa4_version=FA4_B36,
    sink_dtypes=(torch.float16, torch.bfloat16, torch.float32),
    hd256_dedicated=False,  # stricter than b36: D = 256 declined (see the module docstring)
    cu_hint_batch_above=256,
    tile_m=lambda head_dim: 128,
)

#: FA4 release -> domain
TABLES = {FA4_B19: DOMAIN_B19, FA4_B36: DOMAIN_B36}
