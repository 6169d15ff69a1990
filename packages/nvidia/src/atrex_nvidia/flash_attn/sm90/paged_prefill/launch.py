"""Launcher of ``nvidia.paged_prefill_sm90``: tile choice, the grid, and the record of compiled Triton
specialisations that makes CUDA-graph capture safe.

Every choice reads host values that are fixed under capture (``total_q``, batch, heads, ``max_seqlen_q``,
head dim, page size, dtype, flags), never ``seqused_k`` / ``cu_seqlens_q`` / block table contents: the
grid is an upper bound on the (sequence, query tile) work items and the device decides which items are
real. Nothing is allocated but the LSE (shape ``[Hq, Tq]``, fixed by the call). Validation belongs to
``impl.check``; this module trusts its caller.

Per call class (``paged_key.class_key``) the record keeps a launch plan (:class:`LaunchPlan`: constexprs, the
static arguments and the compiled kernel, see ``atrex_nvidia/launch_plan.py``); a later call of the class
launches the compiled kernel directly, with its own pointers and lengths.
"""

from typing import NamedTuple

import torch
import triton

from atrex_nvidia.launch_plan import Arg, Direct, capture, generate, go_stream, launch
from atrex_nvidia.triton_warm import WarmRecord

from ..paged_key import class_key, nonempty, pointer_args, require_compiled
from . import kernels as _k

LOG2E = 1.4426950408889634
INT32_MAX = (1 << 31) - 1

def block_d_for(head_dim: int) -> int:
    """The padded head dim of the tiles: the next power of two, at least 16 (``tl.dot``'s minimum)."""
    return max(16, triton.next_power_of_2(head_dim))


def tile_config(head_dim: int, page_size: int) -> tuple[int, int, int, int]:
    """(BLOCK_M cap, BLOCK_N, num_warps, num_stages) for the padded head dim. 128 query rows and 64-key
    tiles (K + V: 32 KiB per stage at D = 128 bf16) keep the fp32 accumulator in registers with 8 warps;
    D = 256 halves the rows. A page that is a multiple of 64 gives each key tile one block id; page 16 /
    32 gather four / two pages per tile through per-row block ids."""
    bd = block_d_for(head_dim)
    if bd <= 64:
        return 128, 64, 4, 3
    if bd <= 128:
        return 128, 64, 8, 3
    return 64, 64, 8, 2


def plan(call, cfg: tuple[int, int, int, int] | None = None) -> dict:
    """The static launch plan of ``call`` (host values only); ``cfg`` ((BLOCK_M cap, BLOCK_N, num_warps,
    num_stages)) replaces :func:`tile_config`'s choice (tuning sweeps, tests).

    Rows of the M tile are (query token, query head) pairs: ``GS`` heads of one GQA group (the whole
    group when it fits the tile, else ``G_CHUNKS`` chunks of it) times ``BLOCK_Q`` query tokens, so calls
    with few query tokens per sequence still fill the tile."""
    g = call.num_heads_q // call.num_heads_k
    cap, block_n, num_warps, num_stages = cfg or tile_config(call.head_dim, call.page_size)
    gs = min(g, cap)
    block_m = min(cap, max(16, triton.next_power_of_2(max(1, call.max_seqlen_q) * gs)))
    block_q = block_m // gs
    if cfg is None and block_m * block_d_for(call.head_dim) < 128 * 128:
        num_warps = 4  # a short tile (few query rows): 8 warps would split its N dimension only
    return dict(gs=gs, g_chunks=-(-g // gs), block_m=block_m, block_q=block_q, block_n=block_n,
                num_warps=num_warps, num_stages=num_stages, items=call.total_q // block_q + call.batch)


# ---- record of compiled specialisations -----------------------------------------------------------

WARM = WarmRecord()


def warmed_keys() -> tuple:
    return WARM.keys()


def clear_compiled() -> None:
    WARM.clear()


def _require_compiled(call, specs) -> tuple[list, list]:
    return require_compiled(WARM, "nvidia.paged_prefill_sm90", call, specs)


def _scales(call) -> tuple[float, float]:
    """(qk_scale, softcap_log2): log2(e) goes into the softcap factor when there is one, else the scale."""
    if call.softcap > 0:
        return call.softmax_scale / call.softcap, call.softcap * LOG2E
    return call.softmax_scale * LOG2E, 0.0


class LaunchPlan(NamedTuple):
    """What every call of one class launches: the constexprs, how the grid follows ``total_q``, the arguments
    fixed by the class and the compiled kernel (None: Triton's JIT path)."""

    meta: dict
    block_q: int  # query tokens per work item: the grid's first dim is total_q // block_q + batch
    cols: int  # the grid's second dim: KV heads x GQA chunks
    head: tuple  # q / k / v / table strides, key cap, block count, descale and out strides
    window: tuple  # (window_left, window_right)
    stand_in: bool  # the cache or the table is empty: q / seqused_k stand in for their pointers
    direct: Direct | None = None
    go: object = None  # the direct launch, generated (:func:`_generate`)


def plan_key(call, out, cfg=None) -> tuple:
    """The call's class (``paged_key.class_key``)."""
    return class_key(call, out, cfg)


def new_plan(call, out, cfg=None) -> LaunchPlan:
    """The launch plan of ``call``'s class (no compiled kernel yet); ``cfg`` overrides the tile choice."""
    p = plan(call, cfg)
    q, bt = call.q, call.block_table
    stand_in = not (call.k.numel() and call.v.numel() and bt.numel())
    k, v = nonempty(call.k, q), nonempty(call.v, q)
    # no key is visible without a block (the stand-ins have no pages to read)
    kv_cap = min(bt.shape[1] * call.page_size, INT32_MAX) if bt.dim() == 2 and call.k.numel() else 0
    bt = nonempty(bt, call.seqused_k)
    qd, kd, vd = call.q_descale, call.k_descale, call.v_descale

    def st(t, i):
        return 0 if t is None else t.stride(i)

    head = (q.stride(0), q.stride(1), k.stride(0), k.stride(1), k.stride(2), v.stride(0), v.stride(1), v.stride(2),
            bt.stride(0) if bt.dim() == 2 else 0, kv_cap, max(1, call.k.shape[0]), st(qd, 0), st(qd, 1), st(kd, 0),
            st(kd, 1), st(vd, 0), st(vd, 1), out.stride(0), out.stride(1))
    return LaunchPlan(_meta(call, p), p["block_q"], call.num_heads_k * p["g_chunks"], head,
                      (call.window_left, call.window_right), stand_in)


def _tensors(lp, call, out, lse) -> tuple:
    """The kernel's pointer arguments (tensors or None), in its parameter order."""
    q, k, v, bt = call.q, call.k, call.v, call.block_table
    if lp.stand_in:
        k, v, bt = nonempty(k, q), nonempty(v, q), nonempty(bt, call.seqused_k)
    return (q, k, v, bt, call.seqused_k, call.cu_seqlens_q, call.q_descale, call.k_descale, call.v_descale,
            call.s_aux, out, lse)


def _rest(lp, call) -> tuple:
    """The kernel's other arguments: the class's strides and bounds, the lengths, scales and window."""
    tq = call.total_q
    return (*lp.head, tq, tq, call.batch, *_scales(call), *lp.window)


def _meta(call, p) -> dict:
    qd, kd, vd = call.q_descale, call.k_descale, call.v_descale
    return dict(
        G=call.num_heads_q // call.num_heads_k, GS=p["gs"], G_CHUNKS=p["g_chunks"], BLOCK_Q=p["block_q"],
        D=call.head_dim, BLOCK_D=block_d_for(call.head_dim), BLOCK_M=p["block_m"], BLOCK_N=p["block_n"],
        PAGE=call.page_size, SOFTCAP=call.softcap > 0, WIN_LEFT=call.window_left >= 0,
        WIN_RIGHT=call.window_right >= 0, IS_FP8=call.is_fp8, HAS_QD=qd is not None, HAS_KD=kd is not None,
        HAS_VD=vd is not None, HAS_SINK=call.s_aux is not None, HAS_LSE=call.return_lse,
        num_warps=p["num_warps"], num_stages=p["num_stages"],
    )


def _generate(lp, call):
    """``go(call, out, lse, stream)``: the plan's direct launch as a generated function (``launch_plan.generate``)."""
    d = lp.direct
    args = (*pointer_args(call), Arg("out.data_ptr()"), Arg("lse.data_ptr()") if call.return_lse else None, *lp.head,
            Arg("tq"), Arg("tq"), call.batch, Arg("qk"), Arg("sc"), *lp.window, *d.tail)
    grid = (Arg(f"tq // {lp.block_q} + {call.batch}"), lp.cols)
    return generate("call, out, lse", ("tq = call.total_q", "qk, sc = scales(call)"), [(d.fn, d.head, d.pack, grid, args)],
                    {"scales": _scales})


def _with_direct(lp, call, direct) -> LaunchPlan:
    """``lp`` with its compiled kernel (None: Triton's JIT path) and, given one, its generated launch."""
    return lp._replace(direct=direct, go=None if direct is None else _generate(lp._replace(direct=direct), call))


def go(lp, call, out, stream: int):
    """Allocate the LSE and launch through the plan's generated launch on ``stream`` (direct launches apply now:
    ``launch_plan.go_stream``); returns the LSE or None."""
    lse = None
    if call.return_lse:
        lse = torch.empty((call.num_heads_q, call.total_q), dtype=torch.float32, device=call.device)
    if call.total_q:
        lp.go(call, out, lse, stream)
    return lse


def plan_device(lp) -> int | None:
    """The CUDA device the plan's kernel was loaded on."""
    return lp.direct.device


def _launch(lp, call, out):
    """Allocate the LSE and launch the plan's kernel (its generated launch when it has one and direct launches
    apply now, else Triton's JIT path); returns (LSE, what Triton's JIT path returned or None)."""
    stream = None if lp.go is None else go_stream(lp.direct.device)
    if stream is not None:
        return go(lp, call, out, stream), None
    lse = None
    if call.return_lse:
        lse = torch.empty((call.num_heads_q, call.total_q), dtype=torch.float32, device=call.device)
    if call.total_q == 0:
        return lse, None
    grid = (call.total_q // lp.block_q + call.batch, lp.cols)
    return lse, launch(_k.atrex_sm90_paged_prefill, grid, _tensors(lp, call, out, lse), _rest(lp, call), lp.meta)


def prefill(call, out: torch.Tensor, cfg: tuple[int, int, int, int] | None = None):
    """Run ``call`` into ``out`` on the current stream; returns the LSE ``[Hq, Tq]`` fp32 or None.

    Rows at or past ``cu_seqlens_q[B]`` belong to no sequence: ``out`` and the LSE there are not written.
    ``cfg`` overrides the tile choice (see :func:`plan`). A call whose class launched before runs its kept
    launch plan; the first call of a class checks capture safety, launches through Triton and keeps the plan.
    """
    key = plan_key(call, out, cfg)
    lp = WARM.plan(key)
    if lp is not None:
        return _launch(lp, call, out)[0]
    lp = new_plan(call, out, cfg)
    lse = torch.float32 if call.return_lse else None  # stands as its dtype until allocated
    args = (*_tensors(lp, call, out, lse), *_rest(lp, call))
    (lkey,), missing = _require_compiled(call, [(_k.atrex_sm90_paged_prefill, args, lp.meta)])
    direct = WARM.direct(lkey)
    if direct is not None:  # the kernel launched before for another class: no JIT dispatch
        lp = _with_direct(lp, call, direct)
        WARM.keep_plan(key, lp)
        return _launch(lp, call, out)[0]
    lse, compiled = _launch(lp, call, out)
    if call.total_q == 0:
        return lse
    WARM.add(missing)
    direct = capture(_k.atrex_sm90_paged_prefill, compiled, len(args), lp.meta, call.device)
    WARM.keep_direct(lkey, direct)
    WARM.keep_plan(key, _with_direct(lp, call, direct))
    return lse
