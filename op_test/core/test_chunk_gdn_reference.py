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
    return call


def oracle(kw):
    return gdn_oracle(kw["q"], kw["k"], kw["v"], kw["g"], kw["beta"], scale=kw.get("scale"),
                      initial_state=kw.get("initial_state"), state_v_first=kw["state_v_first"],
                      cu_seqlens=kw["cu_seqlens"], use_qk_l2norm_in_kernel=kw["use_qk_l2norm_in_kernel"])


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
