"""Launcher of ATREX's SM90 chunked Gated-DeltaNet forward.

``gdn_fwd`` allocates its outputs and a call-local workspace (normalised q/k, the UT inverse ``A`` and ``Q K^T``
tiles, per-row gate factors), never mutates its inputs and never reads device values on the host (``cu_seqlens``
is consumed on the device only), so it is CUDA-graph capture-safe once its specialisations are compiled.
Validation belongs to ``impl.check``; this module trusts its caller. Which kernels run is ``plan.plan_call``'s
choice; ``build.py`` turns a plan into launches and ``runner.py`` launches them. The first run of a call class
(:func:`class_key`) is kept as a template (``atrex_nvidia/launch_template.py``): later calls of the class allocate
their outputs and one workspace buffer and launch the compiled kernels directly.
"""

import torch

from atrex_nvidia.launch_plan import kept_runner
from atrex_nvidia.launch_template import derive

from . import build
from .plan import GdnPlan, next_pow2, plan_call
from .runner import WARM, launch_all, scratch_on
from .triton_common import GDC_SUPPORTED

__all__ = ["WARM", "GdnPlan", "default_plan", "gdn_fwd", "warmed_count"]


def warmed_count() -> int:
    return len(WARM)


def _normalise(q, k, v, cu_seqlens):
    """Unit-stride last dims, and ``cu_seqlens = [0, T]`` with B == 1 read as the fixed-length call it is."""
    if cu_seqlens is not None and cu_seqlens.shape[0] == 2 and q.shape[0] == 1:
        cu_seqlens = None
    q, k, v = (x if x.stride(-1) == 1 else x.contiguous() for x in (q, k, v))
    return q, k, v, cu_seqlens


def default_plan(q, k, v, *, cu_seqlens, use_qk_l2norm_in_kernel, sm_count=None):
    """The plan ``gdn_fwd`` runs for these tensors when none is given."""
    q, k, v, cu_seqlens = _normalise(q, k, v, cu_seqlens)
    n_seqs = cu_seqlens.shape[0] - 1 if cu_seqlens is not None else q.shape[0]
    return plan_call(q, k, v, n_seqs=n_seqs, is_varlen=cu_seqlens is not None, l2norm=use_qk_l2norm_in_kernel,
                     sm_count=sm_count or _sm_count(q.device), pdl_supported=GDC_SUPPORTED)


def _sm_count(dev) -> int:
    """The device's SM count from core's cached classification (132 when it reports none, e.g. on CPU)."""
    from atrex.dispatch.target import classify_device
    return classify_device(dev).sm_count or 132


def gdn_fwd(q, k, v, g, beta, *, scale, initial_state, output_final_state, use_qk_l2norm_in_kernel,
            state_v_first, cu_seqlens, use_beta_sigmoid_in_kernel=False, allow_neg_eigval=False,
            use_gate_in_kernel=False, A_log=None, dt_bias=None, sm_count=None, plan=None, plan_only=False,
            cls=None):
    """Chunked Gated-DeltaNet forward, chunk 64.

    Parameters
    ----------
    q, k : ``[B, T, H, K]`` bf16/fp16, or fp32 (the generic pair only).
    v : ``[B, T, HV, V]`` same dtype, ``HV % H == 0`` (value head ``hv`` reads q/k head ``hv // (HV / H)``).
    g, beta : ``[B, T, HV]`` fp32/bf16/fp16; ``g`` per-token log decay, ``beta`` write strength.
    scale : float (already resolved).
    initial_state : None or ``[N, HV, K, V]`` (``[N, HV, V, K]`` if ``state_v_first``), any float dtype, read only.
    output_final_state : return the fp32 final state in the same layout.
    use_qk_l2norm_in_kernel : L2-normalise q and k (fp32, eps 1e-6 inside the sqrt).
    cu_seqlens : None or ``[N+1]`` int32/int64 on q's device (requires ``B == 1``).
    use_beta_sigmoid_in_kernel, allow_neg_eigval : ``beta <- sigmoid(beta)`` (fp32), times 2 with the second.
    use_gate_in_kernel, A_log, dt_bias : fla's gate ``g <- -e^A_log softplus(g + dt_bias)`` (fp32) in the gates
        kernel before anything reads g; ``A_log`` and the optional ``dt_bias`` ``[HV]`` in any float dtype.
    sm_count : the device's SM count (the dispatcher passes it); None looks it up.
    plan : a ``GdnPlan`` to run instead of the default one (tests).
    plan_only : return ``(plan, launches)`` instead of launching.
    cls : the validated class of the core's record (``call.cls``), which fixes every shape, stride, dtype, flag and
        scalar of the call (None: the call is keyed on them here).

    Returns
    -------
    ``(o, final_state)``: ``o`` ``[B, T, HV, V]`` in q's dtype; ``final_state`` fp32 or None.
    """
    roots = _roots(q, k, v, g, beta, initial_state, cu_seqlens, use_gate_in_kernel, A_log, dt_bias)
    q, k, v, g, beta, initial_state, cu_seqlens, A_log, dt_bias = roots
    B, T, H, K = q.shape
    HV, V = v.shape[2], v.shape[3]
    N = cu_seqlens.shape[0] - 1 if cu_seqlens is not None else B
    sm_count = sm_count or _sm_count(q.device)
    key = None
    if not plan_only and N and B * T:
        key = class_key(roots, cls, scale, output_final_state, use_qk_l2norm_in_kernel, state_v_first,
                        use_beta_sigmoid_in_kernel, allow_neg_eigval, sm_count, plan)
        template = WARM.plan(key)
        if template is not None:
            return template.run(roots, q.device, scratch_on)
    o = torch.empty((B, T, HV, V), dtype=q.dtype, device=q.device)
    ht = None
    if output_final_state:
        ht = torch.empty((N, HV, V, K) if state_v_first else (N, HV, K, V), dtype=torch.float32, device=q.device)
    if N == 0 or B * T == 0:
        if ht is not None:  # every sequence is empty: the final state is the initial state
            ht.copy_(initial_state) if initial_state is not None else ht.zero_()
        return (plan, []) if plan_only else (o, ht)
    if plan is None:
        plan = plan_call(q, k, v, n_seqs=N, is_varlen=cu_seqlens is not None, l2norm=use_qk_l2norm_in_kernel,
                         sm_count=sm_count, pdl_supported=GDC_SUPPORTED)
    call = build.Call(q, k, v, g, beta, float(scale), initial_state, bool(state_v_first), cu_seqlens,
                      bool(use_qk_l2norm_in_kernel), bool(use_beta_sigmoid_in_kernel), bool(allow_neg_eigval),
                      o, ht, B, T, H, HV, K, V, N, max(16, next_pow2(K)), sm_count, A_log, dt_bias)
    launches = build.launches(plan, call)
    if plan_only:
        return plan, launches
    directs = launch_all(q.device, launches, key)
    template = derive(launches, directs, roots, (o, ht), RECORD_ROOTS)
    if template is not None:
        WARM.keep_plan(key, template)
    return o, ht


def _roots(q, k, v, g, beta, initial_state, cu_seqlens, use_gate_in_kernel, A_log, dt_bias) -> tuple:
    """The call's tensors as the launches read them (normalised q/k/v and ``cu_seqlens``, the gate's parameters
    only with the in-kernel gate, unit-stride): the inputs of a template."""
    q, k, v, cu_seqlens = _normalise(q, k, v, cu_seqlens)
    if not use_gate_in_kernel:
        A_log = dt_bias = None
    elif A_log is None:
        raise ValueError("nvidia.gdn_sm90: use_gate_in_kernel=True needs A_log")
    else:  # (the gates kernel reads them with unit stride)
        A_log, dt_bias = A_log.contiguous(), None if dt_bias is None else dt_bias.contiguous()
    return q, k, v, g, beta, initial_state, cu_seqlens, A_log, dt_bias


def run_template(call):
    """``(o, final_state)`` of a record the core's memo served (``call.cls``) whose class already has a template,
    else None (``impl.run`` then calls :func:`gdn_fwd`). The host path of repeated calls: no keyword binding, no
    planning."""
    if call.cls is None:
        return None
    roots = _record_roots(call)
    template = WARM.plan(class_key(roots, call.cls, None, None))
    if template is None:
        return None
    return template.run(roots, call.device, scratch_on, not call.capturing)


#: where a memo-served record holds each root (:func:`_record_roots`; a root the class has none of is None there
#: and in the template alike)
RECORD_ROOTS = ("src.q", "src.k", "src.v", "src.g", "src.beta", "src.initial_state", "src.cu_seqlens", "src.A_log",
                "src.dt_bias")


def _record_roots(call) -> tuple:
    """The roots of a memo-served record, as :func:`_roots` makes them: q/k/v and the gate's parameters are
    contiguous (``impl.check`` accepted the call), one varlen sequence in one batch row is the fixed-length call."""
    cu = call.cu_seqlens
    if cu is not None and cu.shape[0] == 2 and call.batch == 1:
        cu = None
    gate = call.use_gate_in_kernel
    return (call.q, call.k, call.v, call.g, call.beta, call.initial_state, cu, call.A_log if gate else None,
            call.dt_bias if gate else None)


def _aligned(roots) -> bool:
    ptrs = 0
    for t in roots:
        if t is not None:
            ptrs |= t.data_ptr()
    return not ptrs & 15


def runner(run):
    """``run``'s runner for one memo class and per-call key (``launch_plan.kept_runner``): the class fixes the
    template's key but for pointer alignment (:func:`class_key`), so the template kept for an aligned call serves
    later calls through its generated run (``Template.kept``), which reads the roots off the record and refuses
    misaligned ones itself."""
    def find(call):
        if call.cls is None:
            return None
        roots = _record_roots(call)
        if not _aligned(roots):
            return None
        template = WARM.plan(class_key(roots, call.cls, None, None))
        return None if template is None or template.kept is None else (template, template.device)

    def go_kept(template, stream, call):
        return template.kept(call, call.device, not call.capturing, stream)  # (it reads the roots: RECORD_ROOTS)

    return kept_runner(WARM, run, find, go_kept)


def class_key(roots, cls, scale, *flags) -> tuple:
    """The call class: every input's shape, strides, dtype and 16-byte alignment, the scale, the flags, the SM
    count and an explicit plan (None: the default one, which the rest determines). With the core's validated
    class ``cls`` (which fixes shapes, strides, dtypes, flags and scalars) only the alignment is read here."""
    if cls is not None:
        align = _aligned(roots) or tuple(None if t is None else t.data_ptr() % 16 == 0 for t in roots)
        return cls, align, flags[-1]
    return (roots[0].device, tuple(_tensor_sig(t) for t in roots), float(scale), *flags)


def _tensor_sig(t):
    return None if t is None else (t.shape, t.stride(), t.dtype, t.data_ptr() % 16 == 0)
