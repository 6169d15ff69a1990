"""``atrex.chunk_gated_delta_rule``: fla's chunked Gated-DeltaNet forward, as vLLM calls it."""

from __future__ import annotations

from typing import NamedTuple

import torch

from atrex import env as _env
from atrex.api import _validate as V
from atrex.api._gdn_fast import remember
from atrex.api._memo import CallMemo, chosen_impl, classed, unclassed_replace
from atrex.api._values import check_gdn_values, wanted
from atrex.dispatch.registry import get_registry
from atrex.dispatch.target import DeviceTarget, classify_device
from atrex.errors import AtrexNotSupportedError, AtrexTypeError, AtrexValueError

__all__ = [
    "GDNCall",
    "can_use_chunk_gated_delta_rule",
    "chunk_gated_delta_rule",
    "explain_chunk_gated_delta_rule",
    "normalize_gdn_call",
]

OP = "chunk_gated_delta_rule"
Tensor = torch.Tensor
_IO_DTYPES = (torch.bfloat16, torch.float16, torch.float32)
_GATE_DTYPES = (torch.float32, torch.bfloat16, torch.float16)
CHUNK_SIZES = (16, 32, 64)


class GDNCall(NamedTuple):
    """The validated, normalized Gated-DeltaNet call (immutable)."""

    q: Tensor
    k: Tensor
    v: Tensor
    g: Tensor
    beta: Tensor
    scale: float
    initial_state: Tensor | None
    output_final_state: bool
    use_qk_l2norm_in_kernel: bool
    use_beta_sigmoid_in_kernel: bool
    allow_neg_eigval: bool
    state_v_first: bool
    cu_seqlens: Tensor | None
    cu_seqlens_cpu: Tensor | None
    use_gate_in_kernel: bool
    A_log: Tensor | None
    dt_bias: Tensor | None
    chunk_size: int
    batch: int
    seq_len: int
    num_heads: int
    num_v_heads: int
    head_k_dim: int
    head_v_dim: int
    num_seqs: int
    dtype: torch.dtype
    device: torch.device
    target: DeviceTarget
    capturing: bool
    #: the call's validated class (``atrex/api/_memo.py``) when the memo served it, else None (``_replace``
    #: resets it): launchers may key on it instead of reading shapes and strides again
    cls: object = None


unclassed_replace(GDNCall)
MEMO = CallMemo()  # validated classes of keyword calls (``_gdn_fast.py``)


def normalize_gdn_call(
    q,
    k,
    v,
    g,
    beta,
    scale=None,
    initial_state=None,
    output_final_state=False,
    use_qk_l2norm_in_kernel=False,
    use_beta_sigmoid_in_kernel=False,
    allow_neg_eigval=False,
    state_v_first=False,
    cu_seqlens=None,
    cu_seqlens_cpu=None,
    chunk_indices=None,
    cp_context=None,
    *,
    chunk_size=64,
    use_gate_in_kernel=False,
    A_log=None,
    dt_bias=None,
    head_first=False,
    chunk_offsets=None,
    transpose_state_layout=None,
) -> GDNCall:
    """Validate a call under the fla/vLLM contract and return its normalized record."""
    # ---- types -------------------------------------------------------------------------------
    q = V.require_tensor("q", q)
    k = V.require_tensor("k", k)
    v = V.require_tensor("v", v)
    g = V.require_tensor("g", g)
    beta = V.require_tensor("beta", beta)
    scale = None if scale is None else V.host_float("scale", scale)
    initial_state = V.optional_tensor("initial_state", initial_state)
    output_final_state = V.host_bool("output_final_state", output_final_state)
    l2 = V.host_bool("use_qk_l2norm_in_kernel", use_qk_l2norm_in_kernel)
    beta_sigmoid = V.host_bool("use_beta_sigmoid_in_kernel", use_beta_sigmoid_in_kernel)
    neg_eig = V.host_bool("allow_neg_eigval", allow_neg_eigval)
    state_v_first = V.host_bool("state_v_first", state_v_first)
    cu_seqlens = V.optional_tensor("cu_seqlens", cu_seqlens)
    cu_seqlens_cpu = V.optional_tensor("cu_seqlens_cpu", cu_seqlens_cpu)
    V.optional_tensor("chunk_indices", chunk_indices, "a torch.Tensor or None (a hint)")
    V.optional_tensor("chunk_offsets", chunk_offsets, "a torch.Tensor or None (a hint)")
    chunk_size = V.host_int("chunk_size", chunk_size, None)
    gate_in_kernel = V.host_bool("use_gate_in_kernel", use_gate_in_kernel)
    A_log = V.optional_tensor("A_log", A_log)
    dt_bias = V.optional_tensor("dt_bias", dt_bias)
    head_first = V.host_bool("head_first", head_first)
    if transpose_state_layout is not None:
        transpose_state_layout = V.host_bool("transpose_state_layout", transpose_state_layout)
        if state_v_first:
            raise AtrexValueError("transpose_state_layout", transpose_state_layout,
                                  "None when state_v_first is given (it is fla's deprecated alias of state_v_first)")
        state_v_first = transpose_state_layout

    # ---- rejected options ----------------------------------------------------------------------
    if cp_context is not None:
        raise AtrexNotSupportedError.feature("cp_context", type(cp_context).__name__,
                                             "None (no context parallelism)", op=OP)
    if head_first:
        raise AtrexNotSupportedError.feature("head_first", True, "False ([B, T, H, K] inputs only)", op=OP)

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
    for name, x in (("q", q), ("k", k), ("v", v), ("g", g), ("beta", beta)):  # integers: a wrong type
        if not x.is_floating_point():
            raise AtrexTypeError(name, V.shape_str(x), "a floating-point tensor (bfloat16, float16 or float32)")
    if q.dtype not in _IO_DTYPES:
        raise AtrexNotSupportedError.feature("q", V.dname(q.dtype), "bfloat16, float16 or float32", op=OP)
    for name, x in (("k", k), ("v", v)):
        if x.dtype != q.dtype:
            raise AtrexValueError(name, V.shape_str(x), f"the dtype of q ({V.dname(q.dtype)})")
    for name, x in (("g", g), ("beta", beta)):
        if tuple(x.shape) != (b, t, hv):
            raise AtrexValueError(name, V.shape_str(x), f"shape [B={b}, T={t}, HV={hv}]")
        if x.dtype not in _GATE_DTYPES:
            raise AtrexTypeError(name, V.shape_str(x), "float32, bfloat16 or float16")
        V.same_device(name, x, device)
    if chunk_size not in CHUNK_SIZES:
        raise AtrexValueError("chunk_size", chunk_size, "16, 32 or 64 (the math does not depend on it)")
    if neg_eig and not beta_sigmoid:
        raise AtrexValueError("allow_neg_eigval", True, "False unless use_beta_sigmoid_in_kernel=True")
    if gate_in_kernel:
        if A_log is None:
            raise AtrexValueError("A_log", None, f"a [HV={hv}] tensor when use_gate_in_kernel=True")
        for name, x in (("A_log", A_log), ("dt_bias", dt_bias)):
            if x is None:
                continue
            if tuple(x.shape) != (hv,):
                raise AtrexValueError(name, V.shape_str(x), f"shape [HV={hv}]")
            if x.dtype not in _GATE_DTYPES:  # (fla reads them as fp32; integers are a wrong type)
                raise AtrexTypeError(name, V.shape_str(x), "float32, bfloat16 or float16")
            V.same_device(name, x, device)
    elif A_log is not None or dt_bias is not None:
        raise AtrexValueError("A_log" if A_log is not None else "dt_bias", "a tensor",
                              "None unless use_gate_in_kernel=True")
    if cu_seqlens is not None:
        V.int32_vector("cu_seqlens", cu_seqlens, None, device, (torch.int32, torch.int64))
        if b != 1:
            raise AtrexValueError("q", V.shape_str(q), "B == 1 when cu_seqlens is given (varlen)")
        n = cu_seqlens.shape[0] - 1
        if n < 1:
            raise AtrexValueError("cu_seqlens", V.shape_str(cu_seqlens), "shape [N+1] with N >= 1")
        if cu_seqlens_cpu is not None:
            if cu_seqlens_cpu.device.type != "cpu" or tuple(cu_seqlens_cpu.shape) != (n + 1,):
                raise AtrexValueError("cu_seqlens_cpu", V.shape_str(cu_seqlens_cpu),
                                      f"a CPU tensor of shape [{n + 1}] mirroring cu_seqlens")
            if cu_seqlens_cpu.dtype not in (torch.int32, torch.int64):
                raise AtrexTypeError("cu_seqlens_cpu", V.shape_str(cu_seqlens_cpu), "int32 or int64")
    else:
        if cu_seqlens_cpu is not None:
            raise AtrexValueError("cu_seqlens_cpu", "a tensor", "None unless cu_seqlens is given")
        n = b
    if initial_state is not None:
        want = (n, hv, vd, kd) if state_v_first else (n, hv, kd, vd)
        if tuple(initial_state.shape) != want:
            layout = "[N, HV, V, K] (state_v_first)" if state_v_first else "[N, HV, K, V]"
            raise AtrexValueError("initial_state", V.shape_str(initial_state), f"shape {list(want)} = {layout}")
        if initial_state.dtype not in _GATE_DTYPES:
            raise AtrexTypeError("initial_state", V.shape_str(initial_state), "float32, bfloat16 or float16")
        V.same_device("initial_state", initial_state, device)
    V.reject_grad(OP, {"q": q, "k": k, "v": v, "g": g, "beta": beta, "initial_state": initial_state,
                       "A_log": A_log, "dt_bias": dt_bias})
    return GDNCall(
        q, k, v, g, beta, kd ** -0.5 if scale is None else scale, initial_state, output_final_state, l2,
        beta_sigmoid, neg_eig, state_v_first, cu_seqlens, cu_seqlens_cpu, gate_in_kernel, A_log, dt_bias,
        chunk_size, b, t, h, hv, kd, vd, n, q.dtype, device, classify_device(device), V.capturing(device),
    )


def normalize(*args, **kwargs) -> GDNCall:
    """Validate (binding errors -> AtrexTypeError); the value preconditions on CPU tensors, elsewhere
    with ``ATREX_CHECK_VALUES=1`` (never under capture)."""
    call = V.bind(normalize_gdn_call, "chunk_gated_delta_rule", args, kwargs)
    if wanted(call):
        check_gdn_values(call)
    return call


def _validated(args, kwargs):
    """``(record, implementation)``: a keyword call of a class seen before takes the memo's fast path and the
    implementation its entry chose; any other call is validated in full, selected by the registry, and
    remembered when it is a keyword call."""
    reg = get_registry()
    hit = None if args else MEMO.match(kwargs, reg, _env._settings)
    if hit is None:
        call = V.bind(normalize_gdn_call, "chunk_gated_delta_rule", args, kwargs)
        if wanted(call):
            check_gdn_values(call)
        impl = reg.select(OP, call)  # (a class is remembered once something serves it)
        return (call if args else classed(call, remember(MEMO, kwargs, call))), impl
    call, entry, dyn = hit
    # (wanted(), without device.type; a hit implies the settings are read)
    if not call.capturing and (entry.cpu or _env._settings.check_values):
        check_gdn_values(call)
    impl = entry.chosen.get(dyn)  # (chosen_impl, inlined: host cost)
    return call, impl if impl is not None else chosen_impl(entry, dyn, reg, OP, call)


def run_call(call: GDNCall, impl=None):
    if impl is None:
        impl = get_registry().select(OP, call)
    return impl.run(call)


_DOC = """Chunked Gated DeltaNet forward (prefill), compatible with fla's ``chunk_gated_delta_rule``.

Parameters
----------
q, k : Tensor ``[B, T, H, K]``
    bf16, fp16 or fp32; ``stride(-1) == 1``.
v : Tensor ``[B, T, HV, V]``
    Same dtype; GVA: ``HV % H == 0``, value head ``hv`` uses q/k head ``hv // (HV/H)``.
g : Tensor ``[B, T, HV]``
    Per-token log decay (fp32, bf16 or fp16), not cumulated by the caller.
beta : Tensor ``[B, T, HV]``
    Write strength (post-sigmoid unless ``use_beta_sigmoid_in_kernel``).
scale : float, optional
    Defaults to ``K ** -0.5``; applied after the optional L2 normalisation.
initial_state : Tensor, optional
    ``[N, HV, K, V]``, or ``[N, HV, V, K]`` with ``state_v_first`` (vLLM's cache layout).
    fp32 (fp16/bf16 upcast on read). Never modified. None means zeros.
output_final_state : bool
    Also return the fp32 final state, in the layout chosen by ``state_v_first``.
use_qk_l2norm_in_kernel : bool
    L2-normalise q and k per token and head (fp32, eps 1e-6, rounded to the input dtype).
use_beta_sigmoid_in_kernel, allow_neg_eigval : bool
    ``beta <- sigmoid(beta)`` in fp32, times 2 with ``allow_neg_eigval`` (which requires the sigmoid flag).
cu_seqlens : Tensor ``[N+1]`` int32 or int64, optional
    Varlen: requires ``B == 1``. ``cu_seqlens_cpu`` is an optional CPU mirror (trusted).
chunk_size : 16, 32 or 64
    A hint; ATREX kernels compute with 64 (the result does not depend on it).
use_gate_in_kernel, A_log, dt_bias
    ``g <- -exp(A_log) * softplus(g + dt_bias)`` in fp32 before the recurrence; ``A_log`` and the optional
    ``dt_bias`` are ``[HV]`` (fp32, bf16 or fp16); ``A_log`` is required when on and refused when off.
cp_context, head_first=True
    Rejected with :class:`AtrexNotSupportedError`.

Returns
-------
``(o, final_state)``: ``o`` ``[B, T, HV, V]`` in q's dtype; ``final_state`` fp32 or None.
"""


@V.with_exact_signature(normalize_gdn_call, "chunk_gated_delta_rule", _DOC)
def chunk_gated_delta_rule(*args, **kwargs):
    call, impl = _validated(args, kwargs)
    return impl.run(call)  # (run_call, inlined: host cost)


can_use_chunk_gated_delta_rule = V.can_use_function(
    normalize_gdn_call, "can_use_chunk_gated_delta_rule", _validated,
    ('True iff the same call would run on an ATREX implementation now (the reference does not count on an '
     'accelerator). Never raises for ATREX errors; host-only.'))
explain_chunk_gated_delta_rule = V.explain_function(
    normalize_gdn_call, "explain_chunk_gated_delta_rule", OP,
    ('The dispatch trace for this call, without running it.'))
