"""The ``atrex.backends`` entry point of atrex-ppu: a manifest, nothing heavy imported."""

from __future__ import annotations

from atrex.plugin import PLUGIN_API, DeviceRule, ImplSpec, PluginManifest

_ZW = "atrex_ppu.flash_attn.zwm890p"

#: The PPU is recognised by its exact product name: its CUDA-compatible runtime reports capability 8.9
#: and would pass for an NVIDIA sm89. ATREX_PPU_EMULATE=1 runs the PPU sources on an NVIDIA SM90.
DEVICES: tuple[DeviceRule, ...] = (
    DeviceRule(family="ppu", arch="zwm890p", products=("ZW-M890P",), emulated_on=("nvidia/sm90",)),
)

IMPLS: tuple[ImplSpec, ...] = (
    ImplSpec(
        op="flash_attn_varlen",
        id="ppu.decode",
        archs=("ppu/zwm890p",),
        priority=10,
        check=f"{_ZW}.check:check_decode",
        run=f"{_ZW}.launch:run_decode",
        prewarm=f"{_ZW}.launch:prewarm_decode",
        summary="ZW-M890P direct-paged decode (FA3 label): fp8 e4m3, D 256, GQA 8/16, pages 64/128/256, "
                "max_seqlen_q 1..5, split-KV 0..32",
    ),
    ImplSpec(
        op="flash_attn_varlen",
        id="ppu.prefill",
        archs=("ppu/zwm890p",),
        priority=20,
        check=f"{_ZW}.check:check_prefill",
        run=f"{_ZW}.launch:run_prefill",
        prewarm=f"{_ZW}.launch:prewarm_prefill",
        summary="ZW-M890P prefill (FA2/FA3 label): prep_kv packing, fp8 e4m3, D 256, GQA % 4 == 0, pages % 64 == 0",
    ),
)


def plugin() -> PluginManifest:
    return PluginManifest(name="ppu", plugin_api=PLUGIN_API, families=("ppu",), impls=IMPLS, devices=DEVICES)
