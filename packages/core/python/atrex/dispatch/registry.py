"""The registry: implementations per (operator, target), selection, forcing, explain.

Selection order: candidates registered for (op, target) sorted by (priority, plugin, id);
``ATREX_DISABLE`` removes some; ``ATREX_IMPL_<OP>`` forces one (loud error if it is
ineligible); otherwise the first whose ``check`` passes runs.
"""

from __future__ import annotations

import importlib
import threading
from dataclasses import dataclass, field
from typing import Any

from atrex import env
from atrex.dispatch.plugins import discover
from atrex.eligibility import Eligibility, Reason
from atrex.errors import AtrexNotSupportedError
from atrex.plugin import DeviceRule, ImplSpec

__all__ = ["Impl", "Registry", "get_registry", "invalidate_caches", "set_registry_for_tests"]

#: What the core registers itself: the torch references, lowest priority, every target.
CORE_REFERENCE = (
    ImplSpec(
        op="flash_attn_varlen",
        id="core.reference",
        archs=("*",),
        priority=1_000_000,
        check="atrex.reference.flash_attn:check",
        run="atrex.reference.flash_attn:run",
        summary="torch reference (fp32 math); CPU, or accelerators with ATREX_ALLOW_REFERENCE=1",
    ),
    ImplSpec(
        op="chunk_gated_delta_rule",
        id="core.reference",
        archs=("*",),
        priority=1_000_000,
        check="atrex.reference.chunk_gdn:check",
        run="atrex.reference.chunk_gdn:run",
        summary="torch chunked reference (chunk 64, fp32 state); CPU, or accelerators with ATREX_ALLOW_REFERENCE=1",
    ),
    ImplSpec(
        op="fused_recurrent_gated_delta_rule",
        id="core.reference",
        archs=("*",),
        priority=1_000_000,
        check="atrex.reference.gdn_decode:check",
        run="atrex.reference.gdn_decode:run",
        summary="torch recurrent reference over the state pool (fp32 state); CPU, or accelerators with "
                "ATREX_ALLOW_REFERENCE=1",
    ),
)

#: Families served by installable vendor wheels (used in "nothing installed" messages).
VENDOR_EXTRA = {"nvidia": "atrex[nvidia]", "ppu": "atrex[ppu]"}


def _resolve(ref: str):
    module, _, attr = ref.partition(":")
    obj = importlib.import_module(module)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


@dataclass(eq=False)
class Impl:
    """A registered implementation with its check/run resolved on first use."""

    spec: ImplSpec
    plugin: str
    _check: Any = None
    _run: Any = None
    _prewarm: Any = None
    _bind: Any = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def id(self) -> str:
        return self.spec.id

    @property
    def is_reference(self) -> bool:
        return self.spec.id == "core.reference"

    def check(self, call) -> Eligibility:
        fn = self._check
        if fn is None:
            fn = self._check = _resolve(self.spec.check)
        return fn(call)

    def safe_check(self, call) -> Eligibility:
        """check(), with an import or internal failure turned into a reason (never raised)."""
        try:
            fn = self._check  # check(), inlined: this runs per candidate on every dispatch
            if fn is None:
                fn = self._check = _resolve(self.spec.check)
            elig = fn(call)
        except Exception as exc:
            return Eligibility.no(Reason("check_failed", self.spec.id, f"{type(exc).__name__}: {exc}",
                                         "a check() that returns Eligibility"))
        if not isinstance(elig, Eligibility):  # a bool/None would crash selection on `.ok`
            return Eligibility.no(Reason("check_failed", self.spec.id, f"check() returned {type(elig).__name__}",
                                         "a check() that returns Eligibility"))
        return elig

    @property
    def run(self):
        fn = self._run
        if fn is None:
            fn = self._run = _resolve(self.spec.run)
        return fn

    @property
    def prewarm(self):
        if self.spec.prewarm is None:
            return None
        if self._prewarm is None:
            self._prewarm = _resolve(self.spec.prewarm)
        return self._prewarm

    def bound(self, call):
        """This implementation for the memo-served ``call``'s class and per-call key: with ``run`` replaced by the
        runner its ``bind`` returns (:class:`Bound`), else itself (``ImplSpec.bind``)."""
        if self.spec.bind is None:
            return self
        fn = self._bind
        if fn is None:
            fn = self._bind = _resolve(self.spec.bind)
        runner = fn(call)
        return self if runner is None else Bound(self, runner)


class Bound:
    """An :class:`Impl` whose ``run`` is a runner ``bind`` returned; everything else is the implementation's."""

    __slots__ = ("impl", "run")

    def __init__(self, impl: Impl, run):
        self.impl, self.run = impl, run

    def __getattr__(self, name):
        return getattr(self.impl, name)

    def bound(self, call):
        return self


class Registry:
    def __init__(self, plugin_records: list, impls: list[Impl]):
        self.plugins = plugin_records
        self.impls = impls
        #: How the loaded plugins recognise their devices (target.classify_device reads them).
        self.device_rules: tuple[DeviceRule, ...] = tuple(
            rule for rec in plugin_records if rec.ok for rule in getattr(rec.manifest, "devices", ()))
        self._cands: dict[tuple[str, str], tuple[Impl, ...]] = {}
        #: (op, target id) -> (forced impl id or None, enabled candidates): what select() reads from the
        #: settings, derived once. Both caches belong to the Settings object they were derived from:
        #: env.reload() replaces that object, and select() then forgets them (see _sync_settings).
        self._plans: dict[tuple[str, str], tuple[str | None, tuple[Impl, ...]]] = {}
        self._settings: env.Settings | None = None

    @property
    def failed_plugins(self) -> list:
        return [p for p in self.plugins if not p.ok]

    def all_candidates(self, op: str, target_id: str) -> tuple[Impl, ...]:
        """Every implementation registered for (op, target), disabled ones included, in order."""
        return tuple(sorted((i for i in self.impls if i.spec.op == op and (target_id in i.spec.archs
                                                                           or "*" in i.spec.archs)),
                            key=lambda i: (i.spec.priority, i.plugin, i.spec.id)))

    def _sync_settings(self) -> None:
        """Drop the settings-derived caches when the settings changed (env.reload() makes a new object)."""
        current = env.settings()
        if current is not self._settings:
            self._cands.clear()
            self._plans.clear()
            self._settings = current

    def candidates(self, op: str, target_id: str) -> tuple[Impl, ...]:
        """Enabled candidates for (op, target), cached."""
        self._sync_settings()
        key = (op, target_id)
        hit = self._cands.get(key)
        if hit is None:
            disabled = env.settings().disabled
            hit = tuple(i for i in self.all_candidates(op, target_id) if i.spec.id not in disabled)
            self._cands[key] = hit
        return hit

    def find(self, op: str, impl_id: str) -> Impl | None:
        for i in self.impls:
            if i.spec.op == op and i.spec.id == impl_id:
                return i
        return None

    def select(self, op: str, call) -> Impl:
        """The implementation that runs ``call``, or AtrexNotSupportedError with every reason."""
        if self._settings is not env._settings:  # an identity test per call instead of settings lookups
            self._sync_settings()
        key = (op, call.target.id)
        plan = self._plans.get(key)
        if plan is None:
            plan = self._plans[key] = (env.settings().forced_impl.get(op), self.candidates(*key))
        forced, cands = plan
        if forced is not None:
            return self._select_forced(op, call, forced)
        for impl in cands:
            if impl.safe_check(call).ok:
                return impl
        raise self.not_supported(op, call, cands)

    def _select_forced(self, op: str, call, forced: str) -> Impl:
        target = call.target
        impl = self.find(op, forced)
        if impl is None:
            raise AtrexNotSupportedError(
                f"{op}: ATREX_IMPL_{op.upper()}={forced!r} names no registered implementation "
                f"(registered: {', '.join(sorted({i.id for i in self.impls if i.spec.op == op}))})",
                op=op, target=target.id, failed_plugins=self.failed_plugins)
        if target.id not in impl.spec.archs and "*" not in impl.spec.archs:
            raise AtrexNotSupportedError(
                f"{op}: forced implementation {forced!r} does not serve target {target.id} "
                f"(it serves {', '.join(impl.spec.archs)})", op=op, target=target.id,
                failed_plugins=self.failed_plugins)
        elig = impl.safe_check(call)
        if not _forcible(elig):
            raise AtrexNotSupportedError(
                f"{op}: forced implementation {forced!r} (ATREX_IMPL_{op.upper()}) is not eligible "
                f"for this call on {target.describe()}", op=op, target=target.id,
                rejections=[(impl.id, elig)], failed_plugins=self.failed_plugins)
        return impl

    def not_supported(self, op: str, call, cands) -> AtrexNotSupportedError:
        target = call.target
        rejections = [(i.id, i.safe_check(call)) for i in cands]
        disabled = [i.id for i in self.all_candidates(op, target.id) if i not in cands]
        msg = f"{op}: no installed implementation supports this call on {target.describe()}"
        if disabled:
            msg += f" (disabled by ATREX_DISABLE: {', '.join(disabled)})"
        vendor = [i for i in cands if not i.is_reference]
        if not vendor and target.family in VENDOR_EXTRA:
            msg += f"; no {target.family} implementation is installed for {target.id}: pip install " \
                   f"'{VENDOR_EXTRA[target.family]}'"
        return AtrexNotSupportedError(msg, op=op, target=target.id, rejections=rejections,
                                      failed_plugins=self.failed_plugins)

    def explain(self, op: str, call) -> Trace:
        target = call.target
        forced = env.settings().forced_impl.get(op)
        rows = []
        chosen = None
        for impl in self.all_candidates(op, target.id):
            if impl.spec.id in env.settings().disabled:
                rows.append((impl.id, impl.spec.priority, None, "disabled (ATREX_DISABLE)"))
                continue
            elig = impl.safe_check(call)
            note = ""
            if forced is not None and impl.id == forced and not elig.ok and _forcible(elig):
                note = "CHOSEN (forced over its policy.* preference)"
            elif forced is not None and impl.id != forced:
                note = f"skipped: ATREX_IMPL_{op.upper()}={forced}"
            elif elig.ok and chosen is None:
                chosen = impl.id
                note = "CHOSEN"
            rows.append((impl.id, impl.spec.priority, elig, note))
        if forced is not None:  # mirror select(): the forced one must exist, serve the target and pass
            impl = self.find(op, forced)
            serves = impl is not None and (target.id in impl.spec.archs or "*" in impl.spec.archs)
            chosen = forced if serves and _forcible(impl.safe_check(call)) else None
        return Trace(op=op, target=target, rows=rows, chosen=chosen, forced=forced,
                     failed_plugins=self.failed_plugins)


def _forcible(elig: Eligibility) -> bool:
    """A forced implementation runs when eligible or when it declines only by preference (``policy.*``
    reasons, e.g. FA4 handing decode shapes to a split-KV kernel); a domain reason always refuses."""
    return elig.ok or all(r.code.startswith("policy.") for r in elig.reasons)


@dataclass
class Trace:
    """What dispatch would do for one call, without running anything."""

    op: str
    target: Any
    rows: list
    chosen: str | None
    forced: str | None
    failed_plugins: list

    def __str__(self) -> str:
        lines = [f"{self.op} on {self.target.describe()}"]
        if self.forced:
            lines.append(f"  forced by ATREX_IMPL_{self.op.upper()}={self.forced}")
        for impl_id, prio, elig, note in self.rows:
            if elig is None:
                lines.append(f"  {impl_id:<28} prio {prio:<8} {note}")
            elif elig.ok:
                lines.append(f"  {impl_id:<28} prio {prio:<8} eligible {note}".rstrip())
            else:
                lines.append(f"  {impl_id:<28} prio {prio:<8} declined {note}".rstrip())
                for r in elig.reasons:
                    lines.append(f"      - {r}")
        if not self.rows:
            lines.append("  (no implementation registered for this target)")
        for p in self.failed_plugins:
            lines.append(f"  ! plugin {p.name} ({p.distribution} {p.version}) {p.state}: {p.error}")
        lines.append(f"  => {self.chosen or 'NOT SUPPORTED'}")
        return "\n".join(lines)

    def as_dict(self) -> dict:
        return {
            "op": self.op,
            "target": self.target.id,
            "device": self.target.describe(),
            "forced": self.forced,
            "chosen": self.chosen,
            "candidates": [
                {"id": i, "priority": p, "eligible": None if e is None else e.ok,
                 "reasons": [] if e is None else [r.as_dict() for r in e.reasons], "note": n}
                for i, p, e, n in self.rows
            ],
            "failed_plugins": [p.as_dict() for p in self.failed_plugins],
        }


_registry: Registry | None = None
_lock = threading.Lock()


def build_registry(records=None) -> Registry:
    if records is None:
        records = discover()
    impls = [Impl(spec, "core") for spec in CORE_REFERENCE]
    for rec in records:
        if rec.ok:
            impls.extend(Impl(spec, rec.name) for spec in rec.manifest.impls)
    return Registry(records, impls)


def get_registry() -> Registry:
    global _registry
    reg = _registry
    if reg is None:
        with _lock:
            if _registry is None:
                _registry = build_registry()
            reg = _registry
    return reg


@env.on_reload
def invalidate_caches() -> None:
    """Forget discovery and selection caches (run by ``env.reload()``; tests may call it too)."""
    global _registry
    with _lock:
        _registry = None


def set_registry_for_tests(reg: Registry | None) -> None:
    global _registry
    _registry = reg
