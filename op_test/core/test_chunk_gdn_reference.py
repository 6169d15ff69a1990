"""The chunked GDN reference (chunk 64) against the float64 token-by-token recurrence, over generated
calls (hypothesis), plus the precision stress cases and can_use/call agreement."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import atrex
from atrex.errors import AtrexError
from atrex.inputs import gdn_inputs
from atrex.reference.oracle import gdn_oracle, rel_rmse

SETTINGS = settings(max_examples=500, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
# docs/chunk_gated_delta_rule.md "Accuracy": relative RMSE 5e-3 (fla's bar) for 16-bit outputs; fp32 math everywhere so fp32 inputs
# are held to a tight bound. A comparison passes outright when the max abs error is <= 1e-6.
RMSE = {torch.bfloat16: 5e-3, torch.float16: 5e-3, torch.float32: 1e-5}


def close(ref, x, bound):
    if ref.numel() == 0:
        return True
    if (ref.double() - x.double().cpu()).abs().max() <= 1e-6:
        return True
    return rel_rmse(ref, x) <= bound


@st.composite
def gdn_calls(draw):
    varlen = draw(st.booleans())
    h = draw(st.sampled_from([1, 2]))
    hv = h * draw(st.sampled_from([1, 2, 3]))
    kd = draw(st.sampled_from([4, 8, 16]))
    vd = draw(st.sampled_from([4, 8, 16]))
    dtype = draw(st.sampled_from([torch.bfloat16, torch.float16, torch.float32]))
    kw = dict(num_heads=h, num_v_heads=hv, head_k_dim=kd, head_v_dim=vd, dtype=dtype,
              gate_dtype=draw(st.sampled_from([torch.float32, torch.bfloat16])),
              initial_state=draw(st.sampled_from([None, "fp32", "bf16"])), state_v_first=draw(st.booleans()),
              l2norm=draw(st.booleans()), output_final_state=True, seed=draw(st.integers(0, 2**16)),
              cu_dtype=draw(st.sampled_from([torch.int32, torch.int64])))
    if varlen:
        lens = [draw(st.sampled_from([0, 1, 2, 5, 63, 64, 65, 70])) for _ in range(draw(st.integers(1, 3)))]
        call = gdn_inputs(lens, **kw)
    else:
        call = gdn_inputs(batch=draw(st.integers(1, 2)), seq_len=draw(st.sampled_from([1, 17, 63, 64, 65, 130])),
                          **kw)
    decay = draw(st.sampled_from(["random", "zero", "tiny", "strong"]))
    g = call["g"]
    if decay == "zero":
        call["g"] = torch.zeros_like(g)
    elif decay == "tiny":
        call["g"] = (g.float() * 1e-4).to(g.dtype)
    elif decay == "strong":
        call["g"] = torch.full_like(g, -20.0)
    if draw(st.booleans()):
        call["scale"] = 0.1
    if draw(st.integers(0, 3)) == 0:  # fla's in-kernel gate (raw g, A_log, optional dt_bias) on a quarter
        gen = torch.Generator().manual_seed(draw(st.integers(0, 2**16)))
        call.update(use_gate_in_kernel=True, g=torch.randn(g.shape, generator=gen).to(g.dtype),
                    A_log=torch.randn(hv, generator=gen), dt_bias=torch.randn(hv, generator=gen) if
                    draw(st.booleans()) else None)
    if draw(st.integers(0, 3)) == 0:  # raw beta through the in-kernel sigmoid, with or without the factor 2
        call.update(use_beta_sigmoid_in_kernel=True, allow_neg_eigval=draw(st.booleans()),
                    beta=(torch.randn(call["beta"].shape, generator=torch.Generator().manual_seed(1)) * 2).to(
                        call["beta"].dtype))
    return call


GATE_KEYS = ("use_gate_in_kernel", "A_log", "dt_bias", "use_beta_sigmoid_in_kernel", "allow_neg_eigval")


def oracle(kw):
    return gdn_oracle(kw["q"], kw["k"], kw["v"], kw["g"], kw["beta"], scale=kw.get("scale"),
                      initial_state=kw.get("initial_state"), state_v_first=kw["state_v_first"],
                      cu_seqlens=kw["cu_seqlens"], use_qk_l2norm_in_kernel=kw["use_qk_l2norm_in_kernel"],
                      **{n: kw[n] for n in GATE_KEYS if n in kw})


@SETTINGS
@given(gdn_calls())
def test_chunked_reference_matches_float64_recurrence(kw):
    o, final = atrex.chunk_gated_delta_rule(**kw)
    ref_o, ref_s = oracle(kw)
    assert o.dtype == kw["q"].dtype and final.dtype == torch.float32
    assert final.shape == ref_s.shape
    bound = RMSE[kw["q"].dtype]
    assert close(ref_o, o, bound), rel_rmse(ref_o, o)
    assert close(ref_s, final, bound), rel_rmse(ref_s, final)


def test_split_at_any_token_and_carry_state_equals_unsplit():
    kw = gdn_inputs(batch=1, seq_len=150, num_heads=2, num_v_heads=4, head_k_dim=16, head_v_dim=16,
                    dtype=torch.float32, initial_state="fp32", seed=5)
    o, final = atrex.chunk_gated_delta_rule(**kw)
    for cut in (1, 63, 64, 100):
        first = {**kw, **{n: kw[n][:, :cut] for n in ("q", "k", "v", "g", "beta")}}
        second = {**kw, **{n: kw[n][:, cut:] for n in ("q", "k", "v", "g", "beta")}}
        o1, s1 = atrex.chunk_gated_delta_rule(**first)
        o2, s2 = atrex.chunk_gated_delta_rule(**{**second, "initial_state": s1})
        torch.testing.assert_close(torch.cat([o1, o2], 1), o, atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(s2, final, atol=1e-5, rtol=1e-5)


def test_beta_sigmoid_neg_eigval_and_gate_in_kernel_options():
    kw = gdn_inputs(batch=1, seq_len=70, num_heads=1, num_v_heads=2, head_k_dim=8, head_v_dim=8,
                    dtype=torch.float32, seed=6)
    a_log, dt_bias = torch.tensor([0.1, -0.3]), torch.tensor([0.2, 0.0])
    raw_beta = torch.randn(1, 70, 2)
    o, s = atrex.chunk_gated_delta_rule(**{**kw, "beta": raw_beta}, use_beta_sigmoid_in_kernel=True,
                                        allow_neg_eigval=True, use_gate_in_kernel=True, A_log=a_log,
                                        dt_bias=dt_bias)
    g = -torch.exp(a_log) * F.softplus(kw["g"] + dt_bias)
    ref_o, ref_s = oracle({**kw, "g": g, "beta": 2 * torch.sigmoid(raw_beta)})
    assert close(ref_o, o, 1e-5) and close(ref_s, s, 1e-5)
    # the oracle's own float64 gate options give the same result
    ref_o2, ref_s2 = oracle({**kw, "beta": raw_beta, "use_beta_sigmoid_in_kernel": True, "allow_neg_eigval": True,
                             "use_gate_in_kernel": True, "A_log": a_log, "dt_bias": dt_bias})
    assert close(ref_o2, o, 1e-5) and close(ref_s2, s, 1e-5)


def test_gate_transform_of_reference_and_oracle_is_flas():
    """fla's gate, ``-exp(A_log.float()) * softplus(g.float() + dt_bias.float())`` (torch's softplus, threshold
    20): the reference's fp32 transform and the oracle's float64 one agree with it across softplus' regimes
    (x far below 0, around 0, above the threshold), bf16 / fp16 / fp32 g and parameters, with and without dt_bias;
    the beta sigmoid likewise (2 sigmoid(beta) with allow_neg_eigval)."""
    from atrex.api.chunk_gdn import normalize_gdn_call
    from atrex.reference.chunk_gdn import prepare_inputs
    from atrex.reference.oracle import gdn_gates64
    x = torch.tensor([-90.0, -30.0, -16.0, -5.0, -0.5, 0.0, 0.5, 5.0, 19.0, 21.0, 60.0])
    for g_dt, p_dt in ((torch.float32, torch.float32), (torch.bfloat16, torch.bfloat16), (torch.float16, torch.float32)):
        for bias in (None, torch.tensor([0.5, -2.0])):
            kw = gdn_inputs(batch=1, seq_len=x.numel(), num_heads=1, num_v_heads=2, head_k_dim=4, head_v_dim=4,
                            dtype=torch.float32, gate_dtype=g_dt, seed=7)
            kw["g"] = torch.stack([x, -x], -1)[None].to(g_dt)
            a_log = torch.tensor([0.3, -1.2]).to(p_dt)
            b = None if bias is None else bias.to(p_dt)
            want = -a_log.float().exp() * F.softplus(kw["g"].float() + (0.0 if b is None else b.float()))
            call = normalize_gdn_call(**kw, use_gate_in_kernel=True, A_log=a_log, dt_bias=b)
            got_ref = prepare_inputs(call)[3]
            got64, _ = gdn_gates64(kw["g"], kw["beta"], use_gate_in_kernel=True, A_log=a_log, dt_bias=b)
            torch.testing.assert_close(got_ref, want, rtol=1e-6, atol=0)
            torch.testing.assert_close(got64, want.double(), rtol=2e-6, atol=1e-30)
    raw = torch.linspace(-30, 30, 13).reshape(1, 13, 1)
    for neg in (False, True):
        _, b64 = gdn_gates64(torch.zeros_like(raw), raw, use_beta_sigmoid_in_kernel=True, allow_neg_eigval=neg)
        torch.testing.assert_close(b64, (torch.sigmoid(raw) * (2.0 if neg else 1.0)).double(), rtol=1e-6, atol=0)


def test_chunk_size_is_a_hint():
    """fla accepts chunk_size 16, 32 or 64; the result does not depend on it (the reference computes with 64)."""
    kw = gdn_inputs(batch=2, seq_len=100, num_heads=1, num_v_heads=2, head_k_dim=8, head_v_dim=8, seed=8)
    o64, s64 = atrex.chunk_gated_delta_rule(**kw)
    for cs in (16, 32):
        o, s = atrex.chunk_gated_delta_rule(**kw, chunk_size=cs)
        assert torch.equal(o, o64) and torch.equal(s, s64)


_MUTATIONS = [
    ("chunk_size", 32), ("chunk_size", 7), ("head_first", True), ("scale", "x"), ("allow_neg_eigval", True),
    ("cp_context", {}), ("use_gate_in_kernel", True), ("state_v_first", 1), ("bogus", 0),
]


@st.composite
def maybe_broken_calls(draw):
    kw = draw(gdn_calls())
    for _ in range(draw(st.integers(0, 2))):
        kind = draw(st.integers(0, 2))
        if kind == 0:
            name, value = draw(st.sampled_from(_MUTATIONS))
            kw[name] = value
        elif kind == 1:
            name = draw(st.sampled_from(["q", "k", "v", "g", "beta", "initial_state"]))
            if kw.get(name) is not None:
                t = kw[name]
                kw[name] = draw(st.sampled_from([t[..., :1], t.transpose(-1, -2), t.double(), t[:, :1]]))
        elif kw.get("cu_seqlens") is not None:
            kw["cu_seqlens"] = kw["cu_seqlens"].to(draw(st.sampled_from([torch.float32, torch.int16])))
    return kw


@settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(maybe_broken_calls())
def test_can_use_and_call_never_disagree(kw):
    can = atrex.can_use_chunk_gated_delta_rule(**kw)
    try:
        atrex.chunk_gated_delta_rule(**kw)
        ran = True
    except AtrexError:
        ran = False
    assert can == ran
