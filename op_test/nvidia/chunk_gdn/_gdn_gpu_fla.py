"""GPU test bodies for fla 0.6's forward options of ``chunk_gated_delta_rule`` on ``nvidia.gdn_sm90``'s launcher,
imported by the target tests (SM90; the launcher-level ones also by SM103 / SM120, where the default plan runs the
Triton paths).

The cases mirror fla's own forward tests (``tests/ops/test_gated_delta.py``): ``test_chunk_gate_in_kernel``,
``..._gqa`` and ``..._varlen`` (fp16, fla's input distributions, its shapes, scales and dt_bias choices; fla's
tolerance 0.005), and its fp32 cases (``test_fused_recurrent``'s shapes; fla's fp32 tolerance 0.002) run through the
chunked kernels. Every result is compared with the float64 recurrence (``_gdn_cases.ref_recurrence``, the gate
transform in float64) by relative RMSE, and, as fla's gate tests do, with the same kernels run on the gate computed
outside (fla's ``naive_gdn_gate``: fp32 torch).
"""

import pytest
import torch
import torch.nn.functional as F
from _gdn_cases import RRMSE_BOUND, RRMSE_BOUND_FP32, call, make_inputs, oracle, report, rrmse

# fla test_chunk_gate_in_kernel: (B, T, H, D, scale, has_dt_bias, use_qk_l2norm_in_kernel), fp16
GATE = [(2, 75, 4, 64, 1, True, True), (2, 500, 3, 60, 1, False, False), (2, 1000, 3, 64, 0.1, True, False),
        (3, 1024, 4, 100, 1, True, True), (4, 1024, 4, 128, 0.1, False, True), (4, 2048, 8, 64, 0.1, True, False)]
# fla test_chunk_gate_in_kernel_gqa: (B, T, Hq, H, D, scale, has_dt_bias), fp16, in-kernel L2 norm
GATE_GQA = [(2, 256, 2, 4, 64, 1, True), (2, 512, 1, 4, 64, 0.1, False), (2, 512, 2, 8, 64, 1, True),
            (2, 1024, 4, 8, 128, 0.1, True)]
# fla test_chunk_gate_in_kernel_varlen: (H, D, has_dt_bias, cu_seqlens), fp16, in-kernel L2 norm, random h0
GATE_VARLEN = [(4, 60, True, [0, 15]), (4, 64, False, [0, 256, 500, 1000]), (4, 64, True, [0, 256, 500, 1000]),
               (4, 100, True, [0, 15, 100, 300, 1200, 2000])]
# fla test_fused_recurrent's fp32 cases: (B, T, H, HV, D, scale, gate_logit_normalizer), random h0, in-kernel L2
FP32 = [(1, 63, 1, 1, 64, 1, 1), (2, 500, 4, 4, 60, 1, 1), (2, 1000, 2, 8, 128, 1, 0.1), (3, 1024, 2, 2, 128, 0.1, 1),
        (4, 1024, 3, 3, 128, 1, 10), (4, 2048, 4, 4, 64, 0.1, 1)]
# fla test_chunk's shapes in fp32: (B, T, H, D, scale, gate_logit_normalizer, mask_p, use_qk_l2norm_in_kernel)
FP32_CHUNK = [(2, 75, 4, 64, 1, 0.01, 0, False), (2, 1000, 3, 64, 0.1, 1, 0.5, False),
              (3, 1024, 4, 100, 1, 0.1, 0, False), (4, 1024, 4, 128, 0.1, 1, 0, True)]


def fla_inputs(*, B=1, T, H, HV=None, D, dtype=torch.float16, dist="rand", l2norm=True, gate=None, h0=None,
               cu=None, scale=None, gate_norm=1.0, mask_p=0.0, beta_logits=False, seed=42):
    """Inputs drawn as fla's tests draw them, as a ``call`` dict (``_gdn_cases`` format). ``dist``: q, k, v from
    ``rand`` (uniform [0, 1)) or ``randn``; without the in-kernel L2 norm q and k are normalised here (fp32, then
    the input dtype), as fla's tests pass ``F.normalize(q)``. ``gate`` (``"bias"`` / ``"nobias"``): g raw ``randn``,
    ``A_log`` and ``dt_bias`` ``randn(HV)`` fp32; otherwise ``g = logsigmoid(rand) / gate_norm``, zeroed with
    probability ``mask_p``. beta ``sigmoid(rand)`` fp32, or raw logits (``randn``) with ``beta_logits``. ``h0``:
    None (zeros) or ``"randn"`` fp32."""
    HV = HV or H
    gen = torch.Generator().manual_seed(seed)
    draw = (lambda *s: torch.rand(*s, generator=gen)) if dist == "rand" else (lambda *s: torch.randn(*s, generator=gen))
    q, k, v = draw(B, T, H, D), draw(B, T, H, D), draw(B, T, HV, D)
    if not l2norm:
        q, k = F.normalize(q, p=2, dim=-1), F.normalize(k, p=2, dim=-1)
    beta = torch.randn(B, T, HV, generator=gen) if beta_logits else torch.rand(B, T, HV, generator=gen).sigmoid()
    x = dict(use_gate_in_kernel=False, A_log=None, dt_bias=None)
    if gate is None:
        g = F.logsigmoid(torch.rand(B, T, HV, generator=gen)) / gate_norm
        g = g * (torch.rand(g.shape, generator=gen) > mask_p)
    else:
        g = torch.randn(B, T, HV, generator=gen)
        x.update(use_gate_in_kernel=True, A_log=torch.randn(HV, generator=gen).cuda(),
                 dt_bias=torch.randn(HV, generator=gen).cuda() if gate == "bias" else None)
    n = B if cu is None else len(cu) - 1
    init = None if h0 is None else torch.randn(n, HV, D, D, generator=gen).cuda()
    x.update(q=q.to(dtype).cuda(), k=k.to(dtype).cuda(), v=v.to(dtype).cuda(), g=g.cuda(), beta=beta.cuda(),
             scale=D ** -0.5 if scale is None else float(scale), initial_state=init, state_v_first=False,
             use_qk_l2norm_in_kernel=l2norm,
             cu_seqlens=None if cu is None else torch.tensor(cu, dtype=torch.int64, device="cuda"))
    return x


def _beta_extra(beta_logits):
    return dict(use_beta_sigmoid_in_kernel=True, allow_neg_eigval=True) if beta_logits else {}


def check_against_oracle(label, x, bound, record_property=None, extra=None, **call_kw):
    """Runs the default plan (or ``call_kw``'s plan) with the final state, checks shapes, finiteness and untouched
    inputs, reports the rrmse against the float64 recurrence; returns (o, final state)."""
    snap = {n: t.clone() for n, t in x.items() if isinstance(t, torch.Tensor)}
    o, ht = call(x, extra, **call_kw)
    assert all(torch.equal(t, x[n]) for n, t in snap.items()), label
    assert o.dtype == x["q"].dtype and torch.isfinite(o.float()).all() and torch.isfinite(ht).all(), label
    ro, rh = oracle(x, extra)
    report(label, rrmse(ro, o), rrmse(rh, ht), bound, record_property)
    return o, ht


def check_against_outside_gate(label, x, o, ht, extra=None):
    """fla's gate tests: the fused gate against the same kernels on ``-exp(A_log) * softplus(g + dt_bias)`` computed
    in fp32 torch beforehand (fla's ``naive_gdn_gate``), within fla's 0.005."""
    g = -x["A_log"].float().exp() * F.softplus(x["g"].float() + (0.0 if x["dt_bias"] is None else x["dt_bias"]))
    o2, h2 = call(dict(x, g=g, use_gate_in_kernel=False, A_log=None, dt_bias=None), extra)
    report(f"{label} vs outside gate", rrmse(o2, o), rrmse(h2, ht), RRMSE_BOUND)


@pytest.mark.parametrize("B,T,H,D,scale,has_dt_bias,l2norm", GATE, ids=[
    "B{}-T{}-H{}-D{}-scale{}-dt_bias{}-l2{}".format(*c) for c in GATE])
@pytest.mark.parametrize("beta_logits", [False, True], ids=["beta", "beta_sigmoid_neg_eig"])
def test_fla_gate_in_kernel(B, T, H, D, scale, has_dt_bias, l2norm, beta_logits, record_property):
    x = fla_inputs(B=B, T=T, H=H, D=D, scale=scale, l2norm=l2norm, gate="bias" if has_dt_bias else "nobias",
                   beta_logits=beta_logits)
    extra = _beta_extra(beta_logits)
    o, ht = check_against_oracle(f"fla gate B{B} T{T} H{H} D{D}", x, RRMSE_BOUND, record_property, extra)
    check_against_outside_gate(f"fla gate B{B} T{T} H{H} D{D}", x, o, ht, extra)


@pytest.mark.parametrize("B,T,Hq,H,D,scale,has_dt_bias", GATE_GQA, ids=[
    "B{}-T{}-Hq{}-H{}-D{}-scale{}-dt_bias{}".format(*c) for c in GATE_GQA])
def test_fla_gate_in_kernel_gqa(B, T, Hq, H, D, scale, has_dt_bias, record_property):
    x = fla_inputs(B=B, T=T, H=Hq, HV=H, D=D, scale=scale, gate="bias" if has_dt_bias else "nobias")
    o, ht = check_against_oracle(f"fla gate gqa B{B} T{T} {Hq}/{H} D{D}", x, RRMSE_BOUND, record_property)
    check_against_outside_gate(f"fla gate gqa B{B} T{T}", x, o, ht)


@pytest.mark.parametrize("H,D,has_dt_bias,cu", GATE_VARLEN, ids=[
    "H{}-D{}-dt_bias{}-cu{}".format(*c) for c in GATE_VARLEN])
def test_fla_gate_in_kernel_varlen(H, D, has_dt_bias, cu, record_property):
    x = fla_inputs(T=cu[-1], H=H, D=D, dist="randn", gate="bias" if has_dt_bias else "nobias", h0="randn", cu=cu)
    o, ht = check_against_oracle(f"fla gate varlen H{H} D{D} cu{cu}", x, RRMSE_BOUND, record_property)
    check_against_outside_gate(f"fla gate varlen H{H} D{D}", x, o, ht)


@pytest.mark.parametrize("B,T,H,HV,D,scale,gate_norm", FP32, ids=[
    "B{}-T{}-H{}-HV{}-D{}-scale{}-gate_norm{}".format(*c) for c in FP32])
def test_fla_fp32(B, T, H, HV, D, scale, gate_norm, record_property):
    """fp32 q/k/v (the generic pair, tf32x3 dots) on fla's fp32 cases, within fla's fp32 tolerance."""
    x = fla_inputs(B=B, T=T, H=H, HV=HV, D=D, dtype=torch.float32, dist="randn", scale=scale, gate_norm=gate_norm,
                   h0="randn")
    plan, _ = call(x, plan_only=True)
    assert (plan.intra, plan.state) == ("generic", "generic"), plan
    check_against_oracle(f"fla fp32 B{B} T{T} {H}/{HV} D{D}", x, RRMSE_BOUND_FP32, record_property)


@pytest.mark.parametrize("B,T,H,D,scale,gate_norm,mask_p,l2norm", FP32_CHUNK, ids=[
    "B{}-T{}-H{}-D{}-scale{}-gate_norm{}-mask{}-l2{}".format(*c) for c in FP32_CHUNK])
def test_fla_chunk_shapes_fp32(B, T, H, D, scale, gate_norm, mask_p, l2norm, record_property):
    """fla's test_chunk shapes and draws (rand q / k / v, masked g) with fp32 inputs, plus the gate and the beta
    sigmoid on the same shapes."""
    x = fla_inputs(B=B, T=T, H=H, D=D, dtype=torch.float32, scale=scale, gate_norm=gate_norm, mask_p=mask_p,
                   l2norm=l2norm)
    check_against_oracle(f"fla chunk fp32 B{B} T{T} H{H} D{D}", x, RRMSE_BOUND_FP32, record_property)
    x = fla_inputs(B=B, T=T, H=H, D=D, dtype=torch.float32, scale=scale, l2norm=l2norm, gate="bias",
                   beta_logits=True)
    check_against_oracle(f"fla chunk fp32 gate B{B} T{T} H{H} D{D}", x, RRMSE_BOUND_FP32, extra=_beta_extra(True))


def test_gate_graph_capture_replays_new_gate_values():
    """The gate runs on the device: a call captured once replays with new g, A_log and dt_bias contents (same
    shapes) equal to eager bit for bit, for both gates launches (transform-only, and the varlen full form)."""
    for kw in (dict(B=2, T=300, H=2, HV=4, K=64, h0=torch.float32, gate="bias"),
               dict(T=300, H=4, HV=4, K=128, cu_seqlens=[0, 1, 100, 300], gate="nobias")):
        x = make_inputs(device="cuda", **kw)
        call(x)  # compile outside capture
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            og, hg = call(x)
        for seed in (1, 2):
            y = make_inputs(device="cuda", seed=seed, **kw)
            for n in ("g", "A_log", "dt_bias", "q", "beta"):
                if x[n] is not None:
                    x[n].copy_(y[n])
            graph.replay()
            torch.cuda.synchronize()
            oe, he = call(x)
            assert torch.equal(og, oe) and torch.equal(hg, he), (kw, seed)
            ro, rh = oracle(x)
            report(f"gate graph replay seed {seed}", rrmse(ro, og), rrmse(rh, hg), RRMSE_BOUND)


# ---- the public operator (SM90: the dispatch picks nvidia.gdn_sm90) ----


def _api_kwargs(x, **extra):
    return dict(q=x["q"], k=x["k"], v=x["v"], g=x["g"], beta=x["beta"], scale=x["scale"],
                initial_state=x["initial_state"], output_final_state=True,
                use_qk_l2norm_in_kernel=x["use_qk_l2norm_in_kernel"], state_v_first=x["state_v_first"],
                cu_seqlens=x["cu_seqlens"], use_gate_in_kernel=x["use_gate_in_kernel"], A_log=x["A_log"],
                dt_bias=x["dt_bias"], **extra)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32])
def test_operator_takes_fla_options_on_gdn_sm90(dtype):
    """``atrex.chunk_gated_delta_rule`` with fla's options (gate with dt_bias, beta sigmoid with negative
    eigenvalues, each chunk_size) dispatches to nvidia.gdn_sm90 and returns the launcher's bits for every
    chunk_size (the kernels compute with 64)."""
    import atrex
    from atrex.api.chunk_gdn import explain_chunk_gated_delta_rule
    x = fla_inputs(T=300, H=2, HV=4, D=128, dtype=dtype, dist="randn", gate="bias", h0="randn", cu=[0, 1, 100, 300],
                   beta_logits=True)
    extra = _beta_extra(True)
    o0, h0 = call(x, extra)
    for cs in (16, 32, 64):
        kw = _api_kwargs(x, chunk_size=cs, **extra)
        assert explain_chunk_gated_delta_rule(**kw).chosen == "nvidia.gdn_sm90"
        assert atrex.can_use_chunk_gated_delta_rule(**kw)
        o, ht = atrex.chunk_gated_delta_rule(**kw)
        assert torch.equal(o, o0) and torch.equal(ht, h0), cs
    ro, rh = oracle(x, extra)
    report(f"operator fla options {dtype}", rrmse(ro, o0), rrmse(rh, h0),
           RRMSE_BOUND_FP32 if dtype == torch.float32 else RRMSE_BOUND)


def test_operator_gate_prewarm_then_capture():
    """An unwarmed gate call (new constexprs GATE_IN_KERNEL / HAS_DT_BIAS) raises under capture before any launch;
    after atrex.prewarm it captures, and replay equals eager bit for bit."""
    import atrex
    from atrex.errors import AtrexCaptureError
    # K = 48, V = 80, H = 3, HV = 6 with the gate: a specialisation no other test launches
    x = make_inputs(device="cuda", T=211, H=3, HV=6, K=48, V=80, cu_seqlens=[0, 5, 211], h0=torch.float32,
                    gate="bias")
    kw = _api_kwargs(x)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with pytest.raises(AtrexCaptureError, match="prewarm"), torch.cuda.graph(g):
        atrex.chunk_gated_delta_rule(**kw)
    torch.cuda.synchronize()
    assert atrex.prewarm("chunk_gated_delta_rule", [kw]) == [("nvidia.gdn_sm90", "compiled")]
    g2 = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g2):
        o_g, ht_g = atrex.chunk_gated_delta_rule(**kw)
    g2.replay()
    torch.cuda.synchronize()
    o_e, ht_e = atrex.chunk_gated_delta_rule(**kw)
    assert torch.equal(o_g, o_e) and torch.equal(ht_g, ht_e)
    ro, rh = oracle(x)
    report("gate prewarm capture", rrmse(ro, o_g), rrmse(rh, ht_g), RRMSE_BOUND)
