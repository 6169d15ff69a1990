"""docs/flash_attn_varlen_func.md: signature, every rejection rule, vLLM's real call patterns."""

from __future__ import annotations

import inspect

import pytest
import torch

import atrex
from atrex.api.flash_attn import normalize_flash_attn_call
from atrex.compat import vllm_flash_attn
from atrex.errors import AtrexNotSupportedError, AtrexTypeError, AtrexValueError
from atrex.inputs import attn_inputs
from testlib import assert_rejected_without_tensor_ops, assert_unchanged, snapshot

VLLM_SIGNATURE = (
    "(q, k, v, max_seqlen_q, cu_seqlens_q, max_seqlen_k, cu_seqlens_k=None, seqused_k=None, q_v=None, "
    "dropout_p=0.0, softmax_scale=None, causal=False, window_size=None, softcap=0.0, alibi_slopes=None, "
    "deterministic=False, return_attn_probs=False, block_table=None, return_softmax_lse=False, out=None, "
    "scheduler_metadata=None, q_descale=None, k_descale=None, v_descale=None, num_splits=0, fa_version=2, "
    "s_aux=None, cp_world_size=1, cp_rank=0, cp_tot_seqused_k=None)"
)


def _params(fn):
    return str(inspect.signature(fn)).split(" ->")[0]


@pytest.mark.parametrize("fn", [atrex.flash_attn_varlen_func, atrex.can_use_flash_attn_varlen_func,
                                atrex.explain_flash_attn_varlen_func, vllm_flash_attn.flash_attn_varlen_func])
def test_signature_is_vllms(fn):
    assert _params(fn) == VLLM_SIGNATURE
    assert "kwargs" not in str(inspect.signature(fn))


def decode_call(**over):
    kw = attn_inputs([1, 1, 1], [40, 7, 100], num_heads_q=8, num_heads_k=2, head_dim=32, page_size=16,
                     out=True, seed=3)
    kw.update(over)
    return kw


def prefill_call(**over):
    kw = attn_inputs([5, 9], [5, 12], num_heads_q=4, num_heads_k=4, head_dim=16, page_size=None, out=True,
                     seed=4)
    kw.update(over)
    return kw


def fp8_call(**over):
    kw = attn_inputs([2, 3], [20, 33], num_heads_q=4, num_heads_k=2, head_dim=16, page_size=8,
                     dtype=torch.float8_e4m3fn, out=True, seed=5)
    kw.update(over)
    return kw


def _mod(kw, **changes):
    kw = dict(kw)
    kw.update(changes)
    return kw


def _t(*shape, dtype=torch.bfloat16):
    return torch.zeros(*shape, dtype=dtype)


D = decode_call()
P = prefill_call()
F8 = fp8_call()

# (id, call kwargs, error class, argument named in the message)
REJECTIONS = [
    ("dropout", _mod(D, dropout_p=0.1), AtrexNotSupportedError, "dropout_p"),
    ("alibi", _mod(D, alibi_slopes=torch.zeros(8)), AtrexNotSupportedError, "alibi_slopes"),
    ("attn_probs", _mod(D, return_attn_probs=True), AtrexNotSupportedError, "return_attn_probs"),
    ("q_v", _mod(D, q_v=_t(3, 8, 32)), AtrexNotSupportedError, "q_v"),
    ("dv_ne_d", _mod(P, v=_t(17, 4, 8), out=None), AtrexNotSupportedError, "v"),
    ("cp_world", _mod(D, cp_world_size=2), AtrexNotSupportedError, "cp_world_size"),
    ("cp_tot", _mod(D, cp_tot_seqused_k=torch.zeros(3, dtype=torch.int32)), AtrexNotSupportedError,
     "cp_tot_seqused_k"),
    ("cp_rank", _mod(D, cp_rank=1), AtrexValueError, "cp_rank"),
    ("mixed_dtype", _mod(D, k=D["k"].half()), AtrexNotSupportedError, "k"),
    ("q_float64", _mod(P, q=P["q"].double(), k=P["k"].double(), v=P["v"].double(), out=None),
     AtrexNotSupportedError, "q"),
    ("both_k_meta", _mod(P, seqused_k=torch.tensor([5, 12], dtype=torch.int32)), AtrexValueError, "cu_seqlens_k"),
    ("neither_k_meta", _mod(P, cu_seqlens_k=None), AtrexValueError, "cu_seqlens_k"),
    ("table_without_used", _mod(D, seqused_k=None, cu_seqlens_k=torch.tensor([0, 40, 47, 147], dtype=torch.int32)),
     AtrexValueError, "seqused_k"),
    ("used_without_table", _mod(P, cu_seqlens_k=None, seqused_k=torch.tensor([5, 12], dtype=torch.int32)),
     AtrexValueError, "seqused_k"),
    ("q_rank", _mod(P, q=P["q"][0]), AtrexValueError, "q"),
    ("k_rank_paged", _mod(D, k=D["k"][0]), AtrexValueError, "k"),
    ("k_rank_nonpaged", _mod(P, k=P["k"][None]), AtrexValueError, "k"),
    ("kv_leading_dims", _mod(P, v=P["v"][:-1]), AtrexValueError, "v"),
    ("gqa_ratio", _mod(D, q=_t(3, 7, 32), out=None), AtrexValueError, "k"),
    ("head_dim", _mod(P, q=_t(14, 4, 32), out=None), AtrexValueError, "k"),
    ("q_last_stride", _mod(P, q=_t(14, 4, 32)[..., ::2]), AtrexValueError, "q"),
    ("k_last_stride", _mod(P, k=_t(17, 4, 32)[..., ::2]), AtrexValueError, "k"),
    ("device", _mod(P, cu_seqlens_k=P["cu_seqlens_k"].to("meta")), AtrexValueError, "cu_seqlens_k"),
    ("out_shape", _mod(P, out=_t(14, 4, 8)), AtrexValueError, "out"),
    ("out_dtype", _mod(P, out=_t(14, 4, 16, dtype=torch.float16)), AtrexValueError, "out"),
    ("out_aliases_q", _mod(P, out=P["q"]), AtrexValueError, "out"),
    ("out_fp8_dtype", _mod(F8, out=torch.zeros(5, 4, 16, dtype=torch.float8_e4m3fn)), AtrexValueError, "out"),
    ("window_triple", _mod(D, window_size=(1, 2, 3)), AtrexValueError, "window_size"),
    ("window_lt_minus1", _mod(D, window_size=[-2, 0]), AtrexValueError, "window_size"),
    ("window_type", _mod(D, window_size="full"), AtrexValueError, "window_size"),
    ("softcap_negative", _mod(D, softcap=-1.0), AtrexValueError, "softcap"),
    ("max_seqlen_negative", _mod(D, max_seqlen_q=-1), AtrexValueError, "max_seqlen_q"),
    ("num_splits_negative", _mod(D, num_splits=-1), AtrexValueError, "num_splits"),
    ("cu_q_int64", _mod(D, cu_seqlens_q=D["cu_seqlens_q"].long()), AtrexTypeError, "cu_seqlens_q"),
    ("used_int64", _mod(D, seqused_k=D["seqused_k"].long()), AtrexTypeError, "seqused_k"),
    ("table_int64", _mod(D, block_table=D["block_table"].long()), AtrexTypeError, "block_table"),
    ("table_rows", _mod(D, block_table=D["block_table"][:2]), AtrexValueError, "block_table"),
    ("table_last_stride", _mod(D, block_table=D["block_table"].t().contiguous().t()), AtrexValueError,
     "block_table"),
    ("used_len", _mod(D, seqused_k=D["seqused_k"][:2]), AtrexValueError, "seqused_k"),
    ("fp8_descale_dtype", _mod(F8, q_descale=F8["q_descale"].half()), AtrexTypeError, "q_descale"),
    ("fp8_descale_shape", _mod(F8, k_descale=torch.ones(2, 4)), AtrexValueError, "k_descale"),
    ("q_not_tensor", _mod(P, q=[[1.0]]), AtrexTypeError, "q"),
    ("max_seqlen_tensor", _mod(D, max_seqlen_k=torch.tensor(100)), AtrexTypeError, "max_seqlen_k"),
    ("num_splits_float", _mod(D, num_splits=1.5), AtrexTypeError, "num_splits"),
    ("causal_str", _mod(D, causal="yes"), AtrexTypeError, "causal"),
    ("descale_not_tensor_bf16", _mod(D, q_descale=1.0), AtrexTypeError, "q_descale"),
    ("fa_version", _mod(D, fa_version=5), AtrexValueError, "fa_version"),
    ("s_aux_shape", _mod(D, s_aux=torch.zeros(4, dtype=torch.bfloat16)), AtrexValueError, "s_aux"),
    ("s_aux_dtype", _mod(D, s_aux=torch.zeros(8, dtype=torch.float64)), AtrexNotSupportedError, "s_aux"),
    ("batch0_rows", _mod(D, cu_seqlens_q=torch.zeros(1, dtype=torch.int32), seqused_k=torch.zeros(0, dtype=torch.int32),
                         block_table=torch.zeros(0, 1, dtype=torch.int32)), AtrexValueError, "cu_seqlens_q"),
    ("unknown_keyword", _mod(D, dropout=0.0), AtrexTypeError, "dropout"),
    # an integer tensor is a wrong type (AtrexTypeError naming it), not a dtype no implementation supports
    ("q_int32", _mod(P, q=P["q"].int(), out=None), AtrexTypeError, "q"),
    ("k_int32", _mod(P, k=P["k"].int()), AtrexTypeError, "k"),
    ("v_int32", _mod(D, v=D["v"].int()), AtrexTypeError, "v"),
]


def test_unknown_keyword_message():
    with pytest.raises(AtrexTypeError) as info:
        atrex.flash_attn_varlen_func(**_mod(D, dropout=0.0))
    msg = str(info.value)
    assert msg.startswith("argument `dropout`: got an unexpected keyword argument 'dropout'; expected the")
    assert "got got" not in msg and "normalize_" not in msg
    with pytest.raises(AtrexTypeError) as info:
        atrex.flash_attn_varlen_func(D["q"])
    assert "missing" in str(info.value) and "got missing" not in str(info.value)


@pytest.mark.parametrize("case", REJECTIONS, ids=[c[0] for c in REJECTIONS])
def test_rejection(case):
    _, kw, err, arg = case
    exc = assert_rejected_without_tensor_ops(atrex.flash_attn_varlen_func, kw, err, arg)
    assert isinstance(exc, atrex.AtrexError)
    before = snapshot(kw)
    assert atrex.can_use_flash_attn_varlen_func(**kw) is False
    assert_unchanged(before, kw)


def test_requires_grad_rejected():
    kw = _mod(P, q=P["q"].clone().requires_grad_(True), out=None)
    with pytest.raises(AtrexNotSupportedError, match="`q`"):
        atrex.flash_attn_varlen_func(**kw)
    with torch.no_grad():
        atrex.flash_attn_varlen_func(**kw)


def test_missing_positional_is_type_error():
    with pytest.raises(AtrexTypeError):
        atrex.flash_attn_varlen_func(P["q"], P["k"], P["v"])


def test_error_types_are_builtin_compatible():
    assert issubclass(AtrexNotSupportedError, NotImplementedError)
    assert issubclass(AtrexValueError, ValueError)
    assert issubclass(AtrexTypeError, TypeError)


def test_not_supported_carries_every_candidate():
    with pytest.raises(AtrexNotSupportedError) as info:
        atrex.flash_attn_varlen_func(**REJECTIONS[[c[0] for c in REJECTIONS].index("q_float64")][1])
    err = info.value
    assert err.op == "flash_attn_varlen" and err.target == "cpu"
    assert [i for i, _ in err.rejections] == ["core.reference"]
    assert err.rejections[0][1].reasons[0].argument == "q"


# ---- vLLM's real call patterns are accepted ---------------------------------------------------

def test_vllm_decode_with_block_table_and_stride0_descales():
    kw = decode_call(
        causal=True, window_size=[-1, -1], softcap=0, fa_version=3, num_splits=0, scheduler_metadata=None,
        q_descale=torch.ones(1, 1).expand(3, 2), k_descale=torch.ones(1, 1).expand(3, 2),
        v_descale=torch.ones(1, 1).expand(3, 2), s_aux=None, alibi_slopes=None)
    res = atrex.flash_attn_varlen_func(**kw)
    assert res is kw["out"]
    assert atrex.can_use_flash_attn_varlen_func(**kw)


def test_vllm_prefill_with_cu_seqlens_k_and_list_window():
    kw = prefill_call(causal=True, window_size=[3, 0], scheduler_metadata=torch.zeros(4, dtype=torch.int32))
    out, lse = atrex.flash_attn_varlen_func(**_mod(kw, return_softmax_lse=True))
    assert out is kw["out"] and lse.shape == (4, 14) and lse.dtype == torch.float32


def test_vllm_cascade_column_sliced_block_table():
    kw = decode_call()
    wide = torch.full((3, 20), -1, dtype=torch.int32)
    wide[:, 2:2 + kw["block_table"].shape[1]] = kw["block_table"]
    sliced = wide[:, 2:]
    assert sliced.stride(0) > sliced.shape[1]
    ref = atrex.flash_attn_varlen_func(**_mod(kw, out=None))
    got = atrex.flash_attn_varlen_func(**_mod(kw, block_table=sliced, out=None))
    assert torch.equal(ref, got)


def test_hnd_permuted_and_interleaved_kv_views():
    kw = decode_call(out=None)
    ref = atrex.flash_attn_varlen_func(**kw)
    hnd_k = kw["k"].permute(0, 2, 1, 3).contiguous().permute(0, 2, 1, 3)
    hnd_v = kw["v"].permute(0, 2, 1, 3).contiguous().permute(0, 2, 1, 3)
    assert torch.equal(ref, atrex.flash_attn_varlen_func(**_mod(kw, k=hnd_k, v=hnd_v)))
    both = torch.stack([kw["k"], kw["v"]], dim=2)  # [nb, page, 2, Hk, D]: K/V interleaved per token
    assert torch.equal(ref, atrex.flash_attn_varlen_func(**_mod(kw, k=both[:, :, 0], v=both[:, :, 1])))


def test_bf16_descales_are_ignored_not_read():
    kw = decode_call(out=None)
    nan = torch.full((3, 2), float("nan"))
    assert torch.equal(atrex.flash_attn_varlen_func(**kw),
                       atrex.flash_attn_varlen_func(**_mod(kw, q_descale=nan, k_descale=nan, v_descale=nan)))
    call = normalize_flash_attn_call(**_mod(kw, q_descale=nan))
    assert call.q_descale is None


def test_fp8_output_is_bf16_and_zero_stride_descales_work():
    kw = fp8_call(out=None)
    out = atrex.flash_attn_varlen_func(**kw)
    assert out.dtype == torch.bfloat16
    d = torch.full((1, 1), 0.7).expand(2, 2)
    out2 = atrex.flash_attn_varlen_func(**_mod(kw, q_descale=d, k_descale=d, v_descale=d))
    out3 = atrex.flash_attn_varlen_func(**_mod(kw, q_descale=d.contiguous(), k_descale=d.contiguous(),
                                              v_descale=d.contiguous()))
    assert torch.equal(out2, out3)


def test_window_canonicalisation():
    base = normalize_flash_attn_call(**decode_call(causal=False, window_size=(-1, 0)))
    assert base.causal and (base.window_left, base.window_right) == (-1, 0)
    c = normalize_flash_attn_call(**decode_call(causal=True, window_size=[7, -1]))
    assert c.causal and (c.window_left, c.window_right) == (7, 0)
    n = normalize_flash_attn_call(**decode_call(causal=False, window_size=None))
    assert not n.causal and (n.window_left, n.window_right) == (-1, -1)
    assert n.softmax_scale == 32 ** -0.5


def test_empty_query_batch():
    kw = attn_inputs([0, 0], [5, 0], num_heads_q=2, num_heads_k=1, head_dim=8, page_size=4, return_lse=True)
    out, lse = atrex.flash_attn_varlen_func(**kw)
    assert out.shape == (0, 2, 8) and lse.shape == (2, 0)


def test_get_scheduler_metadata_and_versions():
    assert atrex.get_scheduler_metadata(batch_size=1) is None
    assert vllm_flash_attn.fa_version_unsupported_reason(7) is not None
    assert vllm_flash_attn.is_fa_version_supported(2, "cpu") is False  # only the reference serves CPU
