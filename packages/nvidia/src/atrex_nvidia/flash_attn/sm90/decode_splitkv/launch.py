"""Launcher of ``nvidia.decode_splitkv``: tile/split choice, workspace, the two kernels, and the record
of compiled Triton specialisations that makes CUDA-graph capture safe.

Every choice reads host values that are fixed under capture (batch, heads, ``max_seqlen_q``,
``max_seqlen_k``, head dim, page size, dtype, the SM count), never ``seqused_k`` or ``cu_seqlens_q``
contents: the device decides per sequence which key tiles each split reads, and a split that gets
none writes LSE -inf and a zero partial (the workspace is never read before it is written).
Validation belongs to ``impl.check``; this module trusts its caller.

Per call class (:func:`plan_key`) the record keeps a launch plan (:class:`LaunchPlan`: grid, constexprs, the
static arguments and the compiled kernels, see ``atrex_nvidia/launch_plan.py``); a later call of the class
launches the compiled kernels directly, with its own pointers and lengths.
"""

import math
from typing import NamedTuple

import torch
import triton

from atrex_nvidia.launch_plan import Arg, Direct, capture, generate, go_stream, launch, workspace
from atrex_nvidia.triton_warm import WarmRecord

from ..paged_key import class_key, nonempty, pointer_args, require_compiled
from . import kernels as _k

LOG2E = 1.4426950408889634

#: a split gets at least this many keys (fewer make the combine and the per-CTA prologue dominate)
MIN_KEYS_PER_SPLIT = 256
#: aim for this many CTAs per SM over (sequence, KV head, M block, split). H200, 2026-12-02 (decode matrix,
#: bf16 32q/8kv d128): with 2, B=32 Lk=4096 ran 1 split (256 CTAs, 2 per SM) at 3.1-3.6 TB/s, 0.91-0.95x
#: FA4, while 512 CTAs (B=64) reached 4.3-4.5 TB/s; 4 per SM gives both 512 CTAs.
CTAS_PER_SM = 4
MAX_SPLITS = 64
#: SM count used where the target reports none (CPU interpreter runs)
DEFAULT_SM_COUNT = 132


def tile_config(head_dim: int, block_m: int) -> tuple[int, int, int]:
    """(BLOCK_N, num_warps, num_stages). Decode is bandwidth-bound: 64-key tiles (K + V: 32 KiB per stage
    at D = 128 bf16) with 3 stages keep two CTAs resident per SM; pages that are multiples of 64 read each
    tile from one block. Alternatives are timed by passing ``cfg`` to :func:`decode`."""
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


# ---- record of compiled specialisations and launch plans ------------------------------------------

WARM = WarmRecord()
F32 = torch.float32


def warmed_keys() -> tuple:
    return WARM.keys()


def clear_compiled() -> None:
    WARM.clear()


class LaunchPlan(NamedTuple):
    """What every call of one class launches: the host plan, the kernels' constexprs and grid, the arguments
    fixed by the class (strides, clamp bounds, window) and the compiled kernels (None: Triton's JIT path)."""

    p: dict
    meta: dict
    cmeta: dict
    grid: tuple
    strides: tuple  # q, k, v, block table, descale and out strides, in the kernel's order
    bounds: tuple  # (largest block id, key cap)
    window: tuple  # (window_left, window_right)
    stand_in: bool  # the cache or the table is empty: q / seqused_k stand in for their pointers
    main: Direct | None = None
    combine: Direct | None = None
    go: object = None  # the direct launches, generated (:func:`_generate`)


def plan_key(call, out, cfg=None, splits=None) -> tuple:
    """The call's class (``paged_key.class_key``): calls of one class share the launch plan; only pointers, the
    length ``total_q`` within its class and the float scales differ between them. Of ``max_seqlen_k`` only the
    cap it puts on the split count (:func:`split_count`) matters, so a decode step that grows it keeps its plan."""
    return class_key(call, out, (cfg, splits),
                     min(max(1, call.max_seqlen_k // MIN_KEYS_PER_SPLIT), MAX_SPLITS))


def _require_compiled(call, specs) -> tuple[list, list]:
    return require_compiled(WARM, "nvidia.decode_splitkv", call, specs)


def _bounds(call, k, bt) -> tuple[int, int]:
    """(largest block id, key cap): the kernel clamps block ids into ``[0, num_blocks)`` and ``seqused_k`` into
    ``[0, table width * page]`` (0 when the cache has no block), so no metadata value moves a load out of bounds."""
    num_blocks = k.shape[0] if k.numel() else 0
    width = bt.shape[1] if bt.dim() == 2 and bt.numel() else 0
    return max(num_blocks - 1, 0), (width * call.page_size if num_blocks else 0)


def _scales(call) -> tuple[float, float]:
    """(qk_scale, softcap_log2): log2(e) goes into the softcap factor when there is one, else the scale."""
    if call.softcap > 0:
        return call.softmax_scale / call.softcap, call.softcap * LOG2E
    return call.softmax_scale * LOG2E, 0.0


def new_plan(call, out, cfg=None, splits=None) -> LaunchPlan:
    """The launch plan of ``call``'s class (no compiled kernel yet). ``cfg`` / ``splits`` override the plan."""
    p = plan(call, cfg, splits)
    hq, hk, d = call.num_heads_q, call.num_heads_k, call.head_dim
    q, k, v, bt = call.q, call.k, call.v, call.block_table
    stand_in = not (k.numel() and v.numel() and bt.numel())
    k, v, bt = nonempty(k, q), nonempty(v, q), nonempty(bt, call.seqused_k)
    qd, kd, vd = call.q_descale, call.k_descale, call.v_descale

    def st(t, i):
        return 0 if t is None else t.stride(i)

    strides = (q.stride(0), q.stride(1), k.stride(0), k.stride(1), k.stride(2), v.stride(0), v.stride(1),
               v.stride(2), bt.stride(0) if bt.dim() == 2 else 0, st(qd, 0), st(qd, 1), st(kd, 0), st(kd, 1),
               st(vd, 0), st(vd, 1), out.stride(0), out.stride(1))
    splits = p["splits"]
    split = splits > 1
    block_d = max(16, triton.next_power_of_2(d))
    meta = dict(
        HK=hk, G=hq // hk, M_BLOCKS=p["m_blocks"], NUM_SPLITS=splits, D=d, BLOCK_D=block_d, BLOCK_M=p["block_m"],
        BLOCK_N=p["block_n"], PAGE=call.page_size, SOFTCAP=call.softcap > 0, WIN_LEFT=call.window_left >= 0,
        WIN_RIGHT=call.window_right >= 0, IS_FP8=call.is_fp8, HAS_QD=qd is not None, HAS_KD=kd is not None,
        HAS_VD=vd is not None, HAS_SINK=call.s_aux is not None, HAS_LSE=call.return_lse, SPLIT=split,
        num_warps=p["num_warps"], num_stages=p["num_stages"],
    )
    cmeta = dict(HQ=hq, NUM_SPLITS=splits, BLOCK_S=triton.next_power_of_2(splits), D=d, BLOCK_D=block_d,
                 HAS_SINK=call.s_aux is not None, HAS_LSE=call.return_lse, num_warps=4)
    return LaunchPlan(p, meta, cmeta, (call.batch * hk * p["m_blocks"], splits), strides,
                      _bounds(call, call.k, call.block_table), (call.window_left, call.window_right), stand_in)


def _main_tensors(lp, call, out, lse, ows, lws) -> tuple:
    """The main kernel's pointer arguments (tensors or None), in its parameter order."""
    q, k, v, bt = call.q, call.k, call.v, call.block_table
    if lp.stand_in:
        k, v, bt = nonempty(k, q), nonempty(v, q), nonempty(bt, call.seqused_k)
    return (q, k, v, bt, call.seqused_k, call.cu_seqlens_q, call.q_descale, call.k_descale, call.v_descale,
            call.s_aux, out, lse, ows, lws)


def _main_rest(lp, call) -> tuple:
    """The main kernel's other arguments: strides, lengths, clamp bounds, scales, window."""
    tq = call.total_q
    qk_scale, softcap_log2 = _scales(call)
    return (*lp.strides, tq, tq * call.num_heads_q, tq, *lp.bounds, qk_scale, softcap_log2, *lp.window)


def _combine_rest(call, out) -> tuple:
    tq = call.total_q
    return tq * call.num_heads_q, out.stride(0), out.stride(1), tq, call.batch


def _generate(lp, call, out):
    """``go(call, out, lse, ows, lws, stream)``: the plan's direct launches as one generated function, the split
    workspace as two pointers (``launch_plan.generate``)."""
    hq, split = call.num_heads_q, lp.grid[1] > 1
    out_p, lse_p = Arg("out.data_ptr()"), Arg("lse.data_ptr()") if call.return_lse else None
    ws = (Arg("ows"), Arg("lws")) if split else (None, None)
    main = (*pointer_args(call), out_p, lse_p, *ws, *lp.strides, Arg("tq"), Arg(f"tq * {hq}"), Arg("tq"), *lp.bounds,
            Arg("qk"), Arg("sc"), *lp.window, *lp.main.tail)
    launches = [(lp.main.fn, lp.main.head, lp.main.pack, lp.grid, main)]
    if split:
        d = lp.combine
        comb = (*ws, main[9], main[5], out_p, lse_p, Arg(f"tq * {hq}"), out.stride(0), out.stride(1), Arg("tq"),
                call.batch, *d.tail)
        launches.append((d.fn, d.head, d.pack, (Arg("tq"), hq), comb))
    return generate("call, out, lse, ows, lws", ("tq = call.total_q", "qk, sc = scales(call)"), launches,
                    {"scales": _scales})


def _workspace_ptrs(call, splits: int, stream: int) -> tuple[int, int]:
    """(partial outputs, partial LSEs) pointers in one buffer: the stream's kept workspace in eager calls."""
    n = splits * call.total_q * call.num_heads_q
    at = -(-n * call.head_dim * 4 // 512) * 512
    nbytes = at + n * 4
    if call.capturing:
        ws = torch.empty(nbytes, dtype=torch.int8, device=call.device)
    else:
        ws = workspace(call.device, stream, nbytes)
    base = ws.data_ptr()
    return base, base + at


def go(lp, call, out, stream: int):
    """Allocate the LSE, take the split workspace and launch through the plan's generated launch on ``stream``
    (direct launches apply now: ``launch_plan.go_stream``); returns the LSE or None."""
    lse = torch.empty((call.num_heads_q, call.total_q), dtype=F32, device=call.device) if call.return_lse else None
    splits = lp.grid[1]
    ows, lws = _workspace_ptrs(call, splits, stream) if splits > 1 else (None, None)
    lp.go(call, out, lse, ows, lws, stream)
    return lse


def plan_device(lp) -> int | None:
    """The CUDA device the plan's kernels were loaded on."""
    return lp.main.device


def _launch(lp, call, out, compiled=None):
    """Allocate the LSE and the split workspace, launch the plan's kernels (its generated launch when it has one and
    direct launches apply now, else Triton's JIT path); ``compiled`` (a list) receives what the JIT path returned
    for each launch."""
    stream = None if lp.go is None else go_stream(lp.main.device)
    if stream is not None:
        return go(lp, call, out, stream)
    tq, hq, dev = call.total_q, call.num_heads_q, call.device
    lse = torch.empty((hq, tq), dtype=F32, device=dev) if call.return_lse else None
    splits = lp.grid[1]
    ows = lws = None
    if splits > 1:
        ows = torch.empty((splits, tq, hq, call.head_dim), dtype=F32, device=dev)
        lws = torch.empty((splits, tq, hq), dtype=F32, device=dev)
    res = launch(_k.atrex_sm90_decode_splitkv, lp.grid, _main_tensors(lp, call, out, lse, ows, lws),
                 _main_rest(lp, call), lp.meta)
    if compiled is not None:
        compiled.append(res)
    if splits > 1:
        res = launch(_k.atrex_sm90_decode_combine, (tq, hq), (ows, lws, call.s_aux, call.cu_seqlens_q, out, lse),
                     _combine_rest(call, out), lp.cmeta)
        if compiled is not None:
            compiled.append(res)
    return lse


def decode(call, out: torch.Tensor, cfg: tuple[int, int, int] | None = None, splits: int | None = None):
    """Run ``call`` into ``out`` on the current stream; returns the LSE ``[Hq, Tq]`` fp32 or None.

    Rows at or past ``cu_seqlens_q[B]`` belong to no sequence: ``out`` and the LSE there are not written.
    ``cfg`` / ``splits`` override the plan (see :func:`plan`). A call whose class launched before runs its kept
    launch plan; the first call of a class checks capture safety, launches through Triton and keeps the plan.
    """
    key = plan_key(call, out, cfg, splits)
    lp = WARM.plan(key)
    if lp is not None:
        return _launch(lp, call, out)
    lp = new_plan(call, out, cfg, splits)
    # capture check before any allocation: the LSE and the workspace stand as their dtype (launcher-owned buffers)
    split = lp.grid[1] > 1
    lse, ows = (F32 if call.return_lse else None), (F32 if split else None)
    main = (*_main_tensors(lp, call, out, lse, ows, ows), *_main_rest(lp, call))
    specs = [(_k.atrex_sm90_decode_splitkv, main, lp.meta)]
    if split:
        comb = (ows, ows, call.s_aux, call.cu_seqlens_q, out, lse, *_combine_rest(call, out))
        specs.append((_k.atrex_sm90_decode_combine, comb, lp.cmeta))
    keys, missing = _require_compiled(call, specs)
    directs = [WARM.direct(k) for k in keys]
    if all(d is not None for d in directs):  # every kernel of the class launched before: no JIT dispatch
        lp = _bound(lp, call, out, directs)
        WARM.keep_plan(key, lp)
        return _launch(lp, call, out)
    compiled = []
    lse = _launch(lp, call, out, compiled)
    WARM.add(missing)
    directs = [capture(kern, c, len(args), meta, call.device) for (kern, args, meta), c in zip(specs, compiled)]
    for k, d in zip(keys, directs):
        WARM.keep_direct(k, d)
    WARM.keep_plan(key, _bound(lp, call, out, directs))
    return lse


def _bound(lp, call, out, directs) -> LaunchPlan:
    """``lp`` with its compiled kernels (None where there is none) and, when all are there, its generated launch."""
    lp = lp._replace(main=directs[0], combine=directs[1] if len(directs) > 1 else None)
    return lp._replace(go=_generate(lp, call, out)) if all(d is not None for d in directs) else lp
