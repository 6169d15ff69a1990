"""The ``atrex.backends`` entry point of atrex-nvidia: a manifest, nothing heavy imported."""

from __future__ import annotations

from atrex.plugin import PLUGIN_API, ImplSpec, PluginManifest

_FA4 = "atrex_nvidia.flash_attn.fa4"
_DECODE_SM90 = "atrex_nvidia.flash_attn.sm90.decode_splitkv.impl"
_PREFILL_SM90 = "atrex_nvidia.flash_attn.sm90.paged_prefill.impl"
_GDN90 = "atrex_nvidia.chunk_gdn.sm90.impl"
_GDN_DECODE90 = "atrex_nvidia.gdn_decode.sm90.impl"

IMPLS: tuple[ImplSpec, ...] = (
    ImplSpec(
        op="flash_attn_varlen",
        id="nvidia.fa4",
        archs=("nvidia/sm90", "nvidia/sm100", "nvidia/sm103", "nvidia/sm120"),
        priority=100,
        check=f"{_FA4}:check",
        run=f"{_FA4}:run",
        prewarm=f"{_FA4}:prewarm",
        summary="FlashAttention-4 (flash-attn-4 4.0.0b19 or 4.0.0b36, CuTe DSL) adapter; check tables per "
                "release, cached compiled kernels, num_splits=1 on SM90",
    ),
    # Lower priority wins: FA4 (100) is asked first; on sm90 its check hands paged decode shapes
    # (max_seqlen_q <= 16) to this kernel, which also takes what FA4 cannot (fp8; b19: fp32 sinks; D 40/72 paged).
    ImplSpec(
        op="flash_attn_varlen",
        id="nvidia.decode_splitkv",
        archs=("nvidia/sm90",),
        priority=110,
        check=f"{_DECODE_SM90}:check",
        run=f"{_DECODE_SM90}:run",
        prewarm=f"{_DECODE_SM90}:prewarm",
        bind=f"{_DECODE_SM90}:bind",
        summary="ATREX split-KV paged decode (Triton, atrex_sm90_decode_*): max_seqlen_q <= 16, fp16/bf16/fp8, "
                "graph-static split count, deterministic",
    ),
    # After FA4 and the decode kernel: paged calls of any query length that FA4 declines (fp8; D 40/72/88
    # with page != tile_n; b19: fp32 sinks, D > 128 with page != tile_n) or that FA4's sm90 table hands
    # over (policy.paged_tma_tail: page_size == FA4's tile_n, whose TMA path leaks NaN from page tails).
    ImplSpec(
        op="flash_attn_varlen",
        id="nvidia.paged_prefill_sm90",
        archs=("nvidia/sm90",),
        priority=120,
        check=f"{_PREFILL_SM90}:check",
        run=f"{_PREFILL_SM90}:run",
        prewarm=f"{_PREFILL_SM90}:prewarm",
        bind=f"{_PREFILL_SM90}:bind",
        summary="ATREX paged varlen attention for any query length (Triton, atrex_sm90_paged_prefill): "
                "fp16/bf16/fp8, any page size and GQA ratio, page tails never read, deterministic",
    ),
    ImplSpec(
        op="chunk_gated_delta_rule",
        id="nvidia.gdn_sm90",
        archs=("nvidia/sm90",),
        priority=100,
        check=f"{_GDN90}:check",
        run=f"{_GDN90}:run",
        prewarm=f"{_GDN90}:prewarm",
        bind=f"{_GDN90}:bind",
        summary="ATREX chunked Gated-DeltaNet forward (Triton, chunk 64, kernels atrex_sm90_gdn_*); "
                "capture-safe after prewarm",
    ),
    ImplSpec(
        op="fused_recurrent_gated_delta_rule",
        id="nvidia.gdn_decode_sm90",
        archs=("nvidia/sm90",),
        priority=100,
        check=f"{_GDN_DECODE90}:check",
        run=f"{_GDN_DECODE90}:run",
        prewarm=f"{_GDN_DECODE90}:prewarm",
        bind=f"{_GDN_DECODE90}:bind",
        summary="ATREX pool-indexed Gated-DeltaNet decode / MTP step (Triton, atrex_sm90_gdn_decode): fp32 state "
                "tile in registers, in place, padded slots masked; capture-safe after prewarm",
    ),
)


def plugin() -> PluginManifest:
    return PluginManifest(name="nvidia", plugin_api=PLUGIN_API, families=("nvidia",), impls=IMPLS)
