"""``nvidia.fa4`` domains on nvidia/sm120 (RTX 50xx / RTX PRO 6000), CPU-verified only.

FA4 b19's SM120 path is the SM80-MMA kernel (``FlashAttentionForwardSm120``): fp16/bf16 only
(fp8 asserts arch 10.x), no paged KV ("Paged KV not supported on SM 12.0"), no split-KV, and
``assert learnable_sink is None`` (no sinks). Tiles 128x128 for D <= 64, else 128x64 (99 KB SMEM).
FA4 b36 keeps all of these on 12.x (and asserts num_splits <= 1); only its call convention changes
(varlen batches above 256 pass a block-count prefix sum).
"""

from __future__ import annotations

import dataclasses

import torch

from atrex_nvidia.flash_attn.common_utils.fa4_domain import FA4_B19, FA4_B36, Fa4Domain


def tile_n_sm120(head_dim: int, causal: bool, local: bool) -> int:
    return 128 if head_dim <= 64 else 64


DOMAIN_B19 = Fa4Domain(
    arch="sm120",
    fa4_arch=120,
    dtypes=(torch.float16, torch.bfloat16),
    # Stricter than FA4: b19 validates no head dim on 12.x. Its 128x64 tile needs 512*D bytes of
    # SMEM (Q + K + V), so D = 256 cannot fit 99 KB; D <= 128 is the range its tile table was written
    # for (192 would fit SMEM but is untested upstream on 12.x and unverifiable here).
    head_dim_range=(8, 128),
    head_dim_align_bytes=16,
    paged=False,
    paged_cpasync_head_dim_multiple=16,
    tile_n=tile_n_sm120,
    sink_dtypes=(),
    softcap=True,
    window=True,
    fp8_dtypes=(),
    hd256_dedicated=False,
    decode_policy=None,
    notes=("not hardware-verified (CPU check tables only)",),
)

DOMAIN_B36 = dataclasses.replace(DOMAIN_B19, fa4_version=FA4_B36, cu_hint_batch_above=256,
                                 tile_m=lambda head_dim: 128)

#: FA4 release -> domain
TABLES = {FA4_B19: DOMAIN_B19, FA4_B36: DOMAIN_B36}
