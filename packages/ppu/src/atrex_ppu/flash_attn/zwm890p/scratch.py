"""Scratch sizing of the PPU prefill path (pure arithmetic, no torch): size the serving KV cache with it.

Every ``ppu.prefill`` call packs the K and V pages it reads into invocation-local scratch
(``prep_kv``): one 64-token x 256-byte fp8 tile per (request, KV head, 64-token slot of
``max_seqlen_k``), for K and again for V, plus a small fp32 ``[3, B, Hk]`` descale buffer and, when the
call is split over the KV axis, fp32 split partials (``splits x total_q x num_heads_q x (256 + 2)``
values). The memory comes from the caching allocator (or the CUDA-graph pool) for the call only; it is
not a per-layer cache, but serving must leave that much headroom when sizing the KV cache, and
``max_seqlen_k`` (a capacity under CUDA graphs) drives it.

Example: 64 requests, one KV head, ``max_seqlen_k = 16384`` ->
``prefill_packed_kv_bytes(64, 1, 16384) == 536870912`` (256 MiB for K + 256 MiB for V = **512 MiB**).
"""

from __future__ import annotations

__all__ = ["TILE_BYTES", "TILE_TOKENS", "kv_tiles", "prefill_packed_kv_bytes", "prefill_scratch_bytes"]

TILE_TOKENS = 64
HEAD_DIM = 256
TILE_BYTES = TILE_TOKENS * HEAD_DIM  # 16384: one packed fp8 tile
_ALIGN = 256


def kv_tiles(max_seqlen_k: int) -> int:
    """Tile slots per (request, KV head): ``ceil(max_seqlen_k / 64)``, at least 1."""
    return max(1, -(-int(max_seqlen_k) // TILE_TOKENS))


def _round(n: int) -> int:
    return -(-n // _ALIGN) * _ALIGN


def prefill_packed_kv_bytes(requests: int, num_kv_heads: int, max_seqlen_k: int) -> int:
    """Bytes of packed K plus packed V: ``2 * requests * num_kv_heads * ceil(max_seqlen_k / 64) * 16384``.

    >>> prefill_packed_kv_bytes(64, 1, 16384) // 2**20
    512
    """
    return 2 * int(requests) * int(num_kv_heads) * kv_tiles(max_seqlen_k) * TILE_BYTES


def prefill_scratch_layout(requests: int, num_kv_heads: int, max_seqlen_k: int, splits: int = 1, *,
                           total_q: int = 0, num_heads_q: int = 0) -> dict[str, tuple[int, int]]:
    """Byte ``(offset, size)`` of each region of the one scratch buffer a prefill call allocates."""
    tiles = kv_tiles(max_seqlen_k)
    packed = int(requests) * int(num_kv_heads) * tiles * TILE_BYTES
    regions = [("k", packed), ("v", packed), ("scales", 3 * int(requests) * int(num_kv_heads) * 4)]
    if splits > 1:
        rows = int(splits) * int(total_q) * int(num_heads_q)
        regions += [("part_o", rows * HEAD_DIM * 4), ("part_ml", rows * 2 * 4)]
    layout, off = {}, 0
    for name, size in regions:
        layout[name] = (off, size)
        off = _round(off + size)
    layout["total"] = (0, off)
    return layout


def prefill_scratch_bytes(requests: int, num_kv_heads: int, max_seqlen_k: int, splits: int = 1, *,
                          total_q: int = 0, num_heads_q: int = 0) -> int:
    """Invocation-local scratch of one ``ppu.prefill`` call, in bytes.

    Packed K and V (``requests * num_kv_heads * ceil(max_seqlen_k / 64) * 16384`` bytes each), the
    ``[3, requests, num_kv_heads]`` fp32 descale buffer and, for ``splits > 1``, the fp32 split partials
    (``splits * total_q * num_heads_q * (256 + 2) * 4`` bytes), each region rounded up to 256 bytes.

    Example: 64 requests, one KV head, 16K KV: 512 MiB of packed K/V plus 768 bytes of scales.

    >>> prefill_scratch_bytes(64, 1, 16384) - 512 * 2**20
    768
    """
    return prefill_scratch_layout(requests, num_kv_heads, max_seqlen_k, splits, total_q=total_q,
                                  num_heads_q=num_heads_q)["total"][1]
