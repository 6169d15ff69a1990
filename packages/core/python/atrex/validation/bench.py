"""``atrex bench <op>``: the operator's cases across every eligible implementation and the known
baselines, in one run, in alternating order. Every contender is checked against the reference before it
is timed; one that fails is reported ``wrong`` with its error, never timed. Each case's rows are handed to
``on_case`` the moment the case is measured (the CLI appends them to the history and rewrites the markdown
then), so a run stopped by ``budget_s`` or killed keeps what it measured; ``skip_cases`` resumes one."""

from __future__ import annotations

import contextlib
import signal
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from atrex.dispatch.registry import get_registry
from atrex.errors import AtrexError
from atrex.validation import baselines as B
from atrex.validation.cases import OP_IDS, Case, cases
from atrex.validation.records import provenance
from atrex.validation.report import (  # noqa: F401  (re-exported: the bench's public surface)
    END,
    START,
    append_history,
    load_history,
    markdown,
    plot,
    readme_section,
    update_readme,
)
from atrex.validation.timing import time_ms
from atrex.validation.verify import compare, reference_result, run_impl


@dataclass
class Entry:
    """One contender of a case: the timed call and its one-off check (``(ok, detail)``)."""

    label: str
    fn: Callable[[], object]
    check: Callable[[], tuple[bool, str]]


class Budget(BaseException):
    """The time budget ran out in the middle of a case (a BaseException, as KeyboardInterrupt: the
    per-contender ``except Exception`` handlers must not swallow it)."""


def _normalize(op: str, kw: dict):
    from atrex.api import chunk_gdn, flash_attn, gdn_decode

    if op == "flash_attn":
        return flash_attn.normalize(**kw)
    return gdn_decode.normalize(**kw) if op == "gdn_decode" else chunk_gdn.normalize_gdn_call(**kw)


def _run_call(op: str, kw: dict, impl):
    from atrex.api import chunk_gdn, flash_attn, gdn_decode

    if op == "flash_attn":
        return flash_attn.run_call(flash_attn.normalize(**kw), impl)
    if op == "gdn_decode":  # updates kw's pool in place on every call, as a serving step does
        return gdn_decode.run_call(gdn_decode.normalize(**kw), impl)
    return chunk_gdn.run_call(chunk_gdn.normalize_gdn_call(**kw), impl)


def default_read(op: str, kw: dict, res) -> tuple:
    """A baseline's result in ATREX's comparable form when its maker gives no reader."""
    if op == "flash_attn":
        out = res[0] if isinstance(res, tuple) else res
        return out, (res[1] if isinstance(res, tuple) and kw.get("return_softmax_lse") else None)
    return res[0], res[1]


class Reference:
    """The case's reference results, computed on first use and kept (one per call the baselines name)."""

    def __init__(self, op: str, kw: dict, device):
        self.op, self.kw, self.device, self._main = op, kw, device, None

    def get(self, ref_kw: dict | None = None):
        if ref_kw is not None:
            return reference_result(self.op, ref_kw, self.device)
        if self._main is None:
            self._main = reference_result(self.op, self.kw, self.device)
        return self._main


def baseline_entries(op: str, kw: dict, target, ref: Reference, makers: dict, graph: bool):
    """(entries, rows): an Entry per applicable baseline; a ``skipped`` / ``error`` row for the others."""
    entries, rows = [], []
    for label, make in makers.items():
        try:
            made = make(kw, target, graph=graph)
        except Exception as exc:  # a baseline that cannot even plan this call is reported, not fatal
            rows.append({"contender": label, "error": f"{type(exc).__name__}: {exc}"[:300]})
            continue
        if isinstance(made, B.Skip) or made is None:
            rows.append({"contender": label, "skipped": str(made or "does not apply")})
            continue

        def check(b=made):
            res = b.fn()
            got = b.result(res) if b.result else default_read(op, kw, res)
            return compare(op, b.ref_kw or kw, got, ref.get(b.ref_kw))

        entries.append(Entry(label, made.fn, check))
    return entries, rows


def impl_entries(op: str, kw: dict, device, ref: Reference) -> list[Entry]:
    """An Entry per eligible ATREX implementation, called through validation and dispatch as users do."""
    call = _normalize(op, kw)
    out = []
    for impl in get_registry().all_candidates(OP_IDS[op], call.target.id):
        if (impl.is_reference and device.type != "cpu") or not impl.safe_check(call).ok:
            continue
        out.append(Entry(impl.id, lambda impl=impl: _run_call(op, kw, impl),
                         lambda impl=impl: compare(op, kw, run_impl(op, impl, kw), ref.get())))
    return out


def measure(entries: list[Entry], device, graph: bool) -> list[dict]:
    """Check each entry, then time the correct ones A B B A (once forward, once in reverse order).
    Returns a row per entry: ``{contender, ms}``, ``{contender, wrong}`` or ``{contender, error}``."""
    rows, ok = {}, []
    for e in entries:
        try:
            good, detail = e.check()
        except Exception as exc:
            rows[e.label] = {"contender": e.label, "error": f"{type(exc).__name__}: {exc}"[:300]}
            continue
        if good:
            ok.append(e)
        else:
            rows[e.label] = {"contender": e.label, "wrong": detail}
    times: dict[str, list[float]] = {e.label: [] for e in ok}
    for order in (ok, ok[::-1]):
        for e in order:
            if e.label in rows:  # failed an earlier timing
                continue
            try:
                times[e.label].append(time_ms(e.fn, device, graph=graph))
            except Exception as exc:
                rows[e.label] = {"contender": e.label, "error": f"timing: {type(exc).__name__}: {exc}"[:300]}
    for e in ok:
        if e.label not in rows:
            rows[e.label] = {"contender": e.label, "ms": sum(times[e.label]) / len(times[e.label])}
    return [rows[e.label] for e in entries if e.label in rows]


def measure_case(op: str, case: Case, device, graph: bool, peers: Iterable = ()) -> list[dict]:
    """One case's rows (contender-level dicts, without provenance): ATREX's implementations and the baselines
    measured here, then each peer's rows."""
    kw = case.inputs(device, seed=1)
    try:
        target = _normalize(op, kw).target
    except AtrexError as exc:
        return [{"contender": "-", "error": str(exc).splitlines()[0]}]
    ref = Reference(op, kw, device)
    entries = impl_entries(op, kw, device, ref)
    more, rows = baseline_entries(op, kw, target, ref, B.BASELINES[op], graph)
    rows = measure(entries + more, device, graph) + rows
    for peer in peers:
        rows += peer.run_case(case.name)
    return rows


def finish_rows(op: str, case: Case, rows: list[dict], common: dict) -> list[dict]:
    """Records of one case: throughput and the ratio to the case's first timed baseline added."""
    flops, nbytes = case.flops(), case.bytes()
    timed = {r["contender"]: r["ms"] for r in rows if "ms" in r}
    base = next((lbl for lbl in B.BASELINES[op] if lbl in timed), None)
    out = []
    for r in rows:
        rec = {**common, "case": case.name, "kind": case.kind, **r}
        if "ms" in r:
            rec.update(tflops=flops / r["ms"] / 1e9, tbps=nbytes / r["ms"] / 1e9, baseline=base, correct=True,
                       speedup_vs_baseline=(timed[base] / r["ms"]) if base else None)
        elif "wrong" in r:
            rec["correct"] = False
        out.append(rec)
    return out


class _Deadline:
    """``budget_s`` as a deadline: a case is not started when the longest case so far would overrun it,
    and SIGALRM (main thread, POSIX) interrupts a case that does (its rows are dropped)."""

    def __init__(self, budget_s: float | None, start: float):
        self.end = None if budget_s is None else start + budget_s
        self.longest = 0.0
        self.armed = False

    def __enter__(self):
        if self.end is not None and hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread():
            def fire(signum, frame):
                raise Budget()
            self._old = signal.signal(signal.SIGALRM, fire)
            signal.setitimer(signal.ITIMER_REAL, max(self.end - time.monotonic(), 0.001))
            self.armed = True
        return self

    def __exit__(self, *exc):
        if self.armed:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, self._old)
        return False

    def room_for_next(self) -> bool:
        return self.end is None or time.monotonic() + self.longest <= self.end

    @contextlib.contextmanager
    def held(self):
        """SIGALRM blocked while a measured case's rows are written (a pending one fires after)."""
        if not self.armed:
            yield
            return
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
        try:
            yield
        finally:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGALRM})


def run_bench(op: str, device, *, size: str | None, match: str | None = None, graph: bool = False,
              progress: bool = True, on_case: Callable[[list[dict]], None] | None = None,
              skip_cases: Iterable[str] = (), budget_s: float | None = None, start: float | None = None,
              peers: Iterable = (), run_id: str | None = None, common: dict | None = None) -> dict:
    """Benchmark the selected cases; every contender is checked against the reference first. Returns
    ``{"records", "done", "left", "stopped"}`` (``stopped``: None, or why the run ended early)."""
    from tqdm import tqdm

    common = {**provenance(str(device)), "run_id": run_id or uuid.uuid4().hex[:12], "op": op, "graph": graph,
              **(common or {})}
    skip = set(skip_cases)
    todo = [c for c in cases(op, size, match) if c.name not in skip]
    records, done, stopped = [], [], None
    deadline = _Deadline(budget_s, start if start is not None else time.monotonic())
    with deadline:
        try:
            for case in tqdm(todo, desc=f"atrex bench {op}", disable=not progress, unit="case"):
                if not deadline.room_for_next():
                    stopped = "budget"
                    break
                t0 = time.monotonic()
                recs = finish_rows(op, case, measure_case(op, case, device, graph, peers), common)
                deadline.longest = max(deadline.longest, time.monotonic() - t0)
                with deadline.held():
                    records += recs
                    done.append(case.name)
                    if on_case:
                        on_case(recs)
        except Budget:  # the case under way is dropped; everything before it is written
            stopped = "budget"
    return {"records": records, "done": done, "left": [c.name for c in todo if c.name not in done],
            "stopped": stopped}
