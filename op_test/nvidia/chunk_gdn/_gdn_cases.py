"""Shared cases, plans and the float64 oracle of the chunked Gated-DeltaNet tests (``nvidia.gdn_sm90``).

The oracle is an independent float64 token-by-token recurrence (no chunking, no kernel code). Metric: relative RMSE
``||ref - x||_2 / ||ref||_2``, passing outright when the max abs error is <= 1e-6. Every kernel result of these
tests is compared with it; ``report`` prints and records the measured value beside its bound.

Paths are chosen by passing a ``GdnPlan`` (``plan_for``), never by changing launcher state.
"""

import dataclasses

import pytest
import torch

RRMSE_BOUND = 5e-3  # fla's bar for its chunked kernels, for every 16-bit case
RRMSE_BOUND_FP32 = 2e-3  # fp32 q/k/v: fla's fp32 tolerance (its fused_recurrent fp32 cases)

STATE_PATHS = ("ws", "rc", "rc2", "tma", "triton", "generic")  # "generic" runs the generic intra kernel too


def ref_recurrence(q, k, v, g, beta, *, scale, initial_state=None, state_v_first=False,
                   use_qk_l2norm_in_kernel=False, cu_seqlens=None, use_beta_sigmoid_in_kernel=False,
                   allow_neg_eigval=False, use_gate_in_kernel=False, A_log=None, dt_bias=None):
    """float64 recurrence. Returns (o [B,T,HV,V] fp64, final_state fp64 in the requested layout). With
    ``use_gate_in_kernel`` g is fla's raw gate input: ``g <- -e^A_log softplus(g + dt_bias)``, in float64."""
    dev = q.device
    if use_qk_l2norm_in_kernel:
        # normalise in fp32, round back to the input dtype (the operator's definition)
        def _n(x):
            xf = x.float()
            return (xf * torch.rsqrt((xf * xf).sum(-1, keepdim=True) + 1e-6)).to(x.dtype)
        q, k = _n(q), _n(k)
    q, k, v, g = q.double(), k.double(), v.double(), g.double()
    beta = beta.double()
    if use_gate_in_kernel:
        x = g + (0.0 if dt_bias is None else dt_bias.double().to(dev))
        g = -torch.exp(A_log.double().to(dev)) * (x.clamp_min(0) + torch.log1p(torch.exp(-x.abs())))
    if use_beta_sigmoid_in_kernel:
        beta = torch.sigmoid(beta) * (2.0 if allow_neg_eigval else 1.0)
    B, T, H, K = q.shape
    HV, V = v.shape[2], v.shape[3]
    G = HV // H
    if cu_seqlens is None:
        segs = [(b, 0, T) for b in range(B)]
    else:
        c = [int(x) for x in cu_seqlens.cpu().tolist()]
        segs = [(0, c[i], c[i + 1]) for i in range(len(c) - 1)]
    o = torch.zeros(B, T, HV, V, dtype=torch.float64, device=dev)
    finals = []
    for n, (b, s, e) in enumerate(segs):
        if initial_state is None:
            S = torch.zeros(HV, K, V, dtype=torch.float64, device=dev)
        else:
            S = initial_state[n].double().clone()
            if state_v_first:
                S = S.transpose(-1, -2).contiguous()
        for t in range(s, e):
            kt = k[b, t].repeat_interleave(G, 0)
            qt = q[b, t].repeat_interleave(G, 0)
            S = S * torch.exp(g[b, t])[:, None, None]
            u = beta[b, t][:, None] * (v[b, t] - torch.einsum("hkv,hk->hv", S, kt))
            S = S + kt[:, :, None] * u[:, None, :]
            o[b, t] = scale * torch.einsum("hkv,hk->hv", S, qt)
        finals.append(S.transpose(-1, -2) if state_v_first else S)
    ht = torch.stack(finals) if finals else torch.zeros(0, HV, *((V, K) if state_v_first else (K, V)),
                                                        dtype=torch.float64, device=dev)
    return o, ht


def rrmse(ref, x):
    ref = ref.double()
    x = x.double().to(ref.device)
    if ref.numel() == 0:
        return 0.0
    if (ref - x).abs().max().item() <= 1e-6:
        return 0.0
    return ((ref - x).norm() / ref.norm().clamp_min(1e-30)).item()


def make_inputs(*, B=1, T=64, H=2, HV=None, K=64, V=None, dtype=torch.bfloat16, cu_seqlens=None,
                h0=None, state_v_first=False, g_mode="logsigmoid", g_dtype=torch.float32,
                beta_dtype=None, l2norm=True, device="cpu", seed=0, cu_dtype=torch.int32, gate=None):
    """Random inputs; g is a negative log decay (``logsigmoid``, ``zero``, ``tiny`` or ``strong`` = -20).

    Without in-kernel L2 norm, q and k are normalised here (unnormalised k makes the recurrence
    itself unstable, as in fla's tests). ``gate`` (``"bias"`` / ``"nobias"``): fla's in-kernel gate as its tests
    draw it, g the raw input ``randn``, ``A_log`` and ``dt_bias`` ``randn(HV)`` fp32 (the call's keys
    ``use_gate_in_kernel``, ``A_log``, ``dt_bias``).
    """
    HV = HV or H
    V = V or K
    gen = torch.Generator(device="cpu").manual_seed(seed)

    def rn(*s):
        return torch.randn(*s, generator=gen)

    q = rn(B, T, H, K)
    k = rn(B, T, H, K)
    if not l2norm:
        q = torch.nn.functional.normalize(q, dim=-1)
        k = torch.nn.functional.normalize(k, dim=-1)
    v = rn(B, T, HV, V)
    if g_mode == "logsigmoid":
        g = torch.nn.functional.logsigmoid(rn(B, T, HV))
    elif g_mode == "zero":
        g = torch.zeros(B, T, HV)
    elif g_mode == "tiny":
        g = -1e-4 * torch.rand(B, T, HV, generator=gen)
    elif g_mode == "strong":
        g = torch.full((B, T, HV), -20.0)
    else:
        raise ValueError(g_mode)
    beta = torch.sigmoid(rn(B, T, HV))
    N = B if cu_seqlens is None else len(cu_seqlens) - 1
    init = None
    if h0 is not None:
        shape = (N, HV, V, K) if state_v_first else (N, HV, K, V)
        init = rn(*shape).to(h0).to(device)
    gate_kw = dict(use_gate_in_kernel=False, A_log=None, dt_bias=None)
    if gate is not None:
        g = rn(B, T, HV)
        gate_kw = dict(use_gate_in_kernel=True, A_log=rn(HV).to(device),
                       dt_bias=rn(HV).to(device) if gate == "bias" else None)
    return dict(
        q=q.to(dtype).to(device), k=k.to(dtype).to(device), v=v.to(dtype).to(device),
        g=g.to(g_dtype).to(device), beta=beta.to(beta_dtype or dtype).to(device),
        scale=K ** -0.5, initial_state=init, state_v_first=state_v_first,
        use_qk_l2norm_in_kernel=l2norm,
        cu_seqlens=None if cu_seqlens is None else torch.tensor(cu_seqlens, dtype=cu_dtype, device=device),
        **gate_kw,
    )


# (id, make_inputs kwargs). Small enough for the CPU interpreter; the GPU tests add the big ones.
SMALL_CASES = [
    ("T1", dict(T=1, H=2, K=32)),
    ("T63", dict(T=63, H=2, K=32, h0=torch.float32)),
    ("T64", dict(T=64, H=1, HV=2, K=32, V=16, h0=torch.float32, state_v_first=True)),
    ("T65_noL2", dict(T=65, H=2, K=32, l2norm=False)),
    ("T130_B2_gva_bf16h0", dict(B=2, T=130, H=1, HV=2, K=64, V=32, h0=torch.bfloat16)),
    ("varlen_0_1", dict(T=200, H=2, HV=4, K=32, cu_seqlens=[0, 0, 1, 64, 64, 130, 200],
                        h0=torch.float32, state_v_first=True)),
    ("varlen_i64_noh0", dict(T=70, H=1, K=32, cu_seqlens=[0, 1, 70], cu_dtype=torch.int64)),
    ("K60_V100_fp16", dict(T=80, H=1, HV=1, K=60, V=100, dtype=torch.float16, g_dtype=torch.float16,
                           h0=torch.float32)),
    ("g_zero", dict(T=130, H=1, K=32, g_mode="zero", h0=torch.float32)),
    ("g_strong", dict(T=100, H=1, K=32, g_mode="strong", h0=torch.float32)),
    # fp16 in the per-head domain (K, V multiples of 16): GVA with two batch rows, then varlen without L2 norm
    # (bf16 merges + Newton step), fp16 g, both initial-state layouts
    ("T130_B2_gva_fp16", dict(B=2, T=130, H=1, HV=2, K=64, V=32, dtype=torch.float16, h0=torch.float32)),
    ("varlen_fp16_noL2_vfirst", dict(T=200, H=2, HV=4, K=32, cu_seqlens=[0, 1, 65, 129, 200], dtype=torch.float16,
                                     g_dtype=torch.float16, l2norm=False, h0=torch.float32, state_v_first=True)),
    # fla 0.6's options: the in-kernel gate on two value heads per intra program (the transform-only gates launch),
    # on one (the gates kernel's full form, with the beta sigmoid), fp32 q/k/v (the generic pair, tf32x3 dots)
    ("gate_T70_gva", dict(T=70, H=1, HV=2, K=32, h0=torch.float32, gate="bias")),
    ("beta_sigmoid_gate_varlen_g3", dict(T=150, H=1, HV=3, K=32, cu_seqlens=[0, 1, 64, 150], gate="nobias")),
    ("fp32_T70_gva", dict(T=70, H=1, HV=2, K=32, dtype=torch.float32, h0=torch.float32)),
    ("fp32_varlen_K48_gate_noL2", dict(T=100, H=2, HV=2, K=48, V=24, dtype=torch.float32, cu_seqlens=[0, 30, 100],
                                       gate="bias", l2norm=False, h0=torch.float32, state_v_first=True)),
]

GPU_CASES = SMALL_CASES + [
    ("qwen3next_T4224_vfirst", dict(T=4224, H=16, HV=32, K=128, h0=torch.float32, state_v_first=True)),
    ("qwen3next_T1000_bf16h0", dict(T=1000, H=16, HV=32, K=128, h0=torch.bfloat16)),
    ("qwen_varlen_mixed", dict(T=3000, H=4, HV=8, K=128, cu_seqlens=[0, 1, 1, 65, 1000, 1063, 2999, 3000],
                               h0=torch.float32, state_v_first=True)),
    ("hv48_T127", dict(T=127, H=16, HV=48, K=128, h0=torch.float32)),
    ("hv64_T128_noL2", dict(T=128, H=16, HV=64, K=128, l2norm=False)),
    ("fla_D100_fp16", dict(B=2, T=300, H=2, HV=4, K=100, dtype=torch.float16, h0=torch.float32)),
    # K = 256, the top of the check domain (the generic pair)
    ("K256_bf16", dict(T=130, H=1, HV=2, K=256, V=64, h0=torch.float32)),
    ("K256_varlen", dict(T=200, H=2, HV=2, K=256, V=128, cu_seqlens=[0, 1, 129, 200])),
    ("g_tiny_long", dict(T=2048, H=2, HV=4, K=128, g_mode="tiny", h0=torch.float32)),
    ("beta_sigmoid_neg", dict(T=200, H=2, HV=4, K=64, h0=torch.float32)),
    # fp16 at the Qwen3-Next head shapes
    ("qwen3next_T1000_fp16", dict(T=1000, H=16, HV=32, K=128, dtype=torch.float16, h0=torch.float32)),
    ("qwen_varlen_fp16_vfirst", dict(T=3000, H=4, HV=8, K=128, cu_seqlens=[0, 1, 65, 1000, 1063, 2999, 3000],
                                     dtype=torch.float16, h0=torch.float32, state_v_first=True)),
    # K = 64 with V = 128 (rc2's domain at K = 64), strong decay
    ("K64_V128_strong_h0", dict(T=200, H=2, HV=4, K=64, V=128, g_mode="strong", h0=torch.float32)),
    # varlen with int64 offsets, GVA, 40 sequences; one-head intra programs (the gates kernel) with 1-/64-/65-token
    # sequences
    ("K128_varlen_i64_gva", dict(T=40 * 70, H=2, HV=8, K=128, cu_seqlens=[70 * i for i in range(41)],
                                 cu_dtype=torch.int64)),
    ("varlen_g1", dict(T=1100, H=4, HV=4, K=128, cu_seqlens=[0, 1, 64, 65, 1000, 1100], h0=torch.float32)),
    # 64 one-token rows (B*T = 64: the TMA state kernels apply)
    ("B64_T1_h0", dict(B=64, T=1, H=2, HV=4, K=128, h0=torch.float32)),
    # the in-kernel gate where every state path applies (K = V = 64), and at the Qwen3-Next shapes (rc2 with its PDL
    # chain, varlen with one-head programs: the gates kernel's full form); fp32 at K = 128 and with K, V off the
    # multiples of 16 (V = 200: several state column blocks)
    ("gate_B2_T130_K64", dict(B=2, T=130, H=1, HV=2, K=64, h0=torch.float32, gate="bias")),
    ("gate_qwen_varlen_vfirst", dict(T=3000, H=4, HV=8, K=128, cu_seqlens=[0, 1, 65, 1000, 1063, 2999, 3000],
                                     h0=torch.float32, state_v_first=True, gate="bias")),
    ("beta_sigmoid_gate_varlen_g1", dict(T=1100, H=4, HV=4, K=128, cu_seqlens=[0, 1, 64, 65, 1000, 1100],
                                         gate="nobias")),
    ("fp32_qwen_T1000_vfirst", dict(T=1000, H=4, HV=8, K=128, dtype=torch.float32, h0=torch.float32,
                                    state_v_first=True)),
    ("fp32_K100_V200_varlen_gate", dict(T=200, H=1, HV=2, K=100, V=200, dtype=torch.float32,
                                        cu_seqlens=[0, 1, 129, 200], gate="nobias", h0=torch.float32)),
]

# Many chunks (every mbarrier ring wraps often) and sequences of 0, 1, 64 and 65 tokens, for the persistent kernels
# also on a 3-CTA grid
RING_CASES = [
    ("ws_T8250_qwen", dict(T=8250, H=16, HV=32, K=128, h0=torch.float32)),
    ("ws_varlen_empty_odd", dict(T=1300, H=4, HV=8, K=128, cu_seqlens=[0, 0, 1, 65, 129, 193, 1300],
                                 h0=torch.bfloat16, state_v_first=True)),
    ("tp2_mixed_empty", dict(T=3000, H=8, HV=16, K=128, cu_seqlens=[0, 1, 1800, 1864, 1929, 1929, 2500, 3000],
                             h0=torch.float32, state_v_first=True)),
]

# One long prompt with few heads: the default plan cuts it into segments (the sequence-parallel state pass)
SEQ_PAR_CASES = [
    ("tp4_T8192", dict(T=8192, H=4, HV=8, K=128)),
    ("tp4_T5000_h0_vfirst", dict(T=5000, H=4, HV=8, K=128, h0=torch.float32, state_v_first=True)),
    ("tp8_T5000_fp16_bf16h0", dict(T=5000, H=2, HV=4, K=128, dtype=torch.float16, h0=torch.bfloat16)),
    ("mha_T4100_K64", dict(T=4100, H=8, HV=8, K=64, V=128, h0=torch.float32)),
    ("tp4_T4500_strong", dict(T=4500, H=4, HV=8, K=128, g_mode="strong", h0=torch.float32)),
    ("tp4_T4200_tiny", dict(T=4200, H=4, HV=8, K=128, g_mode="tiny", h0=torch.float32)),
    ("tp4_T6000_noL2", dict(T=6000, H=4, HV=8, K=128, l2norm=False, h0=torch.float32)),
]

ALL_CASES = dict(GPU_CASES + RING_CASES + SEQ_PAR_CASES)


def bound_for(kw):
    if kw.get("dtype") == torch.float32:
        return RRMSE_BOUND_FP32
    return RRMSE_BOUND


def case_inputs(case_id, kw, device):
    """(inputs, extra gdn_fwd flags) of a case; ``beta_sigmoid*`` cases pass raw beta through the in-kernel sigmoid
    with negative eigenvalues allowed."""
    x = make_inputs(device=device, **kw)
    extra = {}
    if case_id.startswith("beta_sigmoid"):
        x["beta"] = (torch.randn(x["beta"].shape, generator=torch.Generator().manual_seed(1)) * 2).to(
            x["beta"].dtype).to(device)
        extra = dict(use_beta_sigmoid_in_kernel=True, allow_neg_eigval=True)
    return x, extra


GATE_KEYS = ("use_gate_in_kernel", "A_log", "dt_bias")


def call(x, extra=None, **kw):
    """``launch.gdn_fwd`` on inputs ``x`` (``make_inputs``) with the final state; ``kw``: plan, sm_count, ..."""
    from atrex_nvidia.chunk_gdn.sm90.launch import gdn_fwd
    kw = {"output_final_state": True, **{n: x[n] for n in GATE_KEYS if n in x}, **(extra or {}), **kw}
    return gdn_fwd(x["q"], x["k"], x["v"], x["g"], x["beta"], scale=x["scale"], initial_state=x["initial_state"],
                   use_qk_l2norm_in_kernel=x["use_qk_l2norm_in_kernel"], state_v_first=x["state_v_first"],
                   cu_seqlens=x["cu_seqlens"], **kw)


def oracle(x, extra=None):
    extra = extra or {}
    return ref_recurrence(x["q"], x["k"], x["v"], x["g"], x["beta"], scale=x["scale"],
                          initial_state=x["initial_state"], state_v_first=x["state_v_first"],
                          use_qk_l2norm_in_kernel=x["use_qk_l2norm_in_kernel"], cu_seqlens=x["cu_seqlens"],
                          use_beta_sigmoid_in_kernel=extra.get("use_beta_sigmoid_in_kernel", False),
                          allow_neg_eigval=extra.get("allow_neg_eigval", False),
                          **{n: x[n] for n in GATE_KEYS if n in x})


_ORACLE = {}  # (case id, device) -> float64 results (the inputs are fixed by the case's seed)


def case_oracle(case_id, kw, device):
    key = (case_id, repr(sorted(kw.items())), str(device))
    if key not in _ORACLE:
        x, extra = case_inputs(case_id, kw, device)
        if len(_ORACLE) > 8:
            _ORACLE.clear()
        _ORACLE[key] = oracle(x, extra)
    return _ORACLE[key]


def run_case(case_id, kw, device, **call_kw):
    """Runs ``gdn_fwd`` (``call_kw``: plan, sm_count) on one case and returns (rrmse_o, rrmse_state, bound);
    checks dtypes, shapes, finiteness and that no input was modified."""
    x, extra = case_inputs(case_id, kw, device)
    snap = {n: t.clone() for n, t in x.items() if isinstance(t, torch.Tensor)}
    o, ht = call(x, extra, **call_kw)
    for n, t in snap.items():
        assert torch.equal(t, x[n]), f"{case_id}: input {n} was modified"
    ro, rh = case_oracle(case_id, kw, device)
    assert o.dtype == x["q"].dtype and o.shape == ro.shape
    assert ht.dtype == torch.float32 and ht.shape == rh.shape, (ht.shape, rh.shape)
    assert torch.isfinite(o.float()).all() and torch.isfinite(ht).all()
    return rrmse(ro, o), rrmse(rh, ht), bound_for(kw)


def report(label, eo, eh, bound, record_property=None):
    """Prints (and with pytest's ``record_property``, records) the measured rrmse against its bound; asserts it."""
    worst = max(eo, eh)
    print(f"[gdn rrmse] {label}: o {eo:.3e} state {eh:.3e} bound {bound:.1e} ({worst / bound:.0%} of the bound)")
    if record_property is not None:
        record_property("rrmse_o", eo)
        record_property("rrmse_state", eh)
        record_property("rrmse_bound", bound)
    assert eo <= bound and eh <= bound, (label, eo, eh, bound)


def shape_only(kw):
    """Contiguous tensors of a case's shapes and dtypes on the meta device (enough for planning)."""
    B, T, H, K = kw.get("B", 1), kw.get("T", 64), kw.get("H", 2), kw.get("K", 64)
    HV, V = kw.get("HV") or H, kw.get("V") or K
    dt = kw.get("dtype", torch.bfloat16)
    e = lambda *s, dtype=dt: torch.empty(*s, dtype=dtype, device="meta")
    cu = kw.get("cu_seqlens")
    return dict(q=e(B, T, H, K), k=e(B, T, H, K), v=e(B, T, HV, V), use_qk_l2norm_in_kernel=kw.get("l2norm", True),
                cu_seqlens=None if cu is None else torch.tensor(cu, dtype=kw.get("cu_dtype", torch.int32)))


def plan_for(path, x, sm_count=132):
    """The ``GdnPlan`` that runs state path ``path`` (``STATE_PATHS``) on inputs ``x``, configured as ``plan.py``
    configures that path, or None where the path does not apply to these tensors on their device."""
    from atrex_nvidia.chunk_gdn.sm90 import plan as P
    from atrex_nvidia.chunk_gdn.sm90.triton_common import GDC_SUPPORTED
    q, k, v, l2 = x["q"], x["k"], x["v"], x["use_qk_l2norm_in_kernel"]
    if x.get("cu_seqlens") is not None and x["cu_seqlens"].shape[0] == 2 and q.shape[0] == 1:
        x = dict(x, cu_seqlens=None)  # (one sequence: the fixed-length call)
    B, T, H, K = q.shape
    HV, V = v.shape[2], v.shape[3]
    BK = max(16, P.next_pow2(K))
    bv = min(32, max(16, P.next_pow2(V)))
    if path == "generic":
        return P.GdnPlan("generic", "generic", bv, 4, 2)
    if K % 16 or V % 16 or BK > P.PER_HEAD_MAX_BK or q.dtype == torch.float32:
        return None
    gs = 2 if (HV // H) % 2 == 0 else 1
    if path == "triton":
        return P.GdnPlan("per_head", "triton", bv, 4, 2, gs, split_xu=BK <= 32)
    qn, kn = (None, None) if l2 else (q, k)  # (normalised copies are fresh, describable buffers)
    if path == "tma":
        ok = bv == 32 and P.describable(qn, kn, v, B, T, H, HV, K, V, BK, 32)
        return P.GdnPlan("per_head", "tma", 32, 4, 3, gs, split_xu=BK <= 32) if ok else None
    gluon = P.is_sm90(q.device) and not P.interpreting() and P.gluon_supported() and BK in (64, 128)
    if not gluon:
        return None
    if path == "ws":
        qside = l2 and P.describable(q, q, v, B, T, H, HV, K, V, BK, 32)
        ok = bv == 32 and P.describable(q if qside or not l2 else None, kn, v, B, T, H, HV, K, V, BK, 32)
        return P.GdnPlan("per_head", "ws", 32, 4, 3, gs, qside) if ok else None
    qside = l2 and P.describable(q, q, v, B, T, H, HV, K, V, BK, 64)
    if V % 64 or not P.describable(q if qside or not l2 else None, kn, v, B, T, H, HV, K, V, BK, 64):
        return None
    out_tma = qside and T > 1
    if path == "rc":
        return P.GdnPlan("per_head", "rc", 64, 4, 3, gs, qside, None, out_tma, pdl=GDC_SUPPORTED)
    if path == "rc2" and qside and V == 128:
        return P.GdnPlan("per_head", "rc2", 64, 4, 2, gs, True, None, out_tma, pdl=GDC_SUPPORTED)
    return None


def path_cases(paths, cases):
    """(path, case id, kwargs) for every path of ``paths`` that applies to a case of ``cases`` (decided on the
    case's shapes; a test skips where the device rules a path out)."""
    return [(p, cid, kw) for cid, kw in cases for p in paths if plan_for(p, shape_only(kw)) is not None]


def without_pdl(plan):
    return dataclasses.replace(plan, pdl=False)


def python_chunk_map(cu):
    """The varlen chunk bookkeeping of offsets ``cu`` counted in Python: (chunk offsets co[0..N], the sequence of
    each live chunk slot)."""
    co, seq = [0], []
    for n in range(len(cu) - 1):
        nch = -(-(cu[n + 1] - cu[n]) // 64)
        seq += [n] * nch
        co.append(co[-1] + nch)
    return co, seq


def segment_scan_check(device="cpu", bvs=8):
    """``atrex_sm90_gdn_segment_scan`` (the sequence-parallel plan's composition) launched on its own against the
    same composition in float64: random segment results R_s and transitions M_s ``[B, NA, HV, K, V + K]`` (M near
    the identity, as a decaying segment's is), an initial state in either layout or none, with and without the final
    state, over column blocks of ``bvs``. Rows ``[rrmse of the segments' initial states, of the final state,
    bound 1e-5]``."""
    from atrex_nvidia.chunk_gdn.sm90.triton_seq import atrex_sm90_gdn_segment_scan
    rows = {}
    gen = torch.Generator().manual_seed(3)
    for tag, B, HV, K, V, nseg, h0, vfirst, final in (
            ("h0_vfirst", 2, 3, 64, 64, 4, torch.float32, True, True),
            ("h0_bf16", 1, 2, 128, 96, 5, torch.bfloat16, False, True),
            ("zero_no_final", 1, 2, 64, 128, 4, None, False, False)):
        na = nseg if final else nseg - 1
        r = torch.randn(B, na, HV, K, V + K, generator=gen) * 0.5
        r[..., V:] = 0.9 * torch.eye(K) + 0.1 * torch.randn(B, na, HV, K, K, generator=gen) / K ** 0.5
        init = None if h0 is None else torch.randn(B, HV, *((V, K) if vfirst else (K, V)), generator=gen).to(h0)
        s = (torch.zeros(B, HV, K, V, dtype=torch.float64) if init is None
             else (init.transpose(-1, -2) if vfirst else init).double())
        want = []
        for j in range(na):
            want.append(s)
            s = r[:, j, :, :, V:].double() @ s + r[:, j, :, :, :V].double()
        if not final:
            want.append(s)
        want = torch.stack(want, 1)
        hs = torch.full((B, nseg, HV, K, V), float("nan"), device=device)
        ht = torch.full((B, HV, *((V, K) if vfirst else (K, V))), float("nan"), device=device)
        h0d = init.to(device) if init is not None else hs
        h0s = ((h0d.stride(0), h0d.stride(1), h0d.stride(3), h0d.stride(2)) if vfirst and init is not None
               else (h0d.stride(0), h0d.stride(1), h0d.stride(2), h0d.stride(3)) if init is not None else (0, 0, 0, 0))
        hts = ((ht.stride(0), ht.stride(1), ht.stride(3), ht.stride(2)) if vfirst
               else (ht.stride(0), ht.stride(1), ht.stride(2), ht.stride(3)))
        atrex_sm90_gdn_segment_scan[(-(-V // bvs), B * HV)](
            r.to(device), h0d, hs, ht, nseg, na, HV, K, V, *h0s, *hts,
            BK=K, BVS=bvs, USE_H0=init is not None, STORE_HT=final, num_warps=8)
        e_hs = rrmse(want, hs.view(B, nseg, HV, K, V))
        e_ht = rrmse(s.transpose(-1, -2) if vfirst else s, ht) if final else 0.0
        rows[f"segment_scan_{tag}_{bvs}"] = [e_hs, e_ht, 1e-5]
    return rows


def fp16_guard_inputs(device):
    """One chunk with positive g (decay factors up to e^(0.3 x 63), far outside the range the fp16 UT inverse's
    merges are safe in): the intra kernel's per-tile guard must take its bf16 + Newton branch. Random keys keep the
    recurrence well-conditioned (strongly correlated keys make any bf16 computation, the generic pair's included,
    depart from float64 by ~6e-2 here)."""
    gen = torch.Generator().manual_seed(3)
    T, H, K = 64, 1, 128
    q = torch.randn(1, T, H, K, generator=gen).bfloat16()
    v = torch.randn(1, T, H, K, generator=gen).bfloat16()
    k = torch.randn(1, T, H, K, generator=gen).bfloat16()
    return dict(q=q.to(device), k=k.to(device), v=v.to(device), g=torch.full((1, T, H), 0.3, device=device),
                beta=torch.ones(1, T, H, device=device).bfloat16(), scale=K ** -0.5, initial_state=None,
                state_v_first=False, use_qk_l2norm_in_kernel=True, cu_seqlens=None)


# ---- GPU helpers ----


def device_capability():
    if not torch.cuda.is_available():
        return None
    return torch.cuda.get_device_capability(0)


def skip_unless(capability, label):
    cap = device_capability()
    if cap != capability:
        pytest.skip(f"chunk_gdn {label} target test needs a CUDA device with compute capability "
                    f"{capability} (found {cap if cap else 'no CUDA device'})", allow_module_level=True)
