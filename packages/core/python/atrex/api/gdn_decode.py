"""``atrex.fused_recurrent_gated_delta_rule``: the token-by-token Gated-DeltaNet step (decode and MTP) on
vLLM's state-pool contract (docs/fused_recurrent_gated_delta_rule.md)."""

from __future__ import annotations

from typing import NamedTuple

import torch

from atrex import env as _env
from atrex.api import _validate as V
from atrex.api._gdn_fast import remember
from atrex.api._memo import CallMemo, chosen_impl, classed, unclassed_replace
from atrex.api._values import wanted
from atrex.dispatch.registry import get_registry
from atrex.dispatch.target import DeviceTarget, classify_device
from atrex.errors import AtrexNotSupportedError, AtrexTypeError, AtrexValueError

__all__ = [
    "GDNDecodeCall",
    "can_use_fused_recurrent_gated_delta_rule",
    "explain_fused_recurrent_gated_delta_rule",
    "fused_recurrent_gated_delta_rule",
    "normalize_gdn_decode_call",
]

OP = "fused_recurrent_gated_delta_rule"
Tensor = torch.Tensor
_IO_DTYPES = (torch.bfloat16, torch.float16, torch.float32)
_GATE_DTYPES = (torch.float32, torch.bfloat16, torch.float16)
POOL_DTYPES = (torch.float32, torch.bfloat16)
_INDEX_DTYPES = (torch.int32, torch.int64)


class GDNDecodeCall(NamedTuple):
    """The validated, normalized decode call (immutable). ``beta`` is None for "all ones"."""

    q: Tensor
    k: Tensor
    v: Tensor
    g: Tensor
    beta: Tensor | None
    scale: float
    pool: Tensor
    inplace_final_state: bool
    cu_seqlens: Tensor | None
    ssm_state_indices: Tensor | None
    num_accepted_tokens: Tensor | None
    use_qk_l2norm_in_kernel: bool
    state_v_first: bool
    batch: int
    seq_len: int
    num_heads: int
    num_v_heads: int
    head_k_dim: int
    head_v_dim: int
    num_seqs: int
    pool_size: int
    slots_per_seq: int  # T_max of 2-D ssm_state_indices, 1 for 1-D, 0 without indices
    dtype: torch.dtype
    device: torch.device
    target: DeviceTarget
    capturing: bool
    #: the call's validated class (``atrex/api/_memo.py``) when the memo served it, else None (``_replace``
    #: resets it): launchers may key on it instead of reading shapes and strides again
    cls: object = None


unclassed_replace(GDNDecodeCall)
MEMO = CallMemo()  # validated classes of keyword calls (``_gdn_fast.py``)


def normalize_gdn_decode_call(
    q,
    k,
    v,
    g,
    beta=None,
    scale=None,
    initial_state=None,
    inplace_final_state=True,
    cu_seqlens=None,
    ssm_state_indices=None,
    num_accepted_tokens=None,
    use_qk_l2norm_in_kernel=False,
    *,
    state_v_first=True,
) -> GDNDecodeCall:
    """Validate a call under vLLM's fused_recurrent contract and return its normalized record."""
    # ---- types -------------------------------------------------------------------------------
    q = V.require_tensor("q", q)
    k = V.require_tensor("k", k)
    v = V.require_tensor("v", v)
    g = V.require_tensor("g", g)
    beta = V.optional_tensor("beta", beta)
    scale = None if scale is None else V.host_float("scale", scale)
    pool = V.require_tensor("initial_state", initial_state, "the state pool, a torch.Tensor (required)")
    inplace = V.host_bool("inplace_final_state", inplace_final_state)
    cu_seqlens = V.optional_tensor("cu_seqlens", cu_seqlens)
    idx = V.optional_tensor("ssm_state_indices", ssm_state_indices)
    nat = V.optional_tensor("num_accepted_tokens", num_accepted_tokens)
    l2 = V.host_bool("use_qk_l2norm_in_kernel", use_qk_l2norm_in_kernel)
    state_v_first = V.host_bool("state_v_first", state_v_first)
    for name, x in (("q", q), ("k", k), ("v", v), ("g", g), ("beta", beta), ("initial_state", pool)):
        if x is not None and not x.is_floating_point():
            raise AtrexTypeError(name, V.shape_str(x), "a floating-point tensor")

    # ---- structure -----------------------------------------------------------------------------
    device = q.device
    if q.dim() != 4:
        raise AtrexValueError("q", V.shape_str(q), "rank 4 [B, T, H, K]")
    b, t, h, kd = q.shape
    if tuple(k.shape) != tuple(q.shape):
        raise AtrexValueError("k", V.shape_str(k), f"q's shape {list(q.shape)}")
    if v.dim() != 4 or v.shape[0] != b or v.shape[1] != t:
        raise AtrexValueError("v", V.shape_str(v), f"rank 4 [B={b}, T={t}, HV, V]")
    hv, vd = v.shape[2], v.shape[3]
    if h < 1 or hv < 1 or hv % h != 0:
        raise AtrexValueError("v", f"HV={hv} value heads with H={h} q/k heads", "HV a positive multiple of H")
    if kd < 1 or vd < 1:
        raise AtrexValueError("q", V.shape_str(q), "K >= 1 and V >= 1")
    for name, x in (("q", q), ("k", k), ("v", v)):
        V.last_dim_contiguous(name, x)
        V.same_device(name, x, device)
    if q.dtype not in _IO_DTYPES:
        raise AtrexNotSupportedError.feature("q", V.dname(q.dtype), "bfloat16 or float16 (float32: reference only)",
                                             op=OP)
    for name, x in (("k", k), ("v", v)):
        if x.dtype != q.dtype:
            raise AtrexValueError(name, V.shape_str(x), f"the dtype of q ({V.dname(q.dtype)})")
    for name, x in (("g", g), ("beta", beta)):
        if x is None:
            continue
        if tuple(x.shape) != (b, t, hv):
            raise AtrexValueError(name, V.shape_str(x), f"shape [B={b}, T={t}, HV={hv}]")
        if x.dtype not in _GATE_DTYPES:
            raise AtrexTypeError(name, V.shape_str(x), "float32, bfloat16 or float16")
        V.same_device(name, x, device)
    if cu_seqlens is not None:
        V.int32_vector("cu_seqlens", cu_seqlens, None, device, _INDEX_DTYPES)
        if b != 1:
            raise AtrexValueError("q", V.shape_str(q), "B == 1 when cu_seqlens is given (varlen)")
        n = cu_seqlens.shape[0] - 1
        if n < 1:
            raise AtrexValueError("cu_seqlens", V.shape_str(cu_seqlens), "shape [N+1] with N >= 1")
    else:
        n = b

    # the pool: [P, HV, K, V] or [P, HV, V, K] (state_v_first); any slot stride, each slot contiguous
    layout = "[P, HV, V, K] (state_v_first=True, vLLM's layout)" if state_v_first else "[P, HV, K, V]"
    inner = (hv, vd, kd) if state_v_first else (hv, kd, vd)
    if pool.dim() != 4 or tuple(pool.shape[1:]) != inner or pool.shape[0] < 1:
        raise AtrexValueError("initial_state", V.shape_str(pool), f"a state pool {layout} with HV={hv}, K={kd}, "
                              f"V={vd} and P >= 1 slots")
    if pool.dtype not in POOL_DTYPES:
        raise AtrexTypeError("initial_state", V.shape_str(pool), "a float32 or bfloat16 state pool")
    V.same_device("initial_state", pool, device)
    want = (inner[1] * inner[2], inner[2], 1)
    got = tuple(pool.stride()[1:])
    if any(s != w and d > 1 for s, w, d in zip(got, want, pool.shape[1:])) or pool.stride(0) < 0:
        raise AtrexValueError("initial_state", f"strides {tuple(pool.stride())}",
                              f"each slot contiguous (strides [*, {want[0]}, {want[1]}, 1]); any slot stride")
    p = pool.shape[0]
    slots = 0
    if idx is not None:
        if idx.dtype not in _INDEX_DTYPES:
            raise AtrexTypeError("ssm_state_indices", V.shape_str(idx), "int32 or int64 slot indices")
        V.same_device("ssm_state_indices", idx, device)
        if idx.dim() == 1 and idx.shape[0] == n:
            slots = 1
        elif idx.dim() == 2 and idx.shape[0] == n and idx.shape[1] >= 1:
            slots = idx.shape[1]
            if cu_seqlens is None and slots < t:
                raise AtrexValueError("ssm_state_indices", V.shape_str(idx),
                                      f"[N={n}, T_max] with T_max >= T={t} (one slot per token position)")
        else:
            raise AtrexValueError("ssm_state_indices", V.shape_str(idx), f"shape [N={n}] or [N={n}, T_max]")
        if idx.dim() == 2 and idx.shape[1] > 1 and idx.stride(1) != 1:
            raise AtrexValueError("ssm_state_indices", f"strides {tuple(idx.stride())}", "stride(-1) == 1")
    elif p < n:
        raise AtrexValueError("initial_state", V.shape_str(pool),
                              f"P >= N={n} slots when ssm_state_indices is None (sequence n uses slot n)")
    if nat is not None:
        V.int32_vector("num_accepted_tokens", nat, n, device, _INDEX_DTYPES)
        if idx is None or idx.dim() != 2:
            raise AtrexValueError("num_accepted_tokens", V.shape_str(nat),
                                  "None unless ssm_state_indices is [N, T_max] (MTP: one slot per token position)")
    # the pool is written in place: it must not share memory with an input
    if inplace:
        for name, x in (("q", q), ("k", k), ("v", v), ("g", g), ("beta", beta), ("cu_seqlens", cu_seqlens),
                        ("ssm_state_indices", idx), ("num_accepted_tokens", nat)):
            if x is not None and V.overlaps(pool, x):
                raise AtrexValueError("initial_state", "a pool sharing memory with " + f"`{name}`",
                                      "a pool that no input aliases (it is updated in place)")
    V.reject_grad(OP, {"q": q, "k": k, "v": v, "g": g, "beta": beta, "initial_state": pool})
    return GDNDecodeCall(
        q, k, v, g, beta, kd ** -0.5 if scale is None else scale, pool, inplace, cu_seqlens, idx, nat, l2,
        state_v_first, b, t, h, hv, kd, vd, n, p, slots, q.dtype, device, classify_device(device),
        V.capturing(device),
    )


def _host(t: Tensor) -> list:
    return t.tolist() if t.device.type == "cpu" else t.detach().to("cpu", torch.int64).tolist()


def check_values(call: GDNDecodeCall) -> None:
    """Offsets, slot ranges, accepted-token counts and disjoint slots across sequences (docs/errors.md)."""
    if call.cu_seqlens is not None:
        cu = _host(call.cu_seqlens)
        if cu[0] != 0:
            raise AtrexValueError("cu_seqlens", f"cu_seqlens[0] = {cu[0]}", "offsets starting at 0")
        for i in range(len(cu) - 1):
            if cu[i + 1] < cu[i]:
                raise AtrexValueError("cu_seqlens", f"cu_seqlens[{i + 1}] = {cu[i + 1]} < cu_seqlens[{i}] = {cu[i]}",
                                      "non-decreasing offsets")
        if cu[-1] != call.seq_len:
            raise AtrexValueError("cu_seqlens", f"cu_seqlens[-1] = {cu[-1]}", f"== {call.seq_len} (tokens given)")
        lens = [cu[i + 1] - cu[i] for i in range(call.num_seqs)]
    else:
        lens = [call.seq_len] * call.num_seqs
    if call.ssm_state_indices is None:
        return
    rows = _host(call.ssm_state_indices)
    rows = [[r] for r in rows] if call.ssm_state_indices.dim() == 1 else rows
    two_d = call.ssm_state_indices.dim() == 2
    nat = _host(call.num_accepted_tokens) if call.num_accepted_tokens is not None else None
    owner: dict[int, int] = {}
    for n, row in enumerate(rows):
        for j, s in enumerate(row):
            if s >= call.pool_size:
                where = f"ssm_state_indices[{n}, {j}]" if two_d else f"ssm_state_indices[{n}]"
                raise AtrexValueError("ssm_state_indices", f"{where} = {s}",
                                      f"slots in [0, {call.pool_size}) (P of initial_state), or < 0 for padding")
        if all(s < 0 for s in row):
            continue
        if two_d and lens[n] > len(row):
            raise AtrexValueError("ssm_state_indices", f"row {n} has {len(row)} slots for a {lens[n]}-token sequence",
                                  "T_max >= every sequence's length")
        if nat is not None and not 1 <= nat[n] <= len(row):
            raise AtrexValueError("num_accepted_tokens", f"num_accepted_tokens[{n}] = {nat[n]}",
                                  f"1..{len(row)} (T_max) for a sequence that is not padded")
        start = row[nat[n] - 1] if nat is not None else row[0]
        if start < 0 or not call.inplace_final_state:
            continue
        touched = {start, *(row[:lens[n]] if two_d else [])}
        for s in sorted(x for x in touched if x >= 0):
            if owner.setdefault(s, n) != n:
                raise AtrexValueError("ssm_state_indices", f"slot {s} used by sequences {owner[s]} and {n}",
                                      "slots disjoint across sequences (the pool is updated in place)")


def normalize(*args, **kwargs) -> GDNDecodeCall:
    """Validate (binding errors -> AtrexTypeError); value checks on CPU tensors, elsewhere with
    ``ATREX_CHECK_VALUES=1`` (never under capture)."""
    call = V.bind(normalize_gdn_decode_call, OP, args, kwargs)
    if wanted(call):
        check_values(call)
    return call


def _validated(args, kwargs):
    """``(record, implementation)``: a keyword call of a class seen before takes the memo's fast path and the
    implementation its entry chose; any other call is validated in full, selected by the registry, and
    remembered when it is a keyword call."""
    reg = get_registry()
    hit = None if args else MEMO.match(kwargs, reg, _env._settings)
    if hit is None:
        call = V.bind(normalize_gdn_decode_call, OP, args, kwargs)
        if wanted(call):
            check_values(call)
        impl = reg.select(OP, call)  # (a class is remembered once something serves it)
        return (call if args else classed(call, remember(MEMO, kwargs, call, "initial_state"))), impl
    call, entry, dyn = hit
    # (wanted(), without device.type; a hit implies the settings are read)
    if not call.capturing and (entry.cpu or _env._settings.check_values):
        check_values(call)
    impl = entry.chosen.get(dyn)  # (chosen_impl, inlined: host cost)
    return call, impl if impl is not None else chosen_impl(entry, dyn, reg, OP, call)


def run_call(call: GDNDecodeCall, impl=None):
    if impl is None:
        impl = get_registry().select(OP, call)
    return impl.run(call)


_DOC = """Gated DeltaNet recurrent step (decode / MTP) on a state pool, compatible with vLLM's
``fused_recurrent_gated_delta_rule``.

Parameters
----------
q, k : Tensor ``[B, T, H, K]``
    bf16 or fp16 (fp32 on the reference only); ``stride(-1) == 1``.
v : Tensor ``[B, T, HV, V]``
    Same dtype; GVA: ``HV % H == 0``, value head ``hv`` uses q/k head ``hv // (HV/H)``.
g : Tensor ``[B, T, HV]``
    Per-token log decay (fp32, bf16 or fp16).
beta : Tensor ``[B, T, HV]``, optional
    Write strength; None means ones.
scale : float, optional
    Defaults to ``K ** -0.5``; applied after the optional L2 normalisation.
initial_state : Tensor (required)
    The state pool ``[P, HV, V, K]`` (default, vLLM's layout) or ``[P, HV, K, V]`` with
    ``state_v_first=False``; fp32 or bf16; each slot contiguous, any slot stride.
inplace_final_state : bool
    True: each sequence's state is written back into the pool (returned as ``final_state``).
    False: the pool is not modified; a new fp32 ``[N, HV, *]`` tensor (pool layout) is returned.
cu_seqlens : Tensor ``[N+1]`` int32 or int64, optional
    Varlen: requires ``B == 1``; without it every one of the ``B`` sequences has ``T`` tokens.
ssm_state_indices : Tensor ``[N]`` or ``[N, T_max]`` int32 or int64, optional
    Pool slot per sequence, or per token position (MTP: the state after token ``j`` goes to
    ``[n, j]``). Entries < 0: a padded sequence (outputs 0, no state read or written). None: slot n.
num_accepted_tokens : Tensor ``[N]`` int32 or int64, optional
    MTP (needs ``[N, T_max]`` indices): start from slot ``[n, num_accepted_tokens[n] - 1]``.
use_qk_l2norm_in_kernel : bool
    L2-normalise q and k per token and head in fp32 (eps 1e-6), as vLLM's kernel does.
state_v_first : bool, keyword-only
    The pool layout (default True: ``[P, HV, V, K]``).

Returns
-------
``(o, final_state)``: ``o`` ``[B, T, HV, V]`` in q's dtype; ``final_state`` the pool (in place) or the
new fp32 tensor.
"""


@V.with_exact_signature(normalize_gdn_decode_call, OP, _DOC)
def fused_recurrent_gated_delta_rule(*args, **kwargs):
    call, impl = _validated(args, kwargs)
    return impl.run(call)  # (run_call, inlined: host cost)


can_use_fused_recurrent_gated_delta_rule = V.can_use_function(
    normalize_gdn_decode_call, "can_use_fused_recurrent_gated_delta_rule", _validated,
    ('True iff the same call would run on an ATREX implementation now (the reference does not count on an '
     'accelerator). Never raises for ATREX errors; host-only.'))
explain_fused_recurrent_gated_delta_rule = V.explain_function(
    normalize_gdn_decode_call, "explain_fused_recurrent_gated_delta_rule", OP,
    ('The dispatch trace for this call, without running it.'))
