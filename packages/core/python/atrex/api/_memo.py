"""Memo of validated call classes: the host cost of an eager call that repeats an earlier call's class.

An engine calls each operator with a handful of argument layouts, again and again. The validators read some
40 tensor attributes per call (shape, stride, dtype, device, pointer of every tensor: ~0.1 us each in CPython),
which is most of the core's per-call cost. A :class:`CallMemo` keeps an :class:`Entry` per earlier valid
keyword call, filed by its number of keywords: reading an entry's keywords from a call with as many succeeds
exactly when the call has the same ones (in any order; a KeyError otherwise). An entry holds the scalar
arguments, which arguments were None, and a ``TensorGuards`` of torch's own (native) guard code over the tensors,
which checks in one call each tensor's dtype, device, dispatch keys, ``requires_grad``, sizes and strides (sizes
the operator marks per call left free). A call matching an entry needs only its per-call values (lengths,
pointers, capture state) checked by the operator's fast path, which then builds the same record the validator
would. Anything else, and any doubt, goes to the validator.

The memo also keeps, per entry, the implementation chosen for the call's per-call values (with the runner its
``bind`` returned for them, ``atrex.plugin.ImplSpec.bind``). Everything in it holds
for one registry and one settings object (the device classification and the eligible implementations depend on
them; ``env.reload()`` and a test's registry replace them): the memo empties itself when either changes. The
kept choice relies on the check contract (``atrex.plugin.ImplSpec.check``): a verdict depends on the record's
host fields and its tensors' metadata only.

No guard code (a torch without ``torch._C._dynamo.guards.TensorGuards``, or one whose behaviour differs from
what :func:`guards_available` tests): no memo, every call validates in full.
"""

from __future__ import annotations

import functools
import threading

import torch

__all__ = ["CallMemo", "Entry", "chosen_impl", "classed", "guards_available", "unclassed_replace"]

_grad_enabled = torch.is_grad_enabled


@functools.cache
def guards_available() -> bool:
    """torch's ``TensorGuards`` exists and behaves as the memo needs (checked once: a match, a free size, and a
    dtype, stride, size and type mismatch)."""
    try:
        from torch._C._dynamo.guards import TensorGuards

        t = torch.zeros(4, 3)
        g = TensorGuards(t, dynamic_dims_sizes=[[None, 3]], dynamic_dims_strides=[[3, 1]])
        return (g.check(t) and g.check(torch.zeros(5, 3)) and not g.check(t.double()) and not g.check(t.t())
                and not g.check(torch.zeros(4, 2)) and not g.check(None))
    except Exception:  # another torch: validate every call in full
        return False


class Entry:
    """One validated call class: its generated class test (``test``), the grad mode it was validated under, whether
    the operator checks every call's values (``cpu``) and the implementations chosen for it."""

    __slots__ = ("chosen", "cpu", "grad", "test")

    def keep_impl(self, dyn, impl) -> None:
        """Keep the implementation chosen for the per-call values ``dyn`` (``chosen.get(dyn)`` reads it); a full
        table starts over (eager serving sees a new ``max_seqlen_k`` each step: recent values stay)."""
        if len(self.chosen) >= CallMemo.MAX_CHOSEN:
            self.chosen.clear()
        self.chosen[dyn] = impl


class CallMemo:
    """Entries per number of keywords; bounded, thread-safe to read."""

    MAX_PATTERNS = 64
    MAX_PER_PATTERN = 16
    MAX_CHOSEN = 1024

    def __init__(self):
        self.by_count: dict[int, list[Entry]] = {}  # (read by the operators' fast paths)
        self.registry = self.settings = None  # what the entries hold for
        self._lock = threading.Lock()

    def holds_for(self, registry, settings) -> bool:
        """Whether the entries hold for ``registry`` and ``settings``; if not, the memo empties and now holds
        for them."""
        if self.registry is registry and self.settings is settings:
            return True
        with self._lock:
            self.by_count.clear()
            self.registry, self.settings = registry, settings
        return False

    def match(self, kw: dict, registry, settings):
        """What the class test of the class the keyword call ``kw`` belongs to under ``registry`` and ``settings``
        returns for it (``add``'s ``body``; by default ``(entry, per-call values)``), or None."""
        if (self.registry is not registry or self.settings is not settings) and not self.holds_for(registry,
                                                                                                 settings):
            return None
        cands = self.by_count.get(len(kw))
        if not cands:
            return None
        grad = _grad_enabled()
        for e in cands:
            try:
                if e.grad is grad:
                    hit = e.test(kw)
                    if hit is not None:
                        return hit
            except KeyError:  # another keyword set of the same size
                continue
        return None

    def add(self, kw: dict, guarded: tuple, dynamic: dict, typed: tuple, per_call: tuple, cpu: bool,
            body: tuple | None = None) -> Entry | None:
        """Keep the class of the valid call ``kw``: ``guarded`` names its tensors the guard checks (``dynamic``:
        name -> the dims whose size varies per call), ``typed`` the arguments of which only the type matters,
        ``per_call`` the scalars the operator's fast path checks itself (lengths; their types fixed); every other
        argument is None or a scalar compared by type and value. ``cpu``: the operator checks the values of every
        call (``atrex.api._values.wanted``). ``body``: ``(lines, constants)``, the operator's per-call checks and
        record, run by the class test after a match (see :func:`_class_test`). None when guards are unavailable
        or the memo is full."""
        if not guards_available():
            return None
        from torch._C._dynamo.guards import TensorGuards

        names = tuple(kw)
        ts = [kw[n] for n in guarded]
        sizes = [[None if i in dynamic.get(n, ()) else s for i, s in enumerate(t.shape)] for n, t in zip(guarded, ts)]
        guard = TensorGuards(*ts, dynamic_dims_sizes=sizes, dynamic_dims_strides=[list(t.stride()) for t in ts])
        e = Entry()
        e.test = _class_test(kw, guarded, typed, per_call, guard, e, body)
        e.grad, e.cpu, e.chosen = _grad_enabled(), cpu, {}
        with self._lock:
            cands = self.by_count.get(len(names))
            if cands is None:
                if len(self.by_count) >= self.MAX_PATTERNS:
                    return None
                cands = self.by_count[len(names)] = []
            if len(cands) >= self.MAX_PER_PATTERN:
                return None
            cands.append(e)
        return e

    def clear(self) -> None:
        with self._lock:
            self.by_count.clear()

    def __len__(self) -> int:
        return sum(len(c) for c in self.by_count.values())


def _class_test(kw: dict, guarded: tuple, typed: tuple, per_call: tuple, guard, entry: Entry, body):
    """``test(kw)``, generated per class: None unless the keyword call ``kw`` is of ``kw``'s class (a KeyError for
    another keyword set of as many), else what ``body`` returns. A scalar the class fixes costs one comparison
    with its value held as a constant: an identity test for None and the bools, type then value otherwise; the
    type only for ``typed`` and ``per_call``; the guard over ``guarded`` last.

    ``body``: ``(lines, constants)``: statements run after a match, which see every argument as ``a_<keyword>``,
    ``entry`` and the constants, and return the operator's hit or None (a per-call rule failed). None: return
    ``(entry, (per-call values...))``. The test's own names start with ``_``; a name the body assigns must not be
    one of the test's constants (it would turn the constant into an unbound local: refused here)."""
    lines, consts = body if body is not None else (
        [f"return entry, ({''.join(f'a_{n}, ' for n in per_call)})"], {})
    ns = {"_check": guard.check, "entry": entry}
    src = ["def test(kw):"]
    for i, name in enumerate(n for n in kw if n not in guarded and n not in per_call):
        val = kw[name]
        ns[f"_t{i}"], ns[f"_c{i}"] = type(val), val
        x = f"a_{name}"
        src.append(f"    {x} = kw[{name!r}]")
        if name in typed:
            src.append(f"    if type({x}) is not _t{i}: return None")
        elif val is None or type(val) is bool:
            src.append(f"    if {x} is not _c{i}: return None")
        else:  # (types first: a tensor passed where a scalar was must not reach the value comparison)
            src.append(f"    if type({x}) is not _t{i} or {x} != _c{i}: return None")
    for i, name in enumerate(per_call):
        ns[f"_p{i}"] = type(kw[name])
        src.append(f"    a_{name} = kw[{name!r}]")
        src.append(f"    if type(a_{name}) is not _p{i}: return None")
    src += [f"    a_{n} = kw[{n!r}]" for n in guarded]
    src.append(f"    if not _check({''.join(f'a_{n}, ' for n in guarded)}): return None")
    src += [f"    {line}" for line in lines]
    if ns.keys() & consts.keys():
        raise ValueError(f"class test body constants {sorted(ns.keys() & consts.keys())} shadow the test's own")
    ns.update(consts)
    exec(compile("\n".join(src), f"<atrex memo class test {len(kw)}>", "exec"), ns)
    test = ns["test"]
    shadowed = set(test.__code__.co_varnames) & ns.keys()
    if shadowed:
        raise ValueError(f"class test body assigns {sorted(shadowed)}, names of the test's constants")
    return test


def chosen_impl(entry: Entry, dyn, registry, op: str, call):
    """The implementation ``entry`` chose for the per-call values ``dyn``, else the registry's choice, bound to
    the class and ``dyn`` (``ImplSpec.bind``) and kept."""
    impl = entry.chosen.get(dyn)
    if impl is None:
        impl = registry.select(op, call).bound(call)
        entry.keep_impl(dyn, impl)
    return impl


def classed(call, entry):
    """The validator's record ``call`` carrying the class it was just kept under (``entry``; None: not kept), as the
    memo's later records of the class do: launchers key their plans on it, so the first call's plan serves them."""
    return call if entry is None else call._replace(cls=entry)


def unclassed_replace(record_type) -> None:
    """Give ``record_type`` (a NamedTuple whose last field ``cls`` holds the memo entry that served the record) a
    ``_replace`` that resets ``cls``: a changed record may no longer be what its class says. (typing.NamedTuple
    refuses a ``_replace`` in the class body.)"""
    plain = record_type._replace

    def _replace(self, **changes):
        changes.setdefault("cls", None)
        return plain(self, **changes)

    record_type._replace = _replace
