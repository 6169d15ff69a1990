"""ATREX implementations for T-Head PPU ZW-M890P. Importing this package loads no kernel module.

``prefill_scratch_bytes(requests, num_kv_heads, max_seqlen_k, splits=1)`` gives the invocation-local
scratch of one prefill call (for KV-cache sizing; 64 requests x one KV head x 16K KV -> 512 MiB of
packed K/V).
"""

from atrex_ppu.flash_attn.zwm890p.scratch import prefill_packed_kv_bytes, prefill_scratch_bytes

__all__ = ["prefill_packed_kv_bytes", "prefill_scratch_bytes"]
__version__ = "0.1.0"
