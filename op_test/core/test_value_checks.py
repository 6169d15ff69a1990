"""Value preconditions: always checked on CPU tensors; on an accelerator only with ATREX_CHECK_VALUES=1."""

from __future__ import annotations

import pytest
import torch

import atrex
from atrex import env
from atrex.errors import AtrexValueError
from atrex.inputs import attn_inputs, gdn_inputs


@pytest.fixture
def value_checks(monkeypatch):
    monkeypatch.setenv("ATREX_CHECK_VALUES", "1")
    env.reload()


def paged():
    return attn_inputs([1, 3], [20, 9], num_heads_q=4, num_heads_k=2, head_dim=16, page_size=8)


def nonpaged():
    return attn_inputs([2, 3], [4, 5], num_heads_q=2, num_heads_k=1, head_dim=8, page_size=None)


BAD_ATTENTION = [
    ("cu_q_not_zero", lambda kw: {**kw, "cu_seqlens_q": torch.tensor([1, 1, 4], dtype=torch.int32)}, "cu_seqlens_q"),
    ("cu_q_decreasing", lambda kw: {**kw, "cu_seqlens_q": torch.tensor([0, 3, 2], dtype=torch.int32)}, "cu_seqlens_q"),
    ("cu_q_past_end", lambda kw: {**kw, "cu_seqlens_q": torch.tensor([0, 1, 9], dtype=torch.int32)}, "cu_seqlens_q"),
    ("max_q_too_small", lambda kw: {**kw, "max_seqlen_q": 2}, "max_seqlen_q"),
    ("used_past_table", lambda kw: {**kw, "seqused_k": torch.tensor([20, 99], dtype=torch.int32),
                                    "max_seqlen_k": 99}, "seqused_k"),
    ("max_k_too_small", lambda kw: {**kw, "max_seqlen_k": 10}, "max_seqlen_k"),
    ("bad_block_id", lambda kw: {**kw, "block_table": torch.where(kw["block_table"] >= 0, kw["block_table"] + 1000,
                                                                  kw["block_table"])}, "block_table"),
]


@pytest.mark.parametrize("case", BAD_ATTENTION, ids=[c[0] for c in BAD_ATTENTION])
def test_attention_value_preconditions(value_checks, case):
    _, mutate, arg = case
    kw = mutate(paged())
    with pytest.raises(AtrexValueError, match=f"`{arg}`"):
        atrex.flash_attn_varlen_func(**kw)
    assert not atrex.can_use_flash_attn_varlen_func(**kw)


def test_nonpaged_key_offsets(value_checks):
    kw = nonpaged()
    kw["cu_seqlens_k"] = torch.tensor([0, 7, 5], dtype=torch.int32)
    with pytest.raises(AtrexValueError, match="`cu_seqlens_k`"):
        atrex.flash_attn_varlen_func(**kw)


def test_valid_calls_pass_value_checks(value_checks):
    atrex.flash_attn_varlen_func(**paged())
    atrex.flash_attn_varlen_func(**nonpaged())
    atrex.chunk_gated_delta_rule(**gdn_inputs([3, 0, 5], num_heads=1, num_v_heads=2, head_k_dim=4, head_v_dim=4))


def test_value_checks_run_on_cpu_and_elsewhere_only_when_asked():
    from types import SimpleNamespace

    from atrex.api._values import wanted

    cpu, gpu = torch.device("cpu"), torch.device("cuda", 0)
    assert wanted(SimpleNamespace(device=cpu, capturing=False))
    assert not wanted(SimpleNamespace(device=gpu, capturing=False))  # default mode: no device reads
    assert not wanted(SimpleNamespace(device=cpu, capturing=True))


def test_value_check_mode_on_an_accelerator(value_checks):
    from types import SimpleNamespace

    from atrex.api._values import wanted

    assert wanted(SimpleNamespace(device=torch.device("cuda", 0), capturing=False))
    assert not wanted(SimpleNamespace(device=torch.device("cuda", 0), capturing=True))


def _bad_block(kw, value):
    table = kw["block_table"].clone()
    table[0, 0] = value
    return {**kw, "block_table": table}


# Without ATREX_CHECK_VALUES: the CPU path checks anyway, before the reference writes anything.
BAD_DEFAULT = [
    *BAD_ATTENTION,
    ("block_minus_one", lambda kw: _bad_block(kw, -1), "block_table"),
    ("block_past_cache", lambda kw: _bad_block(kw, kw["k"].shape[0]), "block_table"),
]


@pytest.mark.parametrize("case", BAD_DEFAULT, ids=[c[0] for c in BAD_DEFAULT])
def test_cpu_attention_values_always_checked(case):
    _, mutate, arg = case
    kw = mutate(paged())
    out = torch.full((kw["q"].shape[0], kw["q"].shape[1], kw["v"].shape[-1]), 7.0, dtype=kw["q"].dtype)
    kw["out"] = out
    before = {k: v.clone() for k, v in kw.items() if isinstance(v, torch.Tensor)}
    with pytest.raises(AtrexValueError, match=f"`{arg}`"):
        atrex.flash_attn_varlen_func(**kw)
    assert not atrex.can_use_flash_attn_varlen_func(**kw)
    for k, v in before.items():  # inputs and out untouched
        assert torch.equal(kw[k], v), k


def test_cpu_nonpaged_key_offsets_always_checked():
    kw = nonpaged()
    kw["cu_seqlens_k"] = torch.tensor([0, 7, 5], dtype=torch.int32)
    with pytest.raises(AtrexValueError, match="`cu_seqlens_k`"):
        atrex.flash_attn_varlen_func(**kw)


@pytest.mark.parametrize("cu,arg", [([0, 5, 3, 8], "cu_seqlens"), ([0, 3, 7], "cu_seqlens"), ([1, 3, 8], "cu_seqlens")])
def test_cpu_gdn_offsets_always_checked(cu, arg):
    n = len(cu) - 1
    kw = gdn_inputs([8 // n] * (n - 1) + [8 - (8 // n) * (n - 1)], num_heads=1, num_v_heads=2, head_k_dim=4,
                    head_v_dim=4)
    kw["cu_seqlens"] = torch.tensor(cu, dtype=torch.int32)
    kw["cu_seqlens_cpu"] = None
    state = kw["initial_state"].clone()
    with pytest.raises(AtrexValueError, match=f"`{arg}`"):
        atrex.chunk_gated_delta_rule(**kw)
    assert not atrex.can_use_chunk_gated_delta_rule(**kw)
    assert torch.equal(kw["initial_state"], state)


@pytest.mark.parametrize("cu,mirror,arg", [
    ([0, 3, 7], None, "cu_seqlens"),  # does not end at T = 8
    ([0, 5, 3, 8], None, "cu_seqlens"),
    ([0, 3, 8], [0, 4, 8], "cu_seqlens_cpu"),
])
def test_gdn_value_preconditions(value_checks, cu, mirror, arg):
    kw = gdn_inputs([3, 5], num_heads=1, num_v_heads=2, head_k_dim=4, head_v_dim=4, initial_state=None)
    kw["cu_seqlens"] = torch.tensor(cu, dtype=torch.int32)
    if mirror is not None:
        kw["cu_seqlens_cpu"] = torch.tensor(mirror, dtype=torch.int32)
    with pytest.raises(AtrexValueError, match=f"`{arg}`"):
        atrex.chunk_gated_delta_rule(**kw)
