"""Launchers of ``ppu.decode`` and ``ppu.prefill`` (``run(call, out) -> None``; no LSE on the PPU).

Order in every ``run``: capture check (``AtrexCaptureError`` before any allocation or launch when a
needed library is not compiled and loaded in this process), then invocation-local scratch from the
caching allocator (the graph pool under capture), then launches on the current stream of q's device.
Grids and split counts come from host ints only (B, heads, ``max_seqlen_q``, ``max_seqlen_k``,
SM count, ``num_splits``), never from ``seqused_k`` contents, so a captured graph replays correctly at
any KV length up to ``max_seqlen_k``. Descales are passed as device pointers with their strides and
read by the kernels at every launch and replay.
"""

from __future__ import annotations

import contextlib

import torch

from atrex.errors import AtrexCaptureError
from atrex_ppu.flash_attn.zwm890p import build
from atrex_ppu.flash_attn.zwm890p.check import decode_splits, prefill_splits, uses_h8k1
from atrex_ppu.flash_attn.zwm890p.scratch import TILE_TOKENS, kv_tiles, prefill_scratch_layout

DECODE_LIBS = ("decode",)
H8K1_LIBS = ("prep_kv", "prefill_h8k1")
GENERAL_LIBS = ("prep_kv", "prefill_general")


def _libs_for(call) -> tuple[str, ...]:
    return H8K1_LIBS if uses_h8k1(call) else GENERAL_LIBS


def _require(call, libs: tuple[str, ...], path: str) -> dict[str, build.Library]:
    emulated = call.target.emulated
    if call.capturing:
        missing = [lib for lib in libs if not build.is_loaded(lib, emulated)]
        if missing:
            raise AtrexCaptureError(
                f"ppu.{path}: native kernels {', '.join(build.LIBRARIES[m] for m in missing)} are not compiled in "
                f"this process and a CUDA graph is being captured on {call.target.describe()}; call "
                "atrex.prewarm('flash_attn_varlen', [...]) with the serving shapes before capture")
    return build.ensure(libs, emulated, _device_index(call))


def _device_index(call) -> int:
    idx = call.device.index
    return torch.cuda.current_device() if idx is None else idx


def _guard(call):
    idx = call.device.index
    if idx is None or idx == torch.cuda.current_device():
        return contextlib.nullcontext()
    return torch.cuda.device(idx)


def _desc(t):
    if t is None:
        return (None, 0, 0)
    return (t.data_ptr(), t.stride(0), t.stride(1))


def _sm_count(call) -> int:
    return call.target.sm_count or 1


def _stream(call) -> int:
    return torch.cuda.current_stream(call.device).cuda_stream


# ---- decode -----------------------------------------------------------------------------------------

def prewarm_decode(call) -> None:
    with _guard(call):
        build.ensure(DECODE_LIBS, call.target.emulated, _device_index(call))


def run_decode(call, out: torch.Tensor) -> None:
    libs = _require(call, DECODE_LIBS, "decode")
    lib = libs["decode"]
    b, hq, hk = call.batch, call.num_heads_q, call.num_heads_k
    group = hq // hk
    rpt = -(-call.max_seqlen_q * group // 16)
    tiles = kv_tiles(call.max_seqlen_k)
    splits = decode_splits(b, hk, call.max_seqlen_k, _sm_count(call), call.num_splits)
    per_split = -(-tiles // splits)
    splits = -(-tiles // per_split)
    with _guard(call):
        part_o = part_ml = None
        if splits > 1:
            part_o = torch.empty((splits, call.total_q, hq, 256), dtype=torch.float32, device=call.device)
            part_ml = torch.empty((splits, call.total_q, hq, 2), dtype=torch.float32, device=call.device)
        k, v, bt = call.k, call.v, call.block_table
        stream = _stream(call)
        lib.call("atrex_ppu_launch_decode", rpt, call.q.data_ptr(), call.q.stride(0), k.data_ptr(), v.data_ptr(),
                 k.stride(0), k.stride(1), k.stride(2), v.stride(0), v.stride(1), v.stride(2), bt.data_ptr(),
                 bt.stride(0), call.page_size, *_desc(call.q_descale), *_desc(call.k_descale),
                 *_desc(call.v_descale), call.cu_seqlens_q.data_ptr(), call.seqused_k.data_ptr(), out.data_ptr(),
                 out.stride(0), out.stride(1), None if part_o is None else part_o.data_ptr(),
                 None if part_ml is None else part_ml.data_ptr(), splits, per_split, b, hk, group, tiles,
                 call.total_q, call.softmax_scale, stream)
        if splits > 1:
            lib.call("atrex_ppu_launch_decode_combine", part_o.data_ptr(), part_ml.data_ptr(),
                     call.cu_seqlens_q.data_ptr(), out.data_ptr(), out.stride(0), out.stride(1), splits, call.total_q,
                     hq, b, call.max_seqlen_q, stream)
    return None


# ---- prefill ----------------------------------------------------------------------------------------

def prewarm_prefill(call) -> None:
    with _guard(call):
        build.ensure(_libs_for(call), call.target.emulated, _device_index(call))


def run_prefill(call, out: torch.Tensor) -> None:
    h8k1 = uses_h8k1(call)
    libs = _require(call, H8K1_LIBS if h8k1 else GENERAL_LIBS, "prefill")
    if call.max_seqlen_q == 0:  # every sequence is empty: no row belongs to a sequence
        return None
    b, hq, hk = call.batch, call.num_heads_q, call.num_heads_k
    group = hq // hk
    q_tiles = -(-call.max_seqlen_q * group // 64)
    tiles = kv_tiles(call.max_seqlen_k)
    splits = prefill_splits(b, hk, q_tiles, call.max_seqlen_k, _sm_count(call), call.num_splits)
    per_split = -(-tiles // splits)
    splits = -(-tiles // per_split)
    layout = prefill_scratch_layout(b, hk, call.max_seqlen_k, splits, total_q=call.total_q, num_heads_q=hq)
    with _guard(call):
        scratch = torch.empty(layout["total"][1], dtype=torch.uint8, device=call.device)
        base = scratch.data_ptr()
        kpack, vpack = base + layout["k"][0], base + layout["v"][0]
        scales = None if h8k1 else base + layout["scales"][0]
        part_o = base + layout["part_o"][0] if splits > 1 else None
        part_ml = base + layout["part_ml"][0] if splits > 1 else None
        k, v, bt = call.k, call.v, call.block_table
        stream = _stream(call)
        libs["prep_kv"].call(
            "atrex_ppu_launch_prep_raw", k.data_ptr(), v.data_ptr(), k.stride(0), k.stride(1), k.stride(2),
            v.stride(0), v.stride(1), v.stride(2), bt.data_ptr(), bt.stride(0), call.page_size,
            call.seqused_k.data_ptr(), kpack, vpack, tiles, b, hk, *_desc(call.q_descale), *_desc(call.k_descale),
            *_desc(call.v_descale), scales, stream)
        if h8k1:
            libs["prefill_h8k1"].call(
                "atrex_ppu_launch_attn", call.q.data_ptr(), call.q.stride(0), kpack, vpack,
                call.cu_seqlens_q.data_ptr(), call.seqused_k.data_ptr(), out.data_ptr(), out.stride(0), out.stride(1),
                part_o, part_ml, splits, per_split, tiles, call.total_q, b, call.max_seqlen_q, stream)
        else:
            libs["prefill_general"].call(
                "atrex_ppu_launch_attn_general", call.q.data_ptr(), call.q.stride(0), kpack, vpack, scales,
                call.cu_seqlens_q.data_ptr(), call.seqused_k.data_ptr(), out.data_ptr(), out.stride(0), out.stride(1),
                part_o, part_ml, splits, per_split, b, hk, group, tiles, call.total_q, call.max_seqlen_q,
                call.softmax_scale, stream)
        if splits > 1:
            libs["prep_kv"].call("atrex_ppu_launch_combine", part_o, part_ml, call.cu_seqlens_q.data_ptr(),
                                 out.data_ptr(), out.stride(0), out.stride(1), splits, call.total_q, hq, b,
                                 call.max_seqlen_q, stream)
    return None


__all__ = ["TILE_TOKENS", "prewarm_decode", "prewarm_prefill", "run_decode", "run_prefill"]
