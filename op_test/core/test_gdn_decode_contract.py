"""docs/fused_recurrent_gated_delta_rule.md: signature, every rejection rule, value checks, in-place semantics,
can_use / explain, lazy export."""

from __future__ import annotations

import inspect

import pytest
import torch

import atrex
from atrex.api.gdn_decode import normalize_gdn_decode_call
from atrex.errors import AtrexNotSupportedError, AtrexTypeError, AtrexValueError
from atrex.inputs import gdn_decode_inputs
from testlib import assert_rejected_without_tensor_ops, assert_unchanged, snapshot

SIGNATURE = (
    "(q, k, v, g, beta=None, scale=None, initial_state=None, inplace_final_state=True, cu_seqlens=None, "
    "ssm_state_indices=None, num_accepted_tokens=None, use_qk_l2norm_in_kernel=False, *, state_v_first=True)"
)


@pytest.mark.parametrize("fn", [atrex.fused_recurrent_gated_delta_rule,
                                atrex.can_use_fused_recurrent_gated_delta_rule,
                                atrex.explain_fused_recurrent_gated_delta_rule])
def test_signature_is_vllms(fn):
    assert str(inspect.signature(fn)).split(" ->")[0] == SIGNATURE


def decode(**over):
    kw = gdn_decode_inputs([1, 1, 1], num_heads=2, num_v_heads=4, head_k_dim=8, head_v_dim=8, padded=1, seed=1)
    kw.update(over)
    return kw


def mtp(**over):
    kw = gdn_decode_inputs([2, 3, 1], num_heads=1, num_v_heads=2, head_k_dim=8, head_v_dim=8, mtp=True, seed=2)
    kw.update(over)
    return kw


def fixed(**over):
    kw = gdn_decode_inputs(None, batch=2, seq_len=2, num_heads=1, num_v_heads=2, head_k_dim=8, head_v_dim=8, seed=3)
    kw.update(over)
    return kw


D, M, F = decode(), mtp(), fixed()
P = D["initial_state"].shape[0]
I32 = torch.int32

REJECTIONS = [
    ("q_not_tensor", decode(q=None), AtrexTypeError, "q"),
    ("q_int", decode(q=D["q"].int()), AtrexTypeError, "q"),
    ("q_rank", decode(q=D["q"][0]), AtrexValueError, "q"),
    ("q_fp8", decode(q=D["q"].to(torch.float8_e4m3fn), k=D["k"].to(torch.float8_e4m3fn),
                     v=D["v"].to(torch.float8_e4m3fn)), AtrexNotSupportedError, "q"),
    ("k_shape", decode(k=D["k"][:, :2]), AtrexValueError, "k"),
    ("k_dtype", decode(k=D["k"].half()), AtrexValueError, "k"),
    ("v_len", decode(v=D["v"][:, :2]), AtrexValueError, "v"),
    ("gva_ratio", decode(v=torch.zeros(1, 3, 3, 8, dtype=torch.bfloat16)), AtrexValueError, "v"),
    ("q_last_stride", decode(q=D["q"].transpose(-1, -2).contiguous().transpose(-1, -2)), AtrexValueError, "q"),
    ("g_shape", decode(g=D["g"][..., :2]), AtrexValueError, "g"),
    ("g_int", decode(g=D["g"].int()), AtrexTypeError, "g"),
    ("g_device", decode(g=D["g"].to("meta")), AtrexValueError, "g"),
    ("beta_shape", decode(beta=D["beta"][..., :1]), AtrexValueError, "beta"),
    ("beta_f64", decode(beta=D["beta"].double()), AtrexTypeError, "beta"),
    ("scale_tensor", decode(scale=torch.tensor(0.1)), AtrexTypeError, "scale"),
    ("scale_nan", decode(scale=float("nan")), AtrexValueError, "scale"),
    ("flag_type", decode(inplace_final_state="yes"), AtrexTypeError, "inplace_final_state"),
    ("layout_flag_type", decode(state_v_first=None), AtrexTypeError, "state_v_first"),
    ("unknown_keyword", decode(output_final_state=True), AtrexTypeError, "output_final_state"),
    ("pool_missing", decode(initial_state=None), AtrexTypeError, "initial_state"),
    ("pool_int", decode(initial_state=D["initial_state"].int()), AtrexTypeError, "initial_state"),
    ("pool_fp16", decode(initial_state=D["initial_state"].half()), AtrexTypeError, "initial_state"),
    ("pool_layout", decode(state_v_first=False, initial_state=torch.zeros(P, 4, 8, 9)), AtrexValueError,
     "initial_state"),
    ("pool_rank", decode(initial_state=D["initial_state"][0]), AtrexValueError, "initial_state"),
    ("pool_slot_not_contiguous", decode(initial_state=D["initial_state"].transpose(-1, -2)), AtrexValueError,
     "initial_state"),
    ("pool_too_small_without_indices", decode(ssm_state_indices=None, initial_state=D["initial_state"][:2]),
     AtrexValueError, "initial_state"),
    ("varlen_batch2", fixed(cu_seqlens=torch.tensor([0, 2], dtype=I32)), AtrexValueError, "q"),
    ("cu_float", decode(cu_seqlens=D["cu_seqlens"].float()), AtrexTypeError, "cu_seqlens"),
    ("cu_empty", decode(cu_seqlens=torch.zeros(1, dtype=I32)), AtrexValueError, "cu_seqlens"),
    ("idx_float", decode(ssm_state_indices=D["ssm_state_indices"].float()), AtrexTypeError, "ssm_state_indices"),
    ("idx_len", decode(ssm_state_indices=D["ssm_state_indices"][:2]), AtrexValueError, "ssm_state_indices"),
    ("idx_rank3", decode(ssm_state_indices=torch.zeros(3, 1, 1, dtype=I32)), AtrexValueError, "ssm_state_indices"),
    ("idx_2d_too_narrow_fixed", fixed(ssm_state_indices=torch.zeros(2, 1, dtype=I32)), AtrexValueError,
     "ssm_state_indices"),
    ("idx_2d_stride", mtp(ssm_state_indices=M["ssm_state_indices"].t().contiguous().t()), AtrexValueError,
     "ssm_state_indices"),
    ("nat_with_1d", decode(num_accepted_tokens=torch.ones(3, dtype=I32)), AtrexValueError, "num_accepted_tokens"),
    ("nat_without_idx", decode(ssm_state_indices=None, num_accepted_tokens=torch.ones(3, dtype=I32)),
     AtrexValueError, "num_accepted_tokens"),
    ("nat_len", mtp(num_accepted_tokens=torch.ones(2, dtype=I32)), AtrexValueError, "num_accepted_tokens"),
    ("nat_float", mtp(num_accepted_tokens=torch.ones(3)), AtrexTypeError, "num_accepted_tokens"),
    # value checks (CPU tensors: always)
    ("cu_not_zero", decode(cu_seqlens=torch.tensor([1, 1, 2, 3], dtype=I32)), AtrexValueError, "cu_seqlens"),
    ("cu_decreasing", decode(cu_seqlens=torch.tensor([0, 2, 1, 3], dtype=I32)), AtrexValueError, "cu_seqlens"),
    ("cu_end", decode(cu_seqlens=torch.tensor([0, 1, 2, 2], dtype=I32)), AtrexValueError, "cu_seqlens"),
    ("idx_out_of_pool", decode(ssm_state_indices=torch.tensor([0, P, -1], dtype=I32)), AtrexValueError,
     "ssm_state_indices"),
    ("idx_shared_slot", decode(ssm_state_indices=torch.tensor([4, 4, -1], dtype=I32)), AtrexValueError,
     "ssm_state_indices"),
    ("nat_zero", mtp(num_accepted_tokens=torch.tensor([1, 0, 1], dtype=I32)), AtrexValueError,
     "num_accepted_tokens"),
    ("nat_past_row", mtp(num_accepted_tokens=torch.tensor([1, 4, 1], dtype=I32)), AtrexValueError,
     "num_accepted_tokens"),
    ("mtp_row_too_short", mtp(ssm_state_indices=M["ssm_state_indices"][:, :2].contiguous(),
                              num_accepted_tokens=torch.ones(3, dtype=I32)), AtrexValueError, "ssm_state_indices"),
]


def _aliasing_case():
    kw = decode()
    pool = torch.zeros(P * 4 * 8 * 8 + 64, dtype=torch.float32)
    kw["initial_state"] = pool[: P * 256].view(P, 4, 8, 8)
    kw["g"] = pool[:3 * 4].view(1, 3, 4)
    return kw


def test_pool_aliasing_an_input_is_rejected():
    assert_rejected_without_tensor_ops(atrex.fused_recurrent_gated_delta_rule, _aliasing_case(), AtrexValueError,
                                       "initial_state")
    kw = _aliasing_case()
    kw["inplace_final_state"] = False  # not written: sharing is harmless
    atrex.fused_recurrent_gated_delta_rule(**kw)


@pytest.mark.parametrize("case", REJECTIONS, ids=lambda c: c[0])
def test_rejection(case):
    _, kw, err, arg = case
    if err is AtrexValueError and arg in ("cu_seqlens", "ssm_state_indices", "num_accepted_tokens") and \
            case[0].startswith(("cu_not", "cu_dec", "cu_end", "idx_out", "idx_shared", "nat_zero", "nat_past",
                                "mtp_row")):
        before = snapshot(kw)  # value checks read host memory (tolist), no aten op either
        with pytest.raises(err, match=f"`{arg}`"):
            atrex.fused_recurrent_gated_delta_rule(**kw)
        assert_unchanged(before, kw)
    else:
        assert_rejected_without_tensor_ops(atrex.fused_recurrent_gated_delta_rule, kw, err, arg)
    before = snapshot(kw)
    assert atrex.can_use_fused_recurrent_gated_delta_rule(**kw) is False
    assert_unchanged(before, kw)


def test_requires_grad_rejected():
    kw = decode(q=D["q"].clone().requires_grad_(True))
    with pytest.raises(AtrexNotSupportedError, match="`q`"):
        atrex.fused_recurrent_gated_delta_rule(**kw)


def test_defaults_and_record():
    call = normalize_gdn_decode_call(**mtp())
    assert call.state_v_first and call.inplace_final_state and call.scale == 8 ** -0.5
    assert call.num_seqs == 3 and call.slots_per_seq == 3 and call.pool_size == M["initial_state"].shape[0]
    call = normalize_gdn_decode_call(**fixed(scale=0.5, beta=None, ssm_state_indices=None))
    assert call.num_seqs == 2 and call.slots_per_seq == 0 and call.beta is None and call.scale == 0.5


def test_inplace_returns_the_pool_and_leaves_other_slots_and_inputs_alone():
    kw = mtp()
    pool = kw["initial_state"]
    before_pool = pool.clone()
    inputs = {n: x for n, x in kw.items() if n != "initial_state"}
    before = snapshot(inputs)
    o, final = atrex.fused_recurrent_gated_delta_rule(**kw)
    assert final is pool and o.shape == (1, 6, 2, 8) and o.dtype == torch.bfloat16
    assert_unchanged(before, inputs)
    written = {int(s) for s in kw["ssm_state_indices"].flatten() if s >= 0}
    other = [s for s in range(pool.shape[0]) if s not in written]
    assert torch.equal(pool[other], before_pool[other])


def test_returned_state_leaves_the_pool_untouched():
    kw = decode(inplace_final_state=False)
    before = snapshot(kw)
    o, final = atrex.fused_recurrent_gated_delta_rule(**kw)
    assert_unchanged(before, kw)
    assert final.shape == (3, 4, 8, 8) and final.dtype == torch.float32
    assert torch.count_nonzero(final[2]) == 0 and torch.count_nonzero(o[0, 2]) == 0  # padded


def test_padded_and_out_of_range_entries_write_nothing_and_output_zero():
    kw = decode()
    kw["ssm_state_indices"] = torch.tensor([-1, -7, 3], dtype=I32)
    pool = kw["initial_state"].clone()
    o, final = atrex.fused_recurrent_gated_delta_rule(**kw)
    assert torch.count_nonzero(o[0, :2]) == 0 and torch.count_nonzero(o[0, 2]) > 0
    changed = [s for s in range(P) if not torch.equal(final[s], pool[s])]
    assert changed == [3]


def test_can_use_and_explain_on_cpu():
    kw = decode()
    assert atrex.can_use_fused_recurrent_gated_delta_rule(**kw) is True
    trace = atrex.explain_fused_recurrent_gated_delta_rule(**kw)
    assert "core.reference" in str(trace) and "fused_recurrent_gated_delta_rule" in str(trace)


def test_prewarm_accepts_the_operator():
    assert atrex.prewarm("fused_recurrent_gated_delta_rule", [decode()]) == [("core.reference",
                                                                             "nothing to compile")]


def test_reference_on_meta_device_is_refused_not_run():
    kw = {n: (x.to("meta") if isinstance(x, torch.Tensor) else x) for n, x in decode().items()}
    assert atrex.can_use_fused_recurrent_gated_delta_rule(**kw) is False
