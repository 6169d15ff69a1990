"""Launcher of ``nvidia.gdn_decode_sm90``: tile choice, outputs, and the record of compiled Triton
specialisations that makes CUDA-graph capture safe.

Every choice reads host values fixed under capture (N, HV, K, V, dtypes, layout, the SM count), never the
contents of ``cu_seqlens``, ``ssm_state_indices`` or ``num_accepted_tokens``: the device reads those.
Validation belongs to the core and ``impl.check``; this module trusts its caller.

Per call class (:func:`plan_key`) the record keeps a launch plan (:class:`LaunchPlan`: grid, constexprs, the
static arguments and the compiled kernel, see ``atrex_nvidia/launch_plan.py``); a later call of the class
launches the compiled kernel directly, with its own pointers.
"""

from typing import NamedTuple

import torch
import triton

from atrex.errors import AtrexCaptureError
from atrex_nvidia.launch_plan import (
    MISS,
    Arg,
    Direct,
    capture,
    contiguous_strides,
    generate,
    go_stream,
    kept_runner,
    launch,
)
from atrex_nvidia.triton_warm import WarmRecord, launch_key

from . import kernels as _k

#: aim for at least this many programs per SM before shrinking the value block (small batches)
PROGRAMS_PER_SM = 4
#: SM count used where the target reports none (CPU interpreter runs)
DEFAULT_SM_COUNT = 132
#: fp32 state elements per thread the warp count aims for (the tile lives in registers)
ELEMS_PER_THREAD = 32

WARM = WarmRecord()


def tile_config(num_seqs: int, num_v_heads: int, head_k_dim: int, head_v_dim: int, sm_count: int | None):
    """(BV, num_warps): the largest value block in (32, 16, 8) that still gives ``PROGRAMS_PER_SM`` programs per
    SM, and enough warps for about ``ELEMS_PER_THREAD`` state elements per thread."""
    want = PROGRAMS_PER_SM * (sm_count or DEFAULT_SM_COUNT)
    bv = min(32, head_v_dim)
    while bv > 8 and num_seqs * num_v_heads * (head_v_dim // bv) < want:
        bv //= 2
    num_warps = max(1, min(8, bv * head_k_dim // (32 * ELEMS_PER_THREAD)))
    return bv, num_warps


def clear_compiled() -> None:
    WARM.clear()


class LaunchPlan(NamedTuple):
    """What every call of one class launches: grid, constexprs, the integer arguments (all fixed by the class),
    the output shapes and the compiled kernel (None: Triton's JIT path)."""

    grid: tuple
    meta: dict
    ints: tuple
    o_shape: tuple
    state_shape: tuple | None  # the new fp32 state's shape when the pool is not updated in place
    runs: bool  # something to compute (outputs or a new state)
    o_stride: tuple  # (both contiguous: ``launch_plan.contiguous_strides``)
    state_stride: tuple | None
    direct: Direct | None = None
    go: object = None  # the direct launch, generated (:func:`_generate`)


def _layout(t):
    return None if t is None else (t.dtype, t.shape, t.stride())


def plan_key(call) -> tuple:
    """The call's class: dtypes, shapes and strides of every tensor (all fixed: a decode step's shapes are),
    flags, the device and its SM count, each pointer's 16-byte alignment. A record the core's memo served carries
    its validated class (``call.cls``), which stands for all but the alignment."""
    q, k, v, g, beta, pool = call.q, call.k, call.v, call.g, call.beta, call.pool
    cu, idx, nat = call.cu_seqlens, call.ssm_state_indices, call.num_accepted_tokens
    ts = (q, k, v, g, beta, pool, cu, idx, nat)
    align = aligned(call) or tuple(None if t is None else t.data_ptr() & 15 for t in ts)
    cls = getattr(call, "cls", None)
    if cls is not None:  # the core's validated class fixes everything else (shapes, strides, dtypes, flags)
        return cls, align
    return (call.device, call.target.sm_count, call.dtype, q.shape, q.stride(), k.stride(), v.shape, v.stride(),
            _layout(g), _layout(beta), _layout(pool), _layout(cu), _layout(idx), _layout(nat), call.slots_per_seq,
            call.use_qk_l2norm_in_kernel, call.inplace_final_state, call.state_v_first, align)


def aligned(call) -> bool:
    """Whether every pointer of ``call`` is 16-byte aligned."""
    ptrs = call.q.data_ptr() | call.k.data_ptr() | call.v.data_ptr() | call.g.data_ptr() | call.pool.data_ptr()
    for t in (call.beta, call.cu_seqlens, call.ssm_state_indices, call.num_accepted_tokens):
        if t is not None:
            ptrs |= t.data_ptr()
    return not ptrs & 15


def new_plan(call) -> LaunchPlan:
    """The launch plan of ``call``'s class (no compiled kernel yet)."""
    q, k, v, g, beta, pool = call.q, call.k, call.v, call.g, call.beta, call.pool
    n, hv, dk, dv = call.num_seqs, call.num_v_heads, call.head_k_dim, call.head_v_dim
    bv, num_warps = tile_config(n, hv, dk, dv, call.target.sm_count)
    idx, nat, cu = call.ssm_state_indices, call.num_accepted_tokens, call.cu_seqlens
    idx_mode = 0 if idx is None else (1 if idx.dim() == 1 else 2)

    def st(t, i):
        return 0 if t is None else t.stride(i)

    ints = (q.stride(0), q.stride(1), q.stride(2), k.stride(0), k.stride(1), k.stride(2),
            v.stride(0), v.stride(1), v.stride(2), g.stride(0), g.stride(1), g.stride(2),
            st(beta, 0), st(beta, 1), st(beta, 2), call.seq_len * hv * dv, hv * dv, dv,
            pool.stride(0), (idx.stride(0) if idx_mode == 2 else 0), hv * dk * dv,
            call.pool_size, call.seq_len, call.slots_per_seq)
    meta = dict(HV=hv, GROUP=hv // call.num_heads, DK=dk, DV=dv, BV=bv, V_FIRST=call.state_v_first,
                VARLEN=cu is not None, IDX_MODE=idx_mode, HAS_NAT=nat is not None, HAS_BETA=beta is not None,
                L2NORM=call.use_qk_l2norm_in_kernel, INPLACE=call.inplace_final_state, num_warps=num_warps)
    o_shape = (call.batch, call.seq_len, hv, dv)
    state_shape = None if call.inplace_final_state else (n, *pool.shape[1:])
    runs = call.batch * call.seq_len * hv * dv > 0 or state_shape is not None
    return LaunchPlan((n * hv, triton.cdiv(dv, bv)), meta, ints, o_shape, state_shape, runs,
                      contiguous_strides(o_shape), None if state_shape is None else contiguous_strides(state_shape))


def _tensors(call, o, state_out) -> tuple:
    return (call.q, call.k, call.v, call.g, call.beta, o, call.pool, state_out, call.cu_seqlens,
            call.ssm_state_indices, call.num_accepted_tokens)


def _generate(lp, call):
    """``go(call, o, state_out, stream)``: the plan's direct launch as a generated function (``launch_plan.generate``)."""
    def p(name):
        return None if getattr(call, name) is None else Arg(f"call.{name}.data_ptr()")

    d = lp.direct
    args = (p("q"), p("k"), p("v"), p("g"), p("beta"), Arg("o.data_ptr()"), p("pool"),
            None if lp.state_shape is None else Arg("state_out.data_ptr()"), p("cu_seqlens"), p("ssm_state_indices"),
            p("num_accepted_tokens"), *lp.ints, Arg("call.scale"), *d.tail)
    return generate("call, o, state_out", (), [(d.fn, d.head, d.pack, lp.grid, args)])


def _with_direct(lp, call, direct) -> LaunchPlan:
    """``lp`` with its compiled kernel (None: Triton's JIT path) and, given one, its generated launch."""
    return lp._replace(direct=direct, go=None if direct is None else _generate(lp._replace(direct=direct), call))


def _outputs(lp, call) -> tuple:
    """``(o, the new fp32 state or None)`` of one call (None: the pool is updated in place)."""
    o = torch.empty_strided(lp.o_shape, lp.o_stride, dtype=call.dtype, device=call.device)
    if lp.state_shape is None:
        return o, None
    return o, torch.empty_strided(lp.state_shape, lp.state_stride, dtype=torch.float32, device=call.device)


def go(lp, call, stream: int):
    """Allocate the outputs and launch through the plan's generated launch on ``stream`` (direct launches apply
    now: ``launch_plan.go_stream``); returns ``(o, pool or the new fp32 state)``."""
    o, state_out = _outputs(lp, call)
    if lp.runs:  # (nothing to compute: an empty grid is not launched)
        lp.go(call, o, state_out, stream)
    return o, (call.pool if state_out is None else state_out)


def runner(run):
    """``run``'s runner for one memo class and per-call key (``launch_plan.kept_runner``): the class fixes the plan
    key but for pointer alignment, so the plan kept for an aligned call serves later aligned calls."""
    def find(call):
        if not aligned(call):
            return None
        lp = WARM.plan(plan_key(call))
        return None if lp is None or lp.go is None else (lp, lp.direct.device)

    def go_kept(lp, stream, call):
        return go(lp, call, stream) if aligned(call) else MISS

    return kept_runner(WARM, run, find, go_kept)


def _launch(lp, call):
    """Allocate the outputs and launch; returns (o, the final state, what Triton's JIT path returned or None)."""
    stream = None if lp.go is None else go_stream(lp.direct.device)
    if stream is not None:
        return (*go(lp, call, stream), None)
    o, state_out = _outputs(lp, call)
    compiled = None
    if lp.runs:  # (nothing to compute: an empty grid is not launched)
        compiled = launch(_k.atrex_sm90_gdn_decode, lp.grid, _tensors(call, o, state_out), (*lp.ints, call.scale),
                          lp.meta)
    return o, (call.pool if state_out is None else state_out), compiled


def decode(call):
    """Run ``call`` on the current stream; returns ``(o, pool or the new fp32 state)``. A call whose class
    launched before runs its kept launch plan; the first call of a class checks capture safety, launches through
    Triton and keeps the plan."""
    key = plan_key(call)
    lp = WARM.plan(key)
    if lp is not None:
        return _launch(lp, call)[:2]
    lp = new_plan(call)
    # o / state_out stand as their dtype until allocated (a dtype keys as an aligned launcher-owned buffer)
    args = (*_tensors(call, call.dtype, None if call.inplace_final_state else torch.float32), *lp.ints, call.scale)
    lkey = launch_key(_k.atrex_sm90_gdn_decode, args, lp.meta)
    missing = WARM.missing([lkey])
    if missing and call.capturing:
        raise AtrexCaptureError(
            "nvidia.gdn_decode_sm90: the Triton specialisation for this call is not compiled and CUDA-graph "
            "capture is active; prewarm first (atrex.prewarm('fused_recurrent_gated_delta_rule', [call kwargs]) "
            "or one eager call with the same static shape) before capturing")
    direct = WARM.direct(lkey)
    if direct is not None:  # the kernel launched before for another class: no JIT dispatch
        lp = _with_direct(lp, call, direct)
        WARM.keep_plan(key, lp)
        return _launch(lp, call)[:2]
    o, state, compiled = _launch(lp, call)
    WARM.add(missing)
    if lp.runs:
        direct = capture(_k.atrex_sm90_gdn_decode, compiled, len(args), lp.meta, call.device)
        WARM.keep_direct(lkey, direct)
        WARM.keep_plan(key, _with_direct(lp, call, direct))
    return o, state
