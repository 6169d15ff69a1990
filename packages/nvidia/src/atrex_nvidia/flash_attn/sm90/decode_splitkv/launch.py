"""Launcher of ``nvidia.decode_splitkv``: tile/split choice, workspace, the two kernels, and the record
of compiled Triton specialisations that makes CUDA-graph capture safe.

Every choice reads host values that are fixed under capture (batch, heads, ``max_seqlen_q``,
``max_seqlen_k``, head dim, page size, dtype, the SM count), never ``seqused_k`` or ``cu_seqlens_q``
contents: the device decides per sequence which key tiles each split reads, and a split that gets
none writes LSE -inf and a zero partial (the workspace is never read before it is written).
Validation belongs to ``impl.check``; this module trusts its caller.
"""

import math

import torch
import triton

from atrex.errors import AtrexCaptureError
from atrex_nvidia.triton_warm import WarmRecord, launch_key

from . import kernels as _k

LOG2E = 1.4426950408889634

#: a split gets at least this many keys (fewer make the combine and the per-CTA prologue dominate)
MIN_KEYS_PER_SPLIT = 256
#: aim for this many CTAs per SM over (sequence, KV head, M block, split). H200, 2026-12-02 (bench_decode,
#: bf16 32q/8kv d128): with 2, B=32 Lk=4096 ran 1 split (256 CTAs, 2 per SM) at 3.1-3.6 TB/s, 0.91-0.95x
#: FA4, while 512 CTAs (B=64) reached 4.3-4.5 TB/s; 4 per SM gives both 512 CTAs.
CTAS_PER_SM = 4
MAX_SPLITS = 64
#: SM count used where the target reports none (CPU interpreter runs)
DEFAULT_SM_COUNT = 132


def tile_config(head_dim: int, block_m: int) -> tuple[int, int, int]:
    """(BLOCK_N, num_warps, num_stages). Decode is bandwidth-bound: 64-key tiles (K + V: 32 KiB per stage
    at D = 128 bf16) with 3 stages keep two CTAs resident per SM; pages that are multiples of 64 read each
    tile from one block. ``bench_decode.py --sweep`` times alternatives."""
    num_warps = 8 if block_m * triton.next_power_of_2(head_dim) >= 128 * 128 else 4
    return 64, num_warps, (3 if head_dim <= 128 else 2)


def block_m_for(max_seqlen_q: int, group: int, head_dim: int) -> int:
    """Rows per program: the packed (query token, GQA head) rows, a power of two >= 16, capped so that
    the fp32 accumulator [BLOCK_M, BLOCK_D] stays in registers."""
    cap = 128 if triton.next_power_of_2(head_dim) <= 128 else 64
    return min(max(16, triton.next_power_of_2(max(1, max_seqlen_q) * group)), cap)


def split_count(batch: int, num_heads_k: int, m_blocks: int, max_seqlen_k: int, sm_count: int,
                num_splits: int, want_splits: int | None = None) -> int:
    """Splits of each sequence's keys: enough CTAs for ``CTAS_PER_SM`` per SM, at least
    ``MIN_KEYS_PER_SPLIT`` keys of ``max_seqlen_k`` each. ``num_splits`` 1 is honoured exactly, n > 1
    caps the choice; ``want_splits`` (tuning sweeps, tests) replaces the rule's choice. Reads host values only
    (graph-static)."""
    if num_splits == 1:
        return 1
    if want_splits is not None:
        splits = want_splits
    else:
        ctas = max(1, batch * num_heads_k * m_blocks)
        want = max(1, (CTAS_PER_SM * (sm_count or DEFAULT_SM_COUNT)) // ctas)
        splits = min(want, max(1, max_seqlen_k // MIN_KEYS_PER_SPLIT), MAX_SPLITS)
    if num_splits > 1:
        splits = min(splits, num_splits)
    return max(1, splits)


def plan(call, cfg: tuple[int, int, int] | None = None, splits: int | None = None) -> dict:
    """The static launch plan of ``call`` (host values only). ``cfg`` ((BLOCK_N, num_warps, num_stages)) and
    ``splits`` replace the default rule's choices (tuning sweeps and tests)."""
    g = call.num_heads_q // call.num_heads_k
    d = call.head_dim
    block_m = block_m_for(call.max_seqlen_q, g, d)
    m_blocks = max(1, math.ceil(max(1, call.max_seqlen_q) * g / block_m))
    block_n, num_warps, num_stages = cfg or tile_config(d, block_m)
    splits = split_count(call.batch, call.num_heads_k, m_blocks, call.max_seqlen_k, call.target.sm_count,
                         call.num_splits, splits)
    return dict(block_m=block_m, m_blocks=m_blocks, block_n=block_n, num_warps=num_warps,
                num_stages=num_stages, splits=splits)


# ---- record of compiled specialisations -----------------------------------------------------------

WARM = WarmRecord()


def warmed_keys() -> tuple:
    return WARM.keys()


def clear_compiled() -> None:
    WARM.clear()


def _require_compiled(call, specs) -> list:
    """The keys among ``specs`` ((kernel, args, meta) triples) not launched yet; under capture any
    such key raises :class:`AtrexCaptureError` (before allocation or launch)."""
    missing = WARM.missing([launch_key(kernel, args, meta) for kernel, args, meta in specs])
    if missing and call.capturing:
        raise AtrexCaptureError(
            f"nvidia.decode_splitkv: the Triton specialisation {missing[0][0]} for this call is not "
            "compiled and CUDA-graph capture is active; prewarm first (atrex.prewarm("
            "'flash_attn_varlen', [call kwargs]) or one eager call with the same static shape) before "
            "capturing")
    return missing


def _nonempty(t, stand_in):
    """A zero-size KV cache or table has no valid pointer; no element is read then (seqused_k == 0)."""
    return t if t.numel() else stand_in


def _bounds(call, k, bt) -> tuple[int, int]:
    """(largest block id, key cap): the kernel clamps block ids into ``[0, num_blocks)`` and ``seqused_k`` into
    ``[0, table width * page]`` (0 when the cache has no block), so no metadata value moves a load out of bounds."""
    num_blocks = k.shape[0] if k.numel() else 0
    width = bt.shape[1] if bt.dim() == 2 and bt.numel() else 0
    return max(num_blocks - 1, 0), (width * call.page_size if num_blocks else 0)


def decode(call, out: torch.Tensor, cfg: tuple[int, int, int] | None = None, splits: int | None = None):
    """Run ``call`` into ``out`` on the current stream; returns the LSE ``[Hq, Tq]`` fp32 or None.

    Rows at or past ``cu_seqlens_q[B]`` belong to no sequence: ``out`` and the LSE there are not written.
    ``cfg`` / ``splits`` override the plan (see :func:`plan`).
    """
    p = plan(call, cfg, splits)
    hq, hk, d, tq = call.num_heads_q, call.num_heads_k, call.head_dim, call.total_q
    g = hq // hk
    dev = call.device
    splits = p["splits"]
    split = splits > 1
    f32 = torch.float32
    q, k, v, bt = call.q, call.k, call.v, call.block_table
    k = _nonempty(k, q)
    v = _nonempty(v, q)
    bt = _nonempty(bt, call.seqused_k)
    qd, kd, vd = call.q_descale, call.k_descale, call.v_descale
    max_blk, key_cap = _bounds(call, call.k, call.block_table)

    def st(t, i):
        return 0 if t is None else t.stride(i)

    if call.softcap > 0:
        qk_scale, softcap_log2 = call.softmax_scale / call.softcap, call.softcap * LOG2E
    else:
        qk_scale, softcap_log2 = call.softmax_scale * LOG2E, 0.0
    block_d = max(16, triton.next_power_of_2(d))
    # lse / ows / lws stand as their dtype (or None) until allocated
    lse, ows, lws = (f32 if call.return_lse else None), (f32 if split else None), (f32 if split else None)

    def main_args():
        return (
            q, k, v, bt, call.seqused_k, call.cu_seqlens_q, qd, kd, vd, call.s_aux, out, lse, ows, lws,
            q.stride(0), q.stride(1),
            k.stride(0), k.stride(1), k.stride(2),
            v.stride(0), v.stride(1), v.stride(2),
            bt.stride(0) if bt.dim() == 2 else 0,
            st(qd, 0), st(qd, 1), st(kd, 0), st(kd, 1), st(vd, 0), st(vd, 1),
            out.stride(0), out.stride(1),
            tq,
            tq * hq, tq, max_blk, key_cap,
            qk_scale, softcap_log2, call.window_left, call.window_right,
        )

    def combine_args():
        return (ows, lws, call.s_aux, call.cu_seqlens_q, out, lse, tq * hq, out.stride(0), out.stride(1), tq,
                call.batch)

    meta = dict(
        HK=hk, G=g, M_BLOCKS=p["m_blocks"], NUM_SPLITS=splits, D=d, BLOCK_D=block_d, BLOCK_M=p["block_m"],
        BLOCK_N=p["block_n"], PAGE=call.page_size, SOFTCAP=call.softcap > 0, WIN_LEFT=call.window_left >= 0,
        WIN_RIGHT=call.window_right >= 0, IS_FP8=call.is_fp8, HAS_QD=qd is not None, HAS_KD=kd is not None,
        HAS_VD=vd is not None, HAS_SINK=call.s_aux is not None, HAS_LSE=call.return_lse, SPLIT=split,
        num_warps=p["num_warps"], num_stages=p["num_stages"],
    )
    cmeta = dict(HQ=hq, NUM_SPLITS=splits, BLOCK_S=triton.next_power_of_2(splits), D=d, BLOCK_D=block_d,
                 HAS_SINK=call.s_aux is not None, HAS_LSE=call.return_lse, num_warps=4)
    specs = [(_k.atrex_sm90_decode_splitkv, main_args(), meta)]
    if split:
        specs.append((_k.atrex_sm90_decode_combine, combine_args(), cmeta))
    missing = _require_compiled(call, specs)

    if call.return_lse:
        lse = torch.empty((hq, tq), dtype=f32, device=dev)
    if split:
        ows = torch.empty((splits, tq, hq, d), dtype=f32, device=dev)
        lws = torch.empty((splits, tq, hq), dtype=f32, device=dev)
    _k.atrex_sm90_decode_splitkv[(call.batch * hk * p["m_blocks"], splits)](*main_args(), **meta)
    if split:
        _k.atrex_sm90_decode_combine[(tq, hq)](*combine_args(), **cmeta)
    WARM.add(missing)
    return lse
