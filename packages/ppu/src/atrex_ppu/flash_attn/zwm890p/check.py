"""Host-only eligibility of ``ppu.decode`` and ``ppu.prefill`` on the ZW-M890P.

Reads shapes, dtypes, strides, data pointers and host ints of the normalized call only: never tensor
contents, never a device sync. The domains are the data tables below.
"""

from __future__ import annotations

import torch

from atrex import env
from atrex.eligibility import Eligibility, Reason
from atrex_ppu.flash_attn.zwm890p.scratch import kv_tiles

# ---- Shared domain --------------------------------------------------------------------------------
Q_DTYPE = torch.float8_e4m3fn  # q, k, v fp8 e4m3; out bf16
HEAD_DIMS = (256,)
NUM_SPLITS = (0, 32)  # inclusive
ALIGN_BYTES = 16  # q, k, v base pointers and k/v byte strides
OUT_ALIGN_ELEMS = 2  # bf16x2 stores: out pointer 4-byte aligned, row/head strides even
MAX_GRID_YZ = 65535

# ---- ppu.decode (direct-paged, FA3 label) ----------------------------------------------------------
DECODE_PAGE_SIZES = (64, 128, 256)
DECODE_GROUPS = (8, 16)  # Hq / Hk, the product's "GQA 8/16"
DECODE_MAX_SEQLEN_Q = (1, 5)  # inclusive

# ---- ppu.prefill (prep_kv) -------------------------------------------------------------------------
PREFILL_PAGE_MULTIPLE = 64
PREFILL_GROUP_MULTIPLE = 4  # includes 8/1 and 32/2
PREFILL_AUTO_SPLIT_CAP = 8
#: The retained 8/1 kernel: heads (Hq, Hk), no descale tensor, softmax scale 1/16 (as verified).
H8K1_HEADS = (8, 1)
H8K1_SCALE = 0.0625


def _common(call, reasons: list[Reason]) -> None:
    tgt = call.target
    if not tgt.emulated and env.settings().ppu_hgcc is None:
        reasons.append(Reason("requires", "ATREX_PPU_HGCC", None,
                              "the path of HGCC on a PPU host (or ATREX_PPU_EMULATE=1 on an NVIDIA SM90 device)"))
    if call.dtype != Q_DTYPE:
        reasons.append(Reason("dtype", "q", str(call.dtype), "torch.float8_e4m3fn q, k, v (bf16 output)"))
    if call.head_dim not in HEAD_DIMS:
        reasons.append(Reason("head_dim", "q", call.head_dim, "256"))
    if not call.paged:
        reasons.append(Reason("paged", "block_table", None, "paged KV (block_table + seqused_k)"))
    if not call.causal:
        reasons.append(Reason("causal", "causal", False, "causal=True"))
    if call.window_left != -1:
        reasons.append(Reason("window", "window_size", (call.window_left, call.window_right),
                              "full window (-1, -1) / (-1, 0)"))
    if call.softcap != 0.0:
        reasons.append(Reason("softcap", "softcap", call.softcap, "0 (no softcap)"))
    if call.s_aux is not None:
        reasons.append(Reason("sinks", "s_aux", tuple(call.s_aux.shape), "None (no attention sinks)"))
    if call.return_lse:
        reasons.append(Reason("lse", "return_softmax_lse", True, "False (the PPU kernels return no LSE)"))
    lo, hi = NUM_SPLITS
    if not lo <= call.num_splits <= hi:
        reasons.append(Reason("num_splits", "num_splits", call.num_splits, f"{lo}..{hi}"))
    q = call.q
    hq, d = call.num_heads_q, call.head_dim
    if tuple(q.stride()) != (hq * d, d, 1) and call.total_q > 1:
        reasons.append(Reason("layout", "q", f"strides {tuple(q.stride())}",
                              f"contiguous q [Tq, Hq, 256] (strides ({hq * d}, {d}, 1)); strided rows are not supported"))
    elif call.total_q == 1 and q.stride(1) != d and hq > 1:
        reasons.append(Reason("layout", "q", f"strides {tuple(q.stride())}", f"contiguous heads (stride(1) == {d})"))
    if q.data_ptr() % ALIGN_BYTES:
        reasons.append(Reason("alignment", "q", f"data_ptr % 16 = {q.data_ptr() % ALIGN_BYTES}", "16-byte aligned"))
    if call.paged:
        for name, t in (("k", call.k), ("v", call.v)):
            bad = [s for s, n in zip(t.stride()[:3], t.shape[:3]) if n > 1 and (s <= 0 or s % ALIGN_BYTES)]
            if bad or t.data_ptr() % ALIGN_BYTES:
                reasons.append(Reason("layout", name, f"strides {tuple(t.stride())}, data_ptr % 16 = "
                                      f"{t.data_ptr() % ALIGN_BYTES}",
                                      "16-byte aligned base and positive block/token/head strides that are multiples "
                                      "of 16 bytes"))
        width = call.block_table.shape[1]
        if width * call.page_size < call.max_seqlen_k:
            reasons.append(Reason("block_table", "block_table", f"width {width} x page {call.page_size}",
                                  f"covering max_seqlen_k={call.max_seqlen_k} (W * page_size >= max_seqlen_k)"))
    out = call.out
    if out is not None and (out.data_ptr() % (2 * OUT_ALIGN_ELEMS) or out.stride(0) % OUT_ALIGN_ELEMS
                            or out.stride(1) % OUT_ALIGN_ELEMS):
        reasons.append(Reason("layout", "out", f"strides {tuple(out.stride())}",
                              "4-byte aligned bf16 out with even row and head strides"))
    if call.batch > MAX_GRID_YZ or call.num_heads_q > MAX_GRID_YZ or call.num_heads_k * hi > MAX_GRID_YZ:
        reasons.append(Reason("batch", "cu_seqlens_q", f"B={call.batch}, Hq={call.num_heads_q}",
                              f"B, Hq and 32 * Hk at most {MAX_GRID_YZ}"))


def check_decode(call) -> Eligibility:
    """``ppu.decode``: direct-paged short-Q decode (FA3 contract)."""
    reasons: list[Reason] = []
    _common(call, reasons)
    if call.paged and call.page_size not in DECODE_PAGE_SIZES:
        reasons.append(Reason("page_size", "k", call.page_size, "64, 128 or 256"))
    if call.gqa_ratio not in DECODE_GROUPS:
        reasons.append(Reason("gqa", "k", f"num_heads_q/num_heads_k = {call.num_heads_q}/{call.num_heads_k}",
                              "a GQA group of 8 or 16"))
    lo, hi = DECODE_MAX_SEQLEN_Q
    if not lo <= call.max_seqlen_q <= hi:
        reasons.append(Reason("max_seqlen_q", "max_seqlen_q", call.max_seqlen_q, f"{lo}..{hi}"))
    return Eligibility.of(reasons)


def check_prefill(call) -> Eligibility:
    """``ppu.prefill``: prep_kv packing + tiled prefill (8/1 unit-scale kernel or the general kernel)."""
    reasons: list[Reason] = []
    _common(call, reasons)
    if call.paged and call.page_size % PREFILL_PAGE_MULTIPLE:
        reasons.append(Reason("page_size", "k", call.page_size, "a multiple of 64"))
    if call.gqa_ratio % PREFILL_GROUP_MULTIPLE:
        reasons.append(Reason("gqa", "k", f"num_heads_q/num_heads_k = {call.num_heads_q}/{call.num_heads_k}",
                              "a GQA group divisible by 4 (e.g. 8/1, 32/2)"))
    if call.paged and tuple(call.k.stride()) != tuple(call.v.stride()):
        reasons.append(Reason("layout", "v", f"strides {tuple(call.v.stride())}",
                              f"the same layout as k (strides {tuple(call.k.stride())})"))
    return Eligibility.of(reasons)


def uses_h8k1(call) -> bool:
    """The retained 8/1 kernel serves the call (else atrex_ppu_attn_general)."""
    return ((call.num_heads_q, call.num_heads_k) == H8K1_HEADS and call.q_descale is None
            and call.k_descale is None and call.v_descale is None and call.softmax_scale == H8K1_SCALE)


def decode_splits(batch: int, num_kv_heads: int, max_seqlen_k: int, sm_count: int, num_splits: int) -> int:
    """Graph-static decode split count (never from runtime KV lengths; no minimum KV length).

    0 -> enough CTAs for two waves: ``ceil(2 * SMs / (B * Hk))``, at most 32; 1 -> 1; n > 1 -> at most n.
    Always at most ``ceil(max_seqlen_k / 64)`` (a split owns whole 64-token tiles).
    """
    tiles = kv_tiles(max_seqlen_k)
    if num_splits == 1:
        return 1
    if num_splits == 0:
        want = -(-2 * max(sm_count, 1) // max(1, batch * num_kv_heads))
    else:
        want = num_splits
    return max(1, min(want, NUM_SPLITS[1], tiles))


def prefill_splits(batch: int, num_kv_heads: int, q_tiles: int, max_seqlen_k: int, sm_count: int,
                   num_splits: int) -> int:
    """Graph-static prefill split count: auto (0) capped at 8, always at most ``ceil(max_seqlen_k / 64)``."""
    tiles = kv_tiles(max_seqlen_k)
    if num_splits == 1:
        return 1
    if num_splits == 0:
        want = min(PREFILL_AUTO_SPLIT_CAP, -(-2 * max(sm_count, 1) // max(1, batch * num_kv_heads * q_tiles)))
    else:
        want = num_splits
    return max(1, min(want, NUM_SPLITS[1], tiles))
