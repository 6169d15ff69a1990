"""``nvidia.gdn_sm90``: ATREX's own chunked Gated-DeltaNet forward (Triton and Gluon, chunk 64) for SM90.

Registered by :mod:`atrex_nvidia._plugin` (priority 100, archs ``nvidia/sm90``) and tested by
``op_test/nvidia/chunk_gdn/test_chunk_gdn_sm90.py``; which kernels a call runs is ``plan.plan_call``'s rule.

The domain is the data below; ``check`` is host-only (shapes, dtypes, strides, flags:
no launch, no allocation, no ``.item()``); the core has already checked devices, shapes and GVA.
Graph policy: capture-safe after prewarm. The launcher never reads ``cu_seqlens`` on the host (the
varlen chunk bookkeeping is a device prefix sum sized from ``T`` and ``N`` only, at most
``T // 64 + N`` chunk slots), so a captured graph replays correctly with new ``cu_seqlens``
contents of the same shape. A call whose Triton specialisation has not run in this process raises
:class:`atrex.errors.AtrexCaptureError` under capture before any launch (``atrex.prewarm`` or one
eager call with the same shapes, dtypes and flags warms it).

fla 0.6's forward options: fp32 q/k/v run the generic Triton pair with tf32x3 dots (about fp32's accuracy, at
the generic kernels' speed); ``use_gate_in_kernel`` runs fla's gate ``-e^A_log softplus(g + dt_bias)`` in the
gates kernel, on the device (no host sync), before any kernel reads g; the beta sigmoid (and ``allow_neg_eigval``)
is applied where beta is loaded; ``chunk_size`` 16 / 32 / 64 is accepted and ignored (the kernels compute with 64,
and the result does not depend on it).
"""

import functools

import torch

ARCHS = ("sm90",)
QKV_DTYPES = (torch.bfloat16, torch.float16, torch.float32)  # fp32: the generic pair with tf32x3 dots
GATE_DTYPES = (torch.float32, torch.bfloat16, torch.float16)
STATE_DTYPES = (torch.float32, torch.bfloat16, torch.float16)
CU_SEQLENS_DTYPES = (torch.int32, torch.int64)
MAX_HEAD_K_DIM = 256
MAX_HEAD_V_DIM = 256
MAX_HEAD_K_DIM_FP32 = 128  # fp32 q/k/v: the generic intra kernel's tiles at K = 256 need 256 KiB of shared memory
SUPPORTS_BETA_SIGMOID = True
SUPPORTS_NEG_EIGVAL = True
SUPPORTS_GATE_IN_KERNEL = True  # in the gates kernel (triton_seq.atrex_sm90_gdn_gates)


def _eligibility():
    from atrex.eligibility import Eligibility, Reason
    return Eligibility, Reason


def _dt(dts):
    return "{" + ", ".join(str(d).replace("torch.", "") for d in dts) + "}"


def check(call):
    """Eligibility of a normalized call record for this implementation (host-only)."""
    Eligibility, Reason = _eligibility()
    reasons = []

    def no(code, arg, got, supported):
        reasons.append(Reason(code, arg, got, supported))

    target = call.target
    if getattr(target, "family", None) != "nvidia" or getattr(target, "arch", None) not in ARCHS:
        no("target", "q", f"{getattr(target, 'family', None)}/{getattr(target, 'arch', None)}",
           "nvidia/" + "|".join(ARCHS))
    if call.dtype not in QKV_DTYPES:
        no("dtype", "q", call.dtype, _dt(QKV_DTYPES))
    for name in ("k", "v"):
        t = getattr(call, name)
        if t.dtype != call.q.dtype:
            no("dtype", name, t.dtype, f"same dtype as q ({call.q.dtype})")
    for name in ("g", "beta"):
        t = getattr(call, name)
        if t.dtype not in GATE_DTYPES:
            no("dtype", name, t.dtype, _dt(GATE_DTYPES))
    for name in ("q", "k", "v", "g", "beta"):
        t = getattr(call, name)
        if not t.is_contiguous():
            no("layout", name, f"strides {tuple(t.stride())}", "contiguous")
    if call.head_k_dim > MAX_HEAD_K_DIM or call.head_k_dim < 1:
        no("head_dim", "k", call.head_k_dim, f"1..{MAX_HEAD_K_DIM}")
    elif call.dtype == torch.float32 and call.head_k_dim > MAX_HEAD_K_DIM_FP32:
        no("head_dim", "k", call.head_k_dim, f"1..{MAX_HEAD_K_DIM_FP32} with float32 q/k/v")
    if call.head_v_dim > MAX_HEAD_V_DIM or call.head_v_dim < 1:
        no("head_dim", "v", call.head_v_dim, f"1..{MAX_HEAD_V_DIM}")
    if call.num_heads < 1 or call.num_v_heads % call.num_heads != 0:
        no("heads", "v", f"HV={call.num_v_heads}, H={call.num_heads}", "HV % H == 0")
    st = call.initial_state
    if st is not None:
        if st.dtype not in STATE_DTYPES:
            no("dtype", "initial_state", st.dtype, _dt(STATE_DTYPES))
    cu = call.cu_seqlens
    if cu is not None:
        if cu.dtype not in CU_SEQLENS_DTYPES:
            no("dtype", "cu_seqlens", cu.dtype, _dt(CU_SEQLENS_DTYPES))
        if call.batch != 1:
            no("batch", "cu_seqlens", f"B={call.batch}", "B == 1 with cu_seqlens")
        if not cu.is_contiguous():
            no("layout", "cu_seqlens", f"strides {tuple(cu.stride())}", "contiguous")
    if call.use_beta_sigmoid_in_kernel and not SUPPORTS_BETA_SIGMOID:
        no("option", "use_beta_sigmoid_in_kernel", True, "False")
    if call.allow_neg_eigval and not (SUPPORTS_NEG_EIGVAL and call.use_beta_sigmoid_in_kernel):
        no("option", "allow_neg_eigval", True, "only with use_beta_sigmoid_in_kernel=True")
    if getattr(call, "use_gate_in_kernel", False):
        if not SUPPORTS_GATE_IN_KERNEL:
            no("option", "use_gate_in_kernel", True, "False")
        for name in ("A_log", "dt_bias"):
            t = getattr(call, name)
            if t is not None and t.dtype not in GATE_DTYPES:
                no("dtype", name, t.dtype, _dt(GATE_DTYPES))
            if t is not None and not t.is_contiguous():
                no("layout", name, f"strides {tuple(t.stride())}", "contiguous")
    # chunk_size (16, 32 or 64, core-validated) needs no rule: the kernels compute with 64, the result is the same.
    # call.capturing needs no exclusion: no host sync; unwarmed specialisations raise in the launcher.
    return Eligibility.no(*reasons) if reasons else Eligibility.yes()


def bind(call):
    """``run``'s runner for ``call``'s memo class and per-call key (``atrex.plugin.ImplSpec.bind``): the class's
    template, once ``run`` kept it, launched straight from its generated launch."""
    return _launcher().runner(run)


def run(call):
    """Runs an eligible call; returns ``(o, final_state_or_None)``."""
    launch = _launcher()
    done = launch.run_template(call)  # (a repeated call of a memo-served class: its kept template)
    if done is not None:
        return done
    return launch.gdn_fwd(
        call.q, call.k, call.v, call.g, call.beta,
        scale=call.scale,
        initial_state=call.initial_state,
        output_final_state=call.output_final_state,
        use_qk_l2norm_in_kernel=call.use_qk_l2norm_in_kernel,
        state_v_first=call.state_v_first,
        cu_seqlens=call.cu_seqlens,
        use_beta_sigmoid_in_kernel=call.use_beta_sigmoid_in_kernel,
        allow_neg_eigval=call.allow_neg_eigval,
        use_gate_in_kernel=call.use_gate_in_kernel,
        A_log=call.A_log,
        dt_bias=call.dt_bias,
        sm_count=call.target.sm_count or None,
        cls=getattr(call, "cls", None),
    )


@functools.cache
def _launcher():
    from . import launch

    return launch


def prewarm(call):
    """Compiles the Triton specialisations this call needs (one eager run, outside capture)."""
    if call.capturing:
        from atrex.errors import AtrexCaptureError
        raise AtrexCaptureError("nvidia.gdn_sm90: prewarm during CUDA-graph capture; prewarm before capturing")
    run(call)
    if call.q.is_cuda:
        torch.cuda.synchronize(call.q.device)
