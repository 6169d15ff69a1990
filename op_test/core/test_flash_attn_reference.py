"""The attention reference against an independent float64 oracle, over generated calls (hypothesis),
plus can_use/call agreement and agreement of the validator with a rule-by-rule oracle."""

from __future__ import annotations

import pytest
import torch
from fa_validation_oracle import oracle_normalize
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import atrex
from atrex.api.flash_attn import FlashAttnCall, normalize_flash_attn_call
from atrex.errors import AtrexError
from atrex.inputs import attn_inputs
from atrex.validation.verify import poison_pages
from testlib import assert_attn_matches, attn_oracle

FP8 = torch.float8_e4m3fn
# docs/flash_attn_varlen_func.md "Accuracy": properties of the output dtype (fp8 inputs produce bf16), never
# loosened: testlib.ATTN_ELEMENTWISE (bf16/fp16 atol 1.5e-2 rtol 1e-2, fp32 1e-5/1e-5), LSE abs 2e-3.
SETTINGS = settings(max_examples=500, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))

HEADS = [(1, 1), (2, 1), (4, 2), (4, 4), (6, 3), (6, 1), (8, 2)]


@st.composite
def attn_calls(draw):
    batch = draw(st.integers(1, 3))
    q_lens = [draw(st.integers(0, 6)) for _ in range(batch)]
    k_lens = [draw(st.integers(0, 40)) for _ in range(batch)]
    hq, hk = draw(st.sampled_from(HEADS))
    d = draw(st.sampled_from([8, 16]))
    dtype = draw(st.sampled_from([torch.bfloat16, torch.float16, torch.float32, FP8]))
    paged = draw(st.booleans())
    page = draw(st.sampled_from([1, 3, 4, 16])) if paged else None
    causal = draw(st.booleans())
    window = draw(st.sampled_from([None, (-1, -1), (3, 0), (5, 5), (2, -1), (-1, 0), (0, 0), (-1, 2)]))
    softcap = draw(st.sampled_from([0.0, 0.0, 5.0]))
    sinks = draw(st.booleans())
    lse = draw(st.booleans())
    scale = draw(st.sampled_from([None, 0.3]))
    kw = attn_inputs(q_lens, k_lens, num_heads_q=hq, num_heads_k=hk, head_dim=d, dtype=dtype, page_size=page,
                     causal=causal, window_size=list(window) if window else None, softcap=softcap, sinks=sinks,
                     return_lse=lse, seed=draw(st.integers(0, 2**16)), fp8_descales=draw(st.booleans()),
                     out=draw(st.booleans()))
    if scale is not None:
        kw["softmax_scale"] = scale
    return kw


def oracle_for(kw):
    return attn_oracle(kw)


def assert_matches_oracle(kw, res):
    """testlib.assert_attn_matches: NaN-aware, the elementwise pair of the output dtype (fp8 inputs: the bf16
    pair, stricter than the kernels' fp8 pair), the per-row relative error, rows without keys exactly 0, LSE."""
    out, lse = res if kw["return_softmax_lse"] else (res, None)
    ref_out, ref_lse = oracle_for(kw)
    if lse is not None:
        assert lse.shape == ref_lse.shape and lse.dtype == torch.float32
    assert_attn_matches(out, lse, ref_out, ref_lse if lse is not None else None,
                        rows=int(kw["cu_seqlens_q"][-1]))


@SETTINGS
@given(attn_calls())
def test_reference_matches_float64_oracle(kw):
    res = atrex.flash_attn_varlen_func(**kw)
    if kw.get("out") is not None:
        assert (res[0] if kw["return_softmax_lse"] else res) is kw["out"]
    assert_matches_oracle(kw, res)


@pytest.mark.parametrize("window", [None, (4, 0), (2, 2)])
@pytest.mark.parametrize("q_lens,k_lens", [([1, 1, 1], [5, 17, 33]), ([3, 5], [3, 21]), ([4], [2])])
def test_nan_beyond_lengths_and_in_unreferenced_pages_never_leaks(q_lens, k_lens, window):
    kw = attn_inputs(q_lens, k_lens, num_heads_q=4, num_heads_k=2, head_dim=16, page_size=8, causal=True,
                     window_size=list(window) if window else None, sinks=True, return_lse=True, seed=11)
    clean_out, clean_lse = atrex.flash_attn_varlen_func(**kw)
    for fill in (float("nan"), float("inf")):
        out, lse = atrex.flash_attn_varlen_func(**poison_pages(kw, fill))
        assert torch.equal(out, clean_out) and torch.equal(lse, clean_lse)


def test_nan_in_keys_outside_the_window_never_leaks():
    # vLLM may recycle pages that slid out of the window: their content is stale, possibly NaN.
    kw = attn_inputs([1], [40], num_heads_q=2, num_heads_k=1, head_dim=8, page_size=4, causal=True,
                     window_size=[7, 0], seed=12)
    clean = atrex.flash_attn_varlen_func(**kw)
    k = kw["k"].clone()
    for i in range(8):  # keys 0..31 are outside the window of the last row (keys 32..39 visible)
        k[int(kw["block_table"][0, i])] = float("nan")
    assert torch.equal(atrex.flash_attn_varlen_func(**dict(kw, k=k)), clean)


def test_fully_masked_rows_give_zero_and_minus_inf():
    # causal with sq > sk: the first sq - sk rows see no key
    kw = attn_inputs([5], [2], num_heads_q=2, num_heads_k=1, head_dim=8, page_size=None, causal=True,
                     return_lse=True, seed=13)
    out, lse = atrex.flash_attn_varlen_func(**kw)
    assert torch.equal(out[:3], torch.zeros_like(out[:3]))
    assert torch.isneginf(lse[:, :3]).all() and torch.isfinite(lse[:, 3:]).all()
    kw["s_aux"] = torch.tensor([0.5, -1.0], dtype=torch.bfloat16)
    out, lse = atrex.flash_attn_varlen_func(**kw)
    assert torch.equal(out[:3], torch.zeros_like(out[:3]))
    assert torch.allclose(lse[:, 0], kw["s_aux"].float())


# ---- agreement properties --------------------------------------------------------------------

_MUTATIONS = [
    ("dropout_p", 0.5), ("num_splits", -1), ("softcap", -0.5), ("window_size", (-3, 0)), ("cp_rank", 1),
    ("fa_version", 9), ("max_seqlen_q", torch.tensor(3)), ("causal", None), ("return_attn_probs", True),
    ("softmax_scale", float("nan")), ("window_size", [1, 2, 3]), ("deterministic", True), ("num_splits", 1),
    ("fa_version", None), ("softcap", 0), ("scheduler_metadata", torch.zeros(3, dtype=torch.int32)),
    ("unknown_kw", 1), ("fa_version", 2.0), ("fa_version", True), ("fa_version", [2]), ("num_splits", True),
    ("cp_world_size", 1.0), ("window_size", (-1, 0.0)), ("softmax_scale", 1), ("softcap", float("inf")),
]


def _strided(t, step: int):
    """The same values and shape with every stride of ``t`` along dim 0 multiplied by ``step``."""
    if t.dim() == 0 or t.shape[0] == 0:
        return t
    wide = torch.zeros((t.shape[0] * step, *t.shape[1:]), dtype=t.dtype)
    wide[::step] = t
    return wide[::step]


def _place(draw, kw):
    """Re-seat some of q, k, v, out in one buffer at drawn offsets, with drawn row padding (other strides,
    16-byte misalignment), some through a DLPack alias (a second storage over the same bytes), so that
    they sometimes overlap, touch or interleave. Only metadata matters: the contents are zeros."""
    names = [n for n in ("q", "k", "v", "out") if kw.get(n) is not None and kw[n].dtype == kw["q"].dtype]
    chosen = draw(st.lists(st.sampled_from(names), unique=True, min_size=1))
    specs = []
    for name in chosen:
        shape = tuple(kw[name].shape)
        pad = draw(st.sampled_from([0, 0, 1, 8]))  # extra elements per row of the second-to-last dim
        strides = [1] * len(shape)
        for i in range(len(shape) - 2, -1, -1):
            strides[i] = strides[i + 1] * shape[i + 1] + (pad if i == len(shape) - 2 else 0)
        span = 1 + sum((n - 1) * st for n, st in zip(shape, strides)) if 0 not in shape else 0
        specs.append((name, shape, strides, span))
    size = sum(span for *_, span in specs) + 64
    base = torch.zeros(size, dtype=kw["q"].dtype)
    for name, shape, strides, span in specs:
        offset = draw(st.integers(0, size - span))
        alias_at = draw(st.one_of(st.none(), st.integers(0, offset)))
        buf, offset = (base, offset) if alias_at is None else (torch.from_dlpack(base[alias_at:]), offset - alias_at)
        kw[name] = buf.as_strided(shape, strides, offset)


@st.composite
def maybe_broken_calls(draw):
    kw = draw(attn_calls())
    for _ in range(draw(st.integers(0, 2))):
        kind = draw(st.integers(0, 7))
        if kind == 0:
            name, value = draw(st.sampled_from(_MUTATIONS))
            kw[name] = value
        elif kind == 1:
            name = draw(st.sampled_from(["cu_seqlens_q", "seqused_k", "block_table", "cu_seqlens_k"]))
            if kw.get(name) is not None:
                kw[name] = kw[name].to(draw(st.sampled_from([torch.int64, torch.int32])))
        elif kind == 2:
            name = draw(st.sampled_from(["q", "k", "v", "out"]))
            if kw.get(name) is not None:
                t = kw[name]
                kw[name] = draw(st.sampled_from([t[..., :1], t.transpose(-1, -2), t[:-1] if len(t) else t,
                                                 t.to(torch.float64)]))
        elif kind == 3:
            name = draw(st.sampled_from(["q_descale", "k_descale", "s_aux", "seqused_k"]))
            kw[name] = draw(st.sampled_from([None, torch.ones(1), torch.ones(2, 2), torch.ones(1, 1).expand(3, 2)]))
        elif kind == 4:
            if kw.get("out") is not None:
                kw["out"] = kw["q"] if kw["q"].dtype == kw["out"].dtype else kw["out"]
        elif kind == 5:
            _place(draw, kw)
        elif kind == 6:
            name = draw(st.sampled_from(["cu_seqlens_q", "cu_seqlens_k", "seqused_k", "block_table", "s_aux"]))
            if kw.get(name) is not None:
                t = kw[name]
                kw[name] = draw(st.sampled_from([_strided(t, 2), t[:1], t[:0], t.t() if t.dim() == 2 else t,
                                                 _strided(t.t(), 3).t() if t.dim() == 2 else t]))
        else:  # no query heads, or k/v with another head count / head_dim
            name = draw(st.sampled_from(["q", "k", "v"]))
            t = kw[name]
            dim = draw(st.sampled_from([-2, -1]))
            shape = list(t.shape)
            shape[dim] = draw(st.sampled_from([0, 1, 3]))
            kw[name] = torch.zeros(shape, dtype=t.dtype)
    return kw


@SETTINGS
@given(maybe_broken_calls())
def test_can_use_and_call_never_disagree(kw):
    can = atrex.can_use_flash_attn_varlen_func(**kw)
    try:
        atrex.flash_attn_varlen_func(**kw)
        ran = True
    except AtrexError:
        ran = False
    assert can == ran


def _outcome(fn, kw):
    try:
        return fn(**kw)
    except (AtrexError, TypeError) as exc:
        return type(exc)


@SETTINGS
@given(maybe_broken_calls())
def test_validator_agrees_with_the_rule_by_rule_oracle(kw):
    """The product's single validator (written for host cost) accepts exactly what the contract's rules,
    written one by one, accept; returns the same record; and raises the same error class."""
    got, want = _outcome(normalize_flash_attn_call, kw), _outcome(oracle_normalize, kw)
    if isinstance(want, FlashAttnCall):
        assert isinstance(got, FlashAttnCall) and got == want
    else:
        assert got is want or (isinstance(got, type) and issubclass(got, want)), (got, want)


@pytest.mark.parametrize("grad", [False, True])
@pytest.mark.parametrize("paged", [False, True])
def test_common_calls_match_the_oracle(paged, grad):
    """The shapes vLLM sends (with out, sinks, ignored descales, hints), grad mode or not; a tensor
    requiring grad under grad mode is refused."""
    kw = attn_inputs([1, 5, 2], [9, 33, 2], num_heads_q=8, num_heads_k=2, head_dim=64,
                     page_size=16 if paged else None, sinks=True, return_lse=True, out=True, seed=3)
    ones = torch.ones(1, 1).expand(3, 2)
    kw.update(softmax_scale=0.125, window_size=(-1, -1), fa_version=3, scheduler_metadata=None,
              q_descale=ones, k_descale=ones, v_descale=ones, num_splits=0)
    with torch.set_grad_enabled(grad):
        call = normalize_flash_attn_call(**kw)
        assert call == oracle_normalize(**kw) and call.aligned16 and call.q_descale is None
        kw["q"] = kw["q"].clone().requires_grad_(True)
        if grad:
            with pytest.raises(atrex.AtrexNotSupportedError, match="requires_grad"):
                normalize_flash_attn_call(**kw)
        else:
            normalize_flash_attn_call(**kw)


def _aliased_layouts():
    """(q, out) pairs over one buffer, each time through a second storage (DLPack) so that the storages
    differ: out's storage starts inside q / q starts below out's storage and runs into it / disjoint."""
    base = torch.zeros(4096, dtype=torch.bfloat16)
    shape = (4, 2, 64)
    n = 4 * 2 * 64

    def view(buf, offset):
        return buf.as_strided(shape, (128, 64, 1), offset)

    yield view(base, 0), view(torch.from_dlpack(base[64:]), 0), True  # out inside q's range
    yield view(base, 64), view(torch.from_dlpack(base[32:]), 0), True  # q starts after out's storage starts
    yield view(torch.from_dlpack(base[32:]), 0), view(base, 256), True  # q below out's storage, runs into it
    yield view(base, 0), view(torch.from_dlpack(base[n:]), 0), False  # touching, not overlapping
    yield view(torch.from_dlpack(base[n:]), 0), view(base, 0), False


@pytest.mark.parametrize("target", ["q", "k", "v"])
def test_overlap_is_exact_across_aliasing_storages(target):
    """The overlap test compares byte ranges, never storages: two storages can view the same memory
    (DLPack, from_blob), and a tensor can start below out's storage and run into it."""
    kw = attn_inputs([2, 2], [2, 2], num_heads_q=2, num_heads_k=2, head_dim=64, page_size=None, out=True)
    for x, out, overlapping in _aliased_layouts():
        call = dict(kw, out=out, **{target: x})
        if overlapping:
            with pytest.raises(AtrexError, match="overlapping"):
                normalize_flash_attn_call(**call)
            with pytest.raises(AtrexError, match="overlapping"):
                oracle_normalize(**call)
        else:
            assert normalize_flash_attn_call(**call) == oracle_normalize(**call)


def test_zero_query_heads_rejected():
    kw = attn_inputs([2, 3], [5, 7], num_heads_q=4, num_heads_k=2, head_dim=16, page_size=None)
    kw["q"] = torch.zeros(5, 0, 16, dtype=kw["q"].dtype)
    with pytest.raises(AtrexError, match="positive multiple"):
        normalize_flash_attn_call(**kw)
