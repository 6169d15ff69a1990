"""The ``atrex.backends`` entry point of atrex-nvidia: a manifest, nothing heavy imported."""

from __future__ import annotations

from atrex.plugin import PLUGIN_API, ImplSpec, PluginManifest

_FA4 = "atrex_nvidia.flash_attn.fa4"
_GDN90 = "atrex_nvidia.chunk_gdn.sm90.impl"

IMPLS: tuple[ImplSpec, ...] = (
    ImplSpec(
        op="flash_attn_varlen",
        id="nvidia.fa4",
        archs=("nvidia/sm90", "nvidia/sm100", "nvidia/sm103", "nvidia/sm120"),
        priority=100,
        check=f"{_FA4}:check",
        run=f"{_FA4}:run",
        prewarm=f"{_FA4}:prewarm",
        summary="FlashAttention-4 b19 (flash-attn-4==4.0.0b19, CuTe DSL) adapter; cached compiled kernels, "
                "num_splits=1 on SM90",
    ),
    ImplSpec(
        op="chunk_gated_delta_rule",
        id="nvidia.gdn_sm90",
        archs=("nvidia/sm90",),
        priority=100,
        check=f"{_GDN90}:check",
        run=f"{_GDN90}:run",
        prewarm=f"{_GDN90}:prewarm",
        summary="ATREX chunked Gated-DeltaNet forward (Triton, chunk 64, kernels atrex_sm90_gdn_*); "
                "capture-safe after prewarm",
    ),
)


def plugin() -> PluginManifest:
    return PluginManifest(name="nvidia", plugin_api=PLUGIN_API, families=("nvidia",), impls=IMPLS)
