"""docs/chunk_gated_delta_rule.md: signature, every rejection rule, vLLM's and fla's call patterns."""

from __future__ import annotations

import inspect

import pytest
import torch

import atrex
from atrex.api.chunk_gdn import normalize_gdn_call
from atrex.errors import AtrexNotSupportedError, AtrexTypeError, AtrexValueError
from atrex.inputs import gdn_inputs
from testlib import assert_rejected_without_tensor_ops, assert_unchanged, snapshot

FLA_SIGNATURE = (
    "(q, k, v, g, beta, scale=None, initial_state=None, output_final_state=False, use_qk_l2norm_in_kernel=False, "
    "use_beta_sigmoid_in_kernel=False, allow_neg_eigval=False, state_v_first=False, cu_seqlens=None, "
    "cu_seqlens_cpu=None, chunk_indices=None, cp_context=None, *, chunk_size=64, use_gate_in_kernel=False, "
    "A_log=None, dt_bias=None, head_first=False, chunk_offsets=None, transpose_state_layout=None)"
)


@pytest.mark.parametrize("fn", [atrex.chunk_gated_delta_rule, atrex.can_use_chunk_gated_delta_rule,
                                atrex.explain_chunk_gated_delta_rule])
def test_signature_is_flas(fn):
    assert str(inspect.signature(fn)).split(" ->")[0] == FLA_SIGNATURE


def fixed(**over):
    kw = gdn_inputs(batch=2, seq_len=20, num_heads=2, num_v_heads=4, head_k_dim=8, head_v_dim=8, seed=1)
    kw.update(over)
    return kw


def varlen(**over):
    kw = gdn_inputs([5, 0, 17], num_heads=2, num_v_heads=4, head_k_dim=8, head_v_dim=8, state_v_first=True,
                    seed=2)
    kw.update(over)
    return kw


def _mod(kw, **changes):
    return {**kw, **changes}


F = fixed()
VL = varlen()

REJECTIONS = [
    ("cp_context", _mod(F, cp_context=object()), AtrexNotSupportedError, "cp_context"),
    ("head_first", _mod(F, head_first=True), AtrexNotSupportedError, "head_first"),
    ("gva_ratio", _mod(F, v=torch.zeros(2, 20, 3, 8, dtype=torch.bfloat16), g=torch.zeros(2, 20, 3),
                       beta=torch.zeros(2, 20, 3, dtype=torch.bfloat16), initial_state=None), AtrexValueError, "v"),
    ("q_rank", _mod(F, q=F["q"][0]), AtrexValueError, "q"),
    ("k_shape", _mod(F, k=F["k"][:, :10]), AtrexValueError, "k"),
    ("v_len", _mod(F, v=F["v"][:, :10]), AtrexValueError, "v"),
    ("g_shape", _mod(F, g=F["g"][..., :2]), AtrexValueError, "g"),
    ("g_dtype", _mod(F, g=F["g"].to(torch.int32)), AtrexTypeError, "g"),
    ("beta_shape", _mod(F, beta=F["beta"][:1]), AtrexValueError, "beta"),
    ("k_dtype", _mod(F, k=F["k"].half()), AtrexValueError, "k"),
    ("q_fp8", _mod(F, q=F["q"].to(torch.float8_e4m3fn), k=F["k"].to(torch.float8_e4m3fn),
                   v=F["v"].to(torch.float8_e4m3fn)), AtrexNotSupportedError, "q"),
    ("q_last_stride", _mod(F, q=F["q"].transpose(-1, -2).contiguous().transpose(-1, -2)), AtrexValueError, "q"),
    ("varlen_batch2", _mod(F, cu_seqlens=torch.tensor([0, 20], dtype=torch.int32)), AtrexValueError, "q"),
    ("cu_float", _mod(VL, cu_seqlens=VL["cu_seqlens"].float()), AtrexTypeError, "cu_seqlens"),
    ("cu_empty", _mod(VL, cu_seqlens=torch.zeros(1, dtype=torch.int32), initial_state=None), AtrexValueError,
     "cu_seqlens"),
    ("cu_cpu_shape", _mod(VL, cu_seqlens_cpu=torch.tensor([0, 22])), AtrexValueError, "cu_seqlens_cpu"),
    ("cu_cpu_without_cu", _mod(F, cu_seqlens_cpu=torch.tensor([0, 20])), AtrexValueError, "cu_seqlens_cpu"),
    ("state_layout", _mod(VL, state_v_first=False, initial_state=torch.zeros(3, 4, 8, 9)), AtrexValueError,
     "initial_state"),
    ("state_n", _mod(VL, initial_state=VL["initial_state"][:2]), AtrexValueError, "initial_state"),
    ("state_dtype", _mod(F, initial_state=F["initial_state"].double()), AtrexTypeError, "initial_state"),
    ("chunk_size", _mod(F, chunk_size=128), AtrexValueError, "chunk_size"),
    ("neg_eig_without_sigmoid", _mod(F, allow_neg_eigval=True), AtrexValueError, "allow_neg_eigval"),
    ("gate_without_A_log", _mod(F, use_gate_in_kernel=True), AtrexValueError, "A_log"),
    ("A_log_without_gate", _mod(F, A_log=torch.zeros(4)), AtrexValueError, "A_log"),
    ("A_log_shape", _mod(F, use_gate_in_kernel=True, A_log=torch.zeros(3)), AtrexValueError, "A_log"),
    ("A_log_int", _mod(F, use_gate_in_kernel=True, A_log=torch.zeros(4, dtype=torch.int32)), AtrexTypeError,
     "A_log"),
    ("A_log_fp64", _mod(F, use_gate_in_kernel=True, A_log=torch.zeros(4, dtype=torch.float64)), AtrexTypeError,
     "A_log"),
    ("dt_bias_shape", _mod(F, use_gate_in_kernel=True, A_log=torch.zeros(4), dt_bias=torch.zeros(4, 1)),
     AtrexValueError, "dt_bias"),
    ("dt_bias_int", _mod(F, use_gate_in_kernel=True, A_log=torch.zeros(4), dt_bias=torch.zeros(4).long()),
     AtrexTypeError, "dt_bias"),
    ("dt_bias_without_gate", _mod(F, dt_bias=torch.zeros(4)), AtrexValueError, "dt_bias"),
    ("A_log_device", _mod(F, use_gate_in_kernel=True, A_log=torch.zeros(4, device="meta")), AtrexValueError,
     "A_log"),
    ("lower_bound", _mod(F, lower_bound=-5.0), AtrexTypeError, "lower_bound"),  # (KDA's, not GDN's)
    ("both_layout_flags", _mod(VL, transpose_state_layout=True), AtrexValueError, "transpose_state_layout"),
    ("scale_tensor", _mod(F, scale=torch.tensor(0.1)), AtrexTypeError, "scale"),
    ("flag_type", _mod(F, output_final_state="yes"), AtrexTypeError, "output_final_state"),
    ("q_not_tensor", _mod(F, q=None), AtrexTypeError, "q"),
    ("device", _mod(F, g=F["g"].to("meta")), AtrexValueError, "g"),
    ("unknown_keyword", _mod(F, use_qk_l2norm=True), AtrexTypeError, "use_qk_l2norm"),
    ("q_int32", _mod(F, q=F["q"].int()), AtrexTypeError, "q"),
    ("k_int32", _mod(F, k=F["k"].int()), AtrexTypeError, "k"),
    ("beta_int32", _mod(F, beta=F["beta"].int()), AtrexTypeError, "beta"),
]


@pytest.mark.parametrize("case", REJECTIONS, ids=[c[0] for c in REJECTIONS])
def test_rejection(case):
    _, kw, err, arg = case
    assert_rejected_without_tensor_ops(atrex.chunk_gated_delta_rule, kw, err, arg)
    before = snapshot(kw)
    assert atrex.can_use_chunk_gated_delta_rule(**kw) is False
    assert_unchanged(before, kw)


def test_requires_grad_rejected_with_clear_error():
    kw = _mod(F, q=F["q"].clone().requires_grad_(True))
    with pytest.raises(AtrexNotSupportedError, match="`q`"):
        atrex.chunk_gated_delta_rule(**kw)
    kw = _mod(F, use_gate_in_kernel=True, A_log=torch.zeros(4, requires_grad=True))
    with pytest.raises(AtrexNotSupportedError, match="`A_log`"):
        atrex.chunk_gated_delta_rule(**kw)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("chunk_size", [16, 32, 64])
def test_fla_options_accepted(dtype, chunk_size):
    """fla 0.6's forward options: fp32 / 16-bit q, k, v; chunk_size 16 / 32 / 64 (a hint: the same result); the
    in-kernel gate with A_log and optional dt_bias in any float dtype; the beta sigmoid with allow_neg_eigval."""
    kw = _mod(fixed(), q=F["q"].to(dtype), k=F["k"].to(dtype), v=F["v"].to(dtype), beta=F["beta"].float())
    before = snapshot(kw)
    base = atrex.chunk_gated_delta_rule(**kw)
    o, final = atrex.chunk_gated_delta_rule(**kw, chunk_size=chunk_size)
    assert o.dtype == dtype and torch.equal(o, base[0]) and torch.equal(final, base[1])
    for dt_bias in (None, torch.zeros(4, dtype=torch.bfloat16)):
        opts = dict(use_gate_in_kernel=True, A_log=torch.zeros(4, dtype=torch.float16), dt_bias=dt_bias,
                    use_beta_sigmoid_in_kernel=True, allow_neg_eigval=True, chunk_size=chunk_size)
        assert atrex.can_use_chunk_gated_delta_rule(**kw, **opts)
        o, final = atrex.chunk_gated_delta_rule(**kw, **opts)
        assert o.shape == (2, 20, 4, 8) and torch.isfinite(o.float()).all() and torch.isfinite(final).all()
    assert_unchanged(before, kw)


def test_vllm_qwen3_next_call_pattern():
    # vLLM: keywords only, g fp32, beta bf16, V-first state with zero rows for new requests, int32 cu_seqlens,
    # head_first=False passed explicitly, chunk metadata hints.
    kw = gdn_inputs([7, 64, 1], num_heads=2, num_v_heads=4, head_k_dim=16, head_v_dim=16, state_v_first=True,
                    beta_dtype=torch.bfloat16, seed=3)
    kw["initial_state"][1].zero_()
    before = snapshot(kw)
    o, final = atrex.chunk_gated_delta_rule(**kw, head_first=False, chunk_indices=torch.zeros(3, 2, dtype=torch.int32),
                                            chunk_offsets=torch.zeros(4, dtype=torch.int32))
    assert o.shape == (1, 72, 4, 16) and o.dtype == torch.bfloat16
    assert final.shape == (3, 4, 16, 16) and final.dtype == torch.float32
    assert_unchanged(before, kw)


def test_transpose_state_layout_alias_and_defaults():
    call = normalize_gdn_call(**_mod(VL, state_v_first=False, transpose_state_layout=True))
    assert call.state_v_first and call.scale == 8 ** -0.5 and call.num_seqs == 3
    call = normalize_gdn_call(**fixed(scale=0.5, initial_state=None, cu_seqlens=None))
    assert call.num_seqs == 2 and call.scale == 0.5


def test_int64_cu_seqlens_and_cpu_mirror():
    kw = varlen()
    o32, s32 = atrex.chunk_gated_delta_rule(**kw)
    o64, s64 = atrex.chunk_gated_delta_rule(**_mod(kw, cu_seqlens=kw["cu_seqlens"].long(),
                                                   cu_seqlens_cpu=kw["cu_seqlens"].long()))
    assert torch.equal(o32, o64) and torch.equal(s32, s64)


def test_zero_length_sequence_keeps_its_initial_state():
    kw = varlen()
    _, final = atrex.chunk_gated_delta_rule(**kw)
    assert torch.equal(final[1], kw["initial_state"][1].float())


def test_no_final_state_when_not_asked():
    o, final = atrex.chunk_gated_delta_rule(**fixed(output_final_state=False))
    assert final is None and o.shape == (2, 20, 4, 8)


def test_empty_sequence_tensor():
    kw = gdn_inputs(batch=1, seq_len=0, num_heads=1, num_v_heads=2, head_k_dim=4, head_v_dim=4)
    o, final = atrex.chunk_gated_delta_rule(**kw)
    assert o.shape == (1, 0, 2, 4) and torch.equal(final, kw["initial_state"].float())
