"""``nvidia.fa4`` domains on nvidia/sm90 (H100 / H200 / H20): one per FA4 release.

FA4 b19 facts: fp16/bf16 only (fp8 asserts arch 10.x); D = Dv in 8..256, a multiple of 8;
paged KV through TMA when page_size == tile_n, else cp.async (asserts unless D % 16 == 0);
learnable_sink bf16 [Hq]; no split-KV ("SplitKV not supported on SM 9.0"), so the adapter always
passes num_splits=1 (vLLM's 0 would run FA4's split heuristic and assert for small B*Hk, long KV).

FA4 b36 differs on SM90 in three facts (same head dims, tiles, dtypes and asserts otherwise):
learnable_sink may be fp16, bf16 or fp32 (``_LEARNABLE_SINK_DTYPES``); the cp.async paged loader
gives each producer thread ``ceil(tile_n / 128)`` page-table entries (b19: ``tile_n // 128``), so
cp.async paging works for every tile_n (80, 96, 112, 144 included); varlen batches above 256 get
a block-count prefix sum as an extra kernel argument (``cu_hint_batch_above``).
"""

from __future__ import annotations

import dataclasses

import torch

from atrex_nvidia.flash_attn.common_utils.fa4_domain import (
    FA4_B19,
    FA4_B36,
    DecodePolicy,
    Fa4Domain,
    PagedTmaPolicy,
)


def tile_n_sm90(head_dim: int, causal: bool, local: bool) -> int:
    """FA4 ``_tile_size_fwd_sm90`` (identical in b19 and b36) n-tile for D = Dv. page_size == tile_n selects
    FA4's TMA paged path; any other page size its cp.async path."""
    if head_dim <= 64:
        return 128
    if head_dim <= 96:
        return 128 if (causal or local) else 144
    if head_dim <= 128:
        return 128
    if head_dim <= 192:
        return 96 if local else 112  # Dv = D > 128 here (FA4: 128 only when Dv <= 128)
    return 64 if local else 80


def tile_m_sm90(head_dim: int) -> int:
    """FA4 ``_tile_size_fwd_sm90`` m-tile (no block sparsity): 192 for D <= 96, else 128."""
    return 192 if head_dim <= 96 else 128


DOMAIN_B19 = Fa4Domain(
    arch="sm90",
    fa4_arch=90,
    dtypes=(torch.float16, torch.bfloat16),
    head_dim_range=(8, 256),
    head_dim_align_bytes=16,
    paged=True,
    paged_cpasync_head_dim_multiple=16,
    tile_n=tile_n_sm90,
    sink_dtypes=(torch.bfloat16,),
    softcap=True,
    window=True,
    fp8_dtypes=(),  # b19: "FP8 is only supported on SM100 (compute capability 10.x)"
    hd256_dedicated=False,  # SM90 runs D=256 in its generic kernel (tile 128x80, 128x64 if local)
    # Paged calls with max_seqlen_q <= 16 belong to nvidia.decode_splitkv (faster than FA4 there), which
    # fa4.check confirms is enabled and accepts the call before declining it (else FA4 keeps it).
    # Measured on the H200 (2026-12-02, the decode matrix, bf16 32q/8kv d128, CUDA-graph replay, same run):
    # nvidia.decode_splitkv / FA4 (num_splits=1) speedup 5.6-11.7x at B=1 (Lk 8k-128k), 1.2-1.55x at B=8,
    # 1.15-1.56x at B=64-256, and 0.91-0.95x at B=32 Lk=4096 with 1 split (the split rule now gives that
    # shape 2 splits; see docs/results/flash_attn.md for the run that checks it).
    decode_policy=DecodePolicy(enabled=True, max_seqlen_q=16, goes_to="nvidia.decode_splitkv"),
    # Paged calls with page_size == tile_n (FA4's TMA paged path) belong to nvidia.paged_prefill_sm90, which
    # never loads keys at or past seqused_k. Why: the TMA path loads whole pages, masks the scores only, and
    # multiplies the zero probabilities by the page tail's V (0 * NaN = NaN); observed on the H200 with b19
    # (op_test nan_page_tails_tma, strict xfail). b36 keeps the same whole-page TMA loads and has not been
    # measured on SM90, so the rule covers both releases. As with the decode policy, fa4.check keeps the call
    # when that implementation is disabled or declines it. Cost: those shapes run a Triton kernel instead of
    # FA4 (page 128 at D <= 128, page 80 at D = 256, ...); vLLM's usual page 16 takes the clean cp.async path.
    paged_tma_policy=PagedTmaPolicy(enabled=True, goes_to="nvidia.paged_prefill_sm90"),
    notes=(
        "num_splits: always 1 (b19 has no split-KV on SM90)",
        "cp.async paged KV only for tile_n == 128 (D <= 64; D <= 96 causal/local; D <= 128): D > 128 paged "
        "runs only with page_size == tile_n (TMA), e.g. Qwen3-Next D=256 causal with page 80",
        "KNOWN GAP (H200): with page_size == tile_n (TMA path) NaN in page tails beyond seqused_k reaches the "
        "output (0*NaN); the cp.async path is clean. Such calls go to nvidia.paged_prefill_sm90 "
        "(policy.paged_tma_tail) unless it is disabled.",
    ),
)

DOMAIN_B36 = dataclasses.replace(
    DOMAIN_B19,
    fa4_version=FA4_B36,
    sink_dtypes=(torch.float16, torch.bfloat16, torch.float32),
    paged_cpasync_tile_n_multiple=1,  # b36 rounds the per-thread page entries up: any tile_n
    cu_hint_batch_above=256,
    tile_m=tile_m_sm90,
    notes=(
        "num_splits: always 1 (b36 still asserts 'SplitKV not supported on SM 9.0')",
        "cp.async paged KV for every tile_n (D % 16 == 0), TMA when page_size == tile_n (irregular D too)",
        "learnable_sink fp16, bf16 or fp32",
    ),
)

#: FA4 release -> domain
TABLES = {FA4_B19: DOMAIN_B19, FA4_B36: DOMAIN_B36}
