"""The class vLLM's attention-backend registry resolves ``FLASH_ATTN`` to while the ATREX plugin is active.

vLLM imports this module (never ``import atrex``) when it selects FLASH_ATTN. The class is vLLM's own
``FlashAttentionBackend`` unchanged: the kernel calls are globals of vLLM's backend module, which importing that
module has already patched (``_attn.patch_module``, run by the plugin's post-import hook; run here too in case the
hook was not installed in this process). Registering the subclass makes the switch visible in vLLM's registry
(``AttentionBackendEnum.FLASH_ATTN.get_path()``) and in its "Using ... backend" log line.
"""

from __future__ import annotations

from vllm.v1.attention.backends import flash_attn as _vllm_flash_attn

from atrex.integrations.vllm import _attn
from atrex.integrations.vllm._fallback import LOG

try:
    _attn.patch_module(_vllm_flash_attn)
except Exception:  # resolving the backend must not fail: vLLM's kernels then stay
    LOG.exception("ATREX: patching %s failed; FLASH_ATTN keeps vLLM's kernels", _vllm_flash_attn.__name__)


class AtrexFlashAttentionBackend(_vllm_flash_attn.FlashAttentionBackend):
    """vLLM's FlashAttentionBackend, whose kernel calls go through ``atrex.flash_attn_varlen_func`` (calls ATREX
    declines run vLLM's FlashAttention kernel). ``get_name()`` stays ``FLASH_ATTN``."""
