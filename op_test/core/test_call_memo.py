"""CPU tier: the memo of validated call classes (``atrex/api/_memo.py``) and the operator's fast path over it
(``atrex/api/_fa_fast.py``). Whatever the fast path returns is exactly the validator's record; whatever the
validator refuses, the fast path leaves to it; a class seen before is served with new pointers and lengths; the
implementation kept per entry follows the registry and the settings."""

from __future__ import annotations

import importlib.util
import os

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import atrex
from atrex import env
from atrex.api import _fa_fast
from atrex.api._memo import CallMemo, guards_available
from atrex.api.flash_attn import FlashAttnCall, normalize_flash_attn_call
from atrex.dispatch.registry import get_registry
from atrex.errors import AtrexError, AtrexTypeError
from atrex.inputs import attn_inputs


def _reference_tests():
    """The validator's property-test module (its call strategy and mutations), loaded by path: op_test/core is
    not an import root."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "test_flash_attn_reference.py")
    spec = importlib.util.spec_from_file_location("_atrex_fa_reference_tests", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


_R = _reference_tests()
_MUTATIONS, SETTINGS, _place, _strided, attn_calls = _R._MUTATIONS, _R.SETTINGS, _R._place, _R._strided, _R.attn_calls

pytestmark = pytest.mark.skipif(not guards_available(), reason="this torch has no usable TensorGuards")


@pytest.fixture(autouse=True)
def fresh_memo():
    _fa_fast.MEMO.clear()
    yield
    _fa_fast.MEMO.clear()


def _fast(kw):
    """The fast path's record for ``kw`` (None: it leaves the call to the validator)."""
    reg = get_registry()
    env.settings()
    hit = _fa_fast.fast_call(kw, reg, env._settings)
    return None if hit is None else hit[0]._replace()  # (the class token aside: the validator's record has none)


def _seed(kw) -> bool:
    """Validate ``kw`` in full and remember its class; False when the validator refuses it."""
    _fast(kw)  # (binds the memo to the current registry and settings)
    try:
        call = normalize_flash_attn_call(**kw)
    except (AtrexError, TypeError):
        return False
    _fa_fast.remember(kw, call)
    return True


def _outcome(kw):
    try:
        return normalize_flash_attn_call(**kw)
    except (AtrexError, TypeError) as exc:
        return type(exc)


@st.composite
def seeded_variants(draw):
    """(seed call, variant): a drawn call, then 0-2 changes of the kinds the validator's property test draws,
    plus new pointers (copies, re-seated views) and new max_seqlen values, which keep the class."""
    kw = draw(attn_calls())
    seed = dict(kw)
    for _ in range(draw(st.integers(0, 2))):
        kind = draw(st.integers(0, 6))
        if kind == 0:
            name, value = draw(st.sampled_from(_MUTATIONS))
            kw[name] = value
        elif kind == 1:  # the same layout at another address
            name = draw(st.sampled_from(["q", "k", "v", "out", "cu_seqlens_q", "seqused_k", "block_table"]))
            if kw.get(name) is not None:
                kw[name] = kw[name].clone()
        elif kind == 2:
            _place(draw, kw)
        elif kind == 3:
            name = draw(st.sampled_from(["max_seqlen_q", "max_seqlen_k"]))
            kw[name] = draw(st.sampled_from([0, 1, 7, 100, -1, 2.0, True]))
        elif kind == 4:
            name = draw(st.sampled_from(["cu_seqlens_q", "cu_seqlens_k", "seqused_k", "block_table", "s_aux"]))
            if kw.get(name) is not None:
                t = kw[name]
                kw[name] = draw(st.sampled_from([_strided(t, 2), t[:1], t[:0], t.t() if t.dim() == 2 else t]))
        elif kind == 5:  # another row count of q / out
            for name in ("q", "out"):
                if kw.get(name) is not None and len(kw[name]):
                    kw[name] = kw[name][:-1]
        else:
            name = draw(st.sampled_from(["q", "k", "v", "out"]))
            if kw.get(name) is not None:
                t = kw[name]
                kw[name] = draw(st.sampled_from([t[..., :1], t.transpose(-1, -2), t.to(torch.float64), t[1:]]))
    return seed, kw


@SETTINGS
@given(seeded_variants())
def test_fast_path_returns_the_validators_record_or_nothing(pair):
    seed, kw = pair
    _fa_fast.MEMO.clear()  # (one test call runs every example: the memo's bounds would stop new seeds)
    if not _seed(seed):
        return
    assert _fast(seed) == normalize_flash_attn_call(**seed)  # the seed's own class is served
    got, want = _fast(kw), _outcome(kw)
    if got is not None:
        assert isinstance(want, FlashAttnCall) and got == want, (got, want)


def _decode_batch(cache, q_lens, k_lens, *, width=8, out_rows=None):
    """A paged decode call over the fixed cache ``cache`` (same k/v tensors: the class) with its own lengths."""
    kw = attn_inputs(list(q_lens), list(k_lens), num_heads_q=8, num_heads_k=2, head_dim=32, page_size=16,
                     out=True, seed=len(q_lens))
    b = len(q_lens)
    table = torch.arange(b * width, dtype=torch.int32).reshape(b, width) % cache["k"].shape[0]
    kw.update(k=cache["k"], v=cache["v"], block_table=table, softmax_scale=0.2, window_size=(-1, -1),
              fa_version=3, num_splits=0)
    return kw


@pytest.fixture
def cache():
    kw = attn_inputs([1], [16 * 64], num_heads_q=8, num_heads_k=2, head_dim=32, page_size=16, seed=0)
    return {"k": kw["k"], "v": kw["v"]}


def test_one_class_serves_new_lengths_and_pointers(cache):
    first = _decode_batch(cache, [1, 1], [40, 7])
    assert _seed(first)
    for q_lens, k_lens in (([1, 1, 1], [5, 90, 16]), ([3], [100]), ([1] * 6, [1, 2, 3, 4, 5, 6]), ([2, 1], [9, 9])):
        kw = _decode_batch(cache, q_lens, k_lens)
        got = _fast(kw)
        assert got is not None and got == normalize_flash_attn_call(**kw)
        assert got.batch == len(q_lens) and got.total_q == sum(q_lens) and got.q is kw["q"]
    assert len(_fa_fast.MEMO) == 1


def test_per_call_rules_still_refuse(cache):
    """The rules on per-call values go to the validator, which raises its own error."""
    kw = _decode_batch(cache, [1, 1], [40, 7])
    assert _seed(kw)
    bad = [
        dict(kw, out=kw["out"][:1]),  # out rows != q rows
        dict(kw, seqused_k=kw["seqused_k"][:1]),  # a length per sequence
        dict(kw, block_table=kw["block_table"][:1]),
        dict(kw, max_seqlen_q=-1), dict(kw, max_seqlen_k=3.0), dict(kw, max_seqlen_k=True),
        dict(kw, window_size=(-1.0, -1)),  # a float bound equal to the int one
        dict(kw, fa_version=True),  # True == 1, another type
    ]
    for b in bad:
        got, want = _fast(b), _outcome(b)
        assert got is None or got == want, b
    overlap = torch.zeros(4096, dtype=torch.bfloat16)
    q = overlap[:kw["q"].numel()].view(kw["q"].shape)
    assert _fast(dict(kw, q=q, out=q.clone())) is not None  # (same class, disjoint)
    assert _fast(dict(kw, q=q, out=overlap[8:8 + q.numel()].view(q.shape))) is None
    with pytest.raises(AtrexError, match="overlapping"):
        atrex.flash_attn_varlen_func(**dict(kw, q=q, out=overlap[8:8 + q.numel()].view(q.shape)))


def test_window_bounds_keep_their_type_check(cache):
    """The class's own ``window_size`` tuple object skips the bounds' type check (a tuple cannot change); an equal
    tuple of another object, or a list (which can), is checked, and float bounds go to the validator."""
    kw = _decode_batch(cache, [1, 1], [40, 7])
    assert _seed(kw)
    window = kw["window_size"]
    assert _fast(dict(kw, window_size=window)) is not None and _fast(dict(kw, window_size=(-1, -1))) is not None
    assert _fast(dict(kw, window_size=(-1.0, -1))) is None
    listed = dict(kw, window_size=[-1, -1])
    assert _seed(listed)
    window_list = listed["window_size"]
    window_list[0] = -1.0  # (equal to the class's value; the validator refuses a float bound)
    assert _fast(listed) is None and _outcome(listed) is AtrexTypeError


def test_class_test_compares_every_argument_by_type_and_value():
    """The generated class test: a scalar the class fixes matches only with its type and value (True is not 1,
    0.5 is not a tensor), a None only as None, a type-only argument by type, a per-call one by type (its value
    returned), and a keyword set of the same size but other names not at all."""
    memo, reg, settings = CallMemo(), object(), object()
    memo.holds_for(reg, settings)
    t = torch.zeros(4, 2)
    kw = dict(x=t, flag=True, scale=0.5, n=3, window=(-1, -1), absent=None, hint=t, length=7)
    e = memo.add(kw, ("x",), {"x": (0,)}, ("hint",), ("length",), False)
    assert memo.match(kw, reg, settings) == (e, (7,))
    assert memo.match(dict(kw, x=torch.ones(6, 2), hint=torch.ones(1), length=9), reg, settings) == (e, (9,))
    for change in (dict(flag=1), dict(flag=False), dict(flag=None), dict(scale=1), dict(scale=0.25), dict(scale=t),
                   dict(n=3.0), dict(n=True), dict(n=4), dict(window=[-1, -1]), dict(window=(-1, 0)), dict(absent=0),
                   dict(absent=t), dict(hint=None), dict(length=7.0), dict(length=None), dict(x=t.double()),
                   dict(x=torch.zeros(4, 3)), dict(x=None)):
        assert memo.match(dict(kw, **change), reg, settings) is None, change
    renamed = dict(kw)
    renamed["m"] = renamed.pop("n")
    assert memo.match(renamed, reg, settings) is None
    assert memo.match(kw, reg, object()) is None  # (another settings object empties the memo)


def test_class_test_body_must_not_assign_its_constants():
    """A body assigning one of the class test's constant names would make it an unbound local of the test (a call
    raising instead of matching): refused when the class is kept."""
    memo, reg, settings = CallMemo(), object(), object()
    memo.holds_for(reg, settings)
    kw = dict(x=torch.zeros(2), scale=0.5)
    with pytest.raises(ValueError, match="_t0"):
        memo.add(kw, ("x",), {}, (), (), False, (["_t0 = 1", "return entry"], {}))
    with pytest.raises(ValueError, match="entry"):
        memo.add(kw, ("x",), {}, (), (), False, (["return entry"], {"entry": 1}))
    e = memo.add(kw, ("x",), {}, (), (), False, (["t0 = 1", "return entry, t0"], {}))
    assert memo.match(dict(kw, x=torch.ones(2)), reg, settings) == (e, 1)


def test_grad_mode_and_requires_grad_are_part_of_the_class(cache):
    kw = _decode_batch(cache, [1, 1], [40, 7])
    with torch.no_grad():
        assert _seed(dict(kw, q=kw["q"].clone().requires_grad_()))
    with torch.enable_grad():
        assert _fast(dict(kw, q=kw["q"].clone().requires_grad_())) is None  # refused by the validator
        with pytest.raises(AtrexError, match="requires_grad"):
            atrex.flash_attn_varlen_func(**dict(kw, q=kw["q"].clone().requires_grad_()))


def test_memo_empties_with_a_new_registry_or_settings(cache, monkeypatch):
    kw = _decode_batch(cache, [1, 1], [40, 7])
    atrex.flash_attn_varlen_func(**kw)
    atrex.flash_attn_varlen_func(**kw)
    assert len(_fa_fast.MEMO) == 1 and _fast(kw) is not None
    (entry,) = _fa_fast.MEMO.by_count[len(kw)]
    assert [i.id for i in entry.chosen.values()] == ["core.reference"]
    env.reload()
    assert _fast(kw) is None and len(_fa_fast.MEMO) == 0  # new settings: everything is validated again
    atrex.flash_attn_varlen_func(**kw)
    assert len(_fa_fast.MEMO) == 1


def test_the_operator_uses_the_fast_path_and_matches(cache):
    """Results through the memo equal a full validation's (the CPU reference runs both)."""
    kw = _decode_batch(cache, [1, 2], [40, 17])
    first = atrex.flash_attn_varlen_func(**dict(kw, out=None))
    assert len(_fa_fast.MEMO) == 1 and _fast(dict(kw, out=None)) is not None
    second = atrex.flash_attn_varlen_func(**dict(kw, out=None))
    assert torch.equal(first, second)
    assert atrex.can_use_flash_attn_varlen_func(**kw)


# ---- the Gated-DeltaNet operators ------------------------------------------------------------------------

def _gdn_fast(op_mod, kw):
    reg = get_registry()
    env.settings()
    hit = op_mod.MEMO.match(kw, reg, env._settings)
    return None if hit is None else hit[0]._replace()


def _gdn_variants(kw, pool):
    """Changes that keep the class (new tensors of the same layout) and changes that do not, or that the
    validator refuses (an input overlapping the pool updated in place, requires_grad, wrong types)."""
    keep = [{n: (x.clone() if isinstance(x, torch.Tensor) else x) for n, x in kw.items()}]
    change = [dict(kw, q=kw["q"].half(), k=kw["k"].half(), v=kw["v"].half()), dict(kw, g=kw["g"].to(torch.bfloat16)),
              dict(kw, use_qk_l2norm_in_kernel=not kw.get("use_qk_l2norm_in_kernel", False)),
              dict(kw, scale=0.5), dict(kw, scale=True),
              dict(kw, q=kw["q"].transpose(1, 2).contiguous().transpose(1, 2))]
    if pool is not None:
        p = kw[pool]
        change += [dict(kw, q=p.view(-1)[: kw["q"].numel()].view(kw["q"].shape).to(kw["q"].dtype)
                        if p.dtype == kw["q"].dtype else kw["q"]),
                   dict(kw, g=p.view(-1)[: kw["g"].numel()].view(kw["g"].shape)) if p.dtype == kw["g"].dtype else kw]
    return keep, change


@pytest.mark.parametrize("op", ["chunk", "decode", "decode_scaled"])
def test_gdn_fast_path_returns_the_validators_record_or_nothing(op):
    from atrex.api import chunk_gdn, gdn_decode
    from atrex.inputs import gdn_decode_inputs, gdn_inputs

    if op == "chunk":
        mod, pool = chunk_gdn, None
        kw = gdn_inputs(None, batch=1, seq_len=40, num_heads=2, num_v_heads=4, head_k_dim=16, head_v_dim=16, seed=1)
        kw["use_qk_l2norm_in_kernel"] = True
        normalize = chunk_gdn.normalize_gdn_call
    else:
        mod, pool = gdn_decode, "initial_state"
        kw = gdn_decode_inputs([1, 2, 1], mtp=True, head_k_dim=16, head_v_dim=16, seed=1)
        if op == "decode_scaled":  # a float scalar the class test compares by type, with the pool's overlap test
            kw = {"scale": 0.25, **kw}
        normalize = gdn_decode.normalize_gdn_decode_call
    mod.MEMO.clear()
    with torch.no_grad():
        first = getattr(atrex, "chunk_gated_delta_rule" if op == "chunk" else "fused_recurrent_gated_delta_rule")
        first(**kw)
        assert len(mod.MEMO) == 1
        keep, change = _gdn_variants(kw, pool)
        for v in keep:
            got = _gdn_fast(mod, v)
            assert got is not None and got == normalize(**v)
        for v in change:
            got = _gdn_fast(mod, v)
            try:
                want = normalize(**v)
            except (AtrexError, TypeError):
                want = None
            assert got is None or got == want, {n: getattr(x, "dtype", x) for n, x in v.items()}
    with torch.enable_grad():  # grad mode is part of the class
        assert _gdn_fast(mod, dict(kw, q=kw["q"].clone().requires_grad_())) is None


@pytest.mark.parametrize("op", ["attention", "chunk", "decode"])
def test_first_call_carries_the_class_later_calls_are_served_under(op):
    """The validator's record of a call the memo keeps carries that entry (``call.cls``), the same object the memo's
    records of later calls of the class carry: launchers key their plans on it, so the first call's plan (a
    chunk_gdn template, a paged attention launch plan) is the one later calls find."""
    from atrex.api import chunk_gdn, flash_attn, gdn_decode
    from atrex.inputs import gdn_decode_inputs, gdn_inputs

    if op == "attention":
        mod, kw = flash_attn, attn_inputs([1, 2], [40, 17], num_heads_q=4, num_heads_k=2, head_dim=16, page_size=16)
        memo = _fa_fast.MEMO
    elif op == "chunk":
        mod, memo = chunk_gdn, chunk_gdn.MEMO
        kw = gdn_inputs(None, batch=1, seq_len=40, num_heads=2, num_v_heads=4, head_k_dim=16, head_v_dim=16, seed=1)
    else:
        mod, memo = gdn_decode, gdn_decode.MEMO
        kw = gdn_decode_inputs([1, 2, 1], mtp=True, head_k_dim=16, head_v_dim=16, seed=1)
    memo.clear()
    with torch.no_grad():
        first, _ = mod._validated((), kw)
        again, _ = mod._validated((), {n: (x.clone() if isinstance(x, torch.Tensor) else x) for n, x in kw.items()})
    assert len(memo) == 1
    assert first.cls is not None and again.cls is first.cls
    plain = [n for n in first._fields if n != "cls" and not isinstance(getattr(first, n), torch.Tensor)]
    assert [getattr(first, n) for n in plain] == [getattr(again, n) for n in plain]
