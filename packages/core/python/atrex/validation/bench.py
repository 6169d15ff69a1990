"""``atrex bench <op>``: the operator's cases across every eligible implementation and the known
baselines, in one run, in alternating order; markdown table, PNG plot, JSONL history."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import torch

from atrex.dispatch.registry import get_registry
from atrex.errors import AtrexError
from atrex.validation import baselines as B
from atrex.validation.cases import OP_IDS, Case, cases
from atrex.validation.records import provenance
from atrex.validation.timing import time_ms
from atrex.validation.verify import compare, reference_result, run_impl


def contenders(op: str, case: Case, kw: dict, device) -> list[tuple[str, object]]:
    """(label, zero-arg callable) for each eligible ATREX implementation (through validation and
    dispatch, as users call it) and each applicable baseline."""
    from atrex.api import chunk_gdn, flash_attn, gdn_decode

    call = (flash_attn.normalize(**kw) if op == "flash_attn" else gdn_decode.normalize(**kw) if op == "gdn_decode"
            else chunk_gdn.normalize_gdn_call(**kw))
    out = []
    for impl in get_registry().all_candidates(OP_IDS[op], call.target.id):
        if impl.is_reference and device.type != "cpu":
            continue
        if not impl.safe_check(call).ok:
            continue
        if op == "flash_attn":
            out.append((impl.id, lambda impl=impl: flash_attn.run_call(flash_attn.normalize(**kw), impl)))
        elif op == "gdn_decode":  # updates kw's pool in place on every call, as a serving step does
            out.append((impl.id, lambda impl=impl: gdn_decode.run_call(gdn_decode.normalize(**kw), impl)))
        else:
            out.append((impl.id, lambda impl=impl: chunk_gdn.run_call(chunk_gdn.normalize_gdn_call(**kw), impl)))
    for name, make in B.BASELINES[op].items():
        fn = make(kw, call.target)
        if fn is not None:
            out.append((name, fn))
    return out


def _check_baseline(op, kw, fn, ref) -> bool | None:
    res = fn()
    if op == "flash_attn":
        if isinstance(res, list):  # per-sequence SDPA outputs [1, H, s, D]
            res = torch.cat([r[0].transpose(0, 1) for r in res], 0)
        out = res[0] if isinstance(res, tuple) else res
        lse = res[1] if isinstance(res, tuple) and kw.get("return_softmax_lse") else None
        return compare(op, kw, (out, lse), ref)[0]
    o, s = res
    if op == "gdn_decode":  # a baseline without a pool: outputs only
        return compare(op, kw, (o, None), ref)[0]
    return compare(op, kw, (o, s), ref)[0]


def run_bench(op: str, device, *, size: str | None, match: str | None = None, graph: bool = False,
              progress: bool = True) -> list[dict]:
    """Benchmark the selected cases; every contender is checked against the reference first."""
    from tqdm import tqdm

    run_id = uuid.uuid4().hex[:12]
    prov = provenance(str(device))
    records = []
    selected = cases(op, size, match)
    for case in tqdm(selected, desc=f"atrex bench {op}", disable=not progress, unit="case"):
        kw = case.inputs(device, seed=1)
        try:
            rows = contenders(op, case, kw, device)
        except AtrexError as exc:
            records.append({**prov, "run_id": run_id, "op": op, "case": case.name, "contender": "-",
                            "error": str(exc).splitlines()[0]})
            continue
        ref = reference_result(op, kw, device)
        correct = {}
        impl_ids = {i.id: i for i in get_registry().impls if i.spec.op == OP_IDS[op]}
        for label, fn in rows:
            try:
                if label in impl_ids:
                    correct[label] = compare(op, kw, run_impl(op, impl_ids[label], kw), ref)[0]
                else:
                    correct[label] = _check_baseline(op, kw, fn, ref)
            except Exception as exc:
                correct[label] = False
                records.append({**prov, "run_id": run_id, "op": op, "case": case.name, "contender": label,
                                "error": f"{type(exc).__name__}: {exc}"[:300]})
        times: dict[str, list[float]] = {label: [] for label, _ in rows}
        # A B B A: every contender is timed once forward and once in reverse order.
        for order in (rows, rows[::-1]):
            for label, fn in order:
                if correct.get(label) is False:
                    continue
                times[label].append(time_ms(fn, device, graph=graph))
        flops, nbytes = case.flops(), case.bytes()
        base_label = next((lbl for lbl, _ in rows if lbl in B.BASELINES[op]), None)
        base_ms = sum(times[base_label]) / len(times[base_label]) if base_label and times.get(base_label) else None
        for label, _ in rows:
            if not times[label]:
                continue
            ms = sum(times[label]) / len(times[label])
            records.append({
                **prov, "run_id": run_id, "op": op, "case": case.name, "kind": case.kind, "contender": label,
                "ms": ms, "tflops": flops / ms / 1e9, "tbps": nbytes / ms / 1e9,
                "speedup_vs_baseline": (base_ms / ms) if base_ms else None, "baseline": base_label,
                "correct": bool(correct.get(label)), "graph": graph,
            })
    return records


def append_history(records: list[dict], history: Path) -> None:
    history.parent.mkdir(parents=True, exist_ok=True)
    with history.open("a") as f:
        for r in records:
            f.write(json.dumps(r, sort_keys=True) + "\n")


def load_history(history: Path) -> list[dict]:
    if not history.exists():
        return []
    return [json.loads(line) for line in history.read_text().splitlines() if line.strip()]


def markdown(records: list[dict]) -> str:
    """One table per run: case, contender, time, throughput, ratio to the baseline, correctness."""
    ok = [r for r in records if "ms" in r]
    if not ok:
        return "_no results_\n"
    head = ok[0]
    lines = [
        f"{head['op']} on {head['device']} (driver {head['driver'] or '-'}, torch {head['torch']}, "
        f"triton {head['triton'] or '-'}, flash-attn-4 {head['flash_attn_4'] or '-'}, fla-core "
        f"{head['fla_core'] or '-'}), commit {head['commit']}, {head['date']}"
        + (", CUDA-graph replay" if head.get("graph") else ""),
        "",
        "| case | implementation | time (ms) | TFLOP/s | TB/s | vs baseline | correct |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in ok:
        ratio = f"{r['speedup_vs_baseline']:.2f}x {r['baseline']}" if r.get("speedup_vs_baseline") else "-"
        lines.append(f"| {r['case']} | {r['contender']} | {r['ms']:.4f} | {r['tflops']:.1f} | {r['tbps']:.2f} | "
                     f"{ratio} | {'yes' if r['correct'] else 'NO'} |")
    errs = [r for r in records if "error" in r]
    for r in errs:
        lines.append(f"\n- {r['case']} / {r['contender']}: {r['error']}")
    return "\n".join(lines) + "\n"


def plot(records: list[dict], path: Path) -> Path:
    """Grouped bars of time per case and contender (log scale)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ok = [r for r in records if "ms" in r]
    case_names = list(dict.fromkeys(r["case"] for r in ok))
    labels = list(dict.fromkeys(r["contender"] for r in ok))
    fig, ax = plt.subplots(figsize=(max(6, 0.6 * len(case_names) * max(1, len(labels))), 4.5))
    width = 0.8 / max(1, len(labels))
    for i, label in enumerate(labels):
        xs, ys = [], []
        for j, c in enumerate(case_names):
            hit = [r["ms"] for r in ok if r["case"] == c and r["contender"] == label]
            if hit:
                xs.append(j + i * width)
                ys.append(hit[0])
        ax.bar(xs, ys, width=width, label=label)
    ax.set_xticks([j + width * (len(labels) - 1) / 2 for j in range(len(case_names))])
    ax.set_xticklabels(case_names, rotation=45, ha="right", fontsize=7)
    ax.set_ylabel("ms (median)")
    ax.set_yscale("log")
    if ok:
        ax.set_title(f"{ok[0]['op']} on {ok[0]['device']} ({ok[0]['commit']})", fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


START, END = "<!-- atrex-bench:start -->", "<!-- atrex-bench:end -->"


def readme_section(history: list[dict]) -> str:
    """The README's performance section, as markdown: per (op, device), the latest timed record of every case, each
    under the provenance line of the run that recorded it (newest run first). A run that timed only some cases (one
    case per process, as the GPU scripts do) so replaces only those cases' rows. Records of a variant, whose commit
    reads ``<commit>+<variant>`` (``ATREX_BENCH_COMMIT`` of a run with a launcher option changed, not the code as
    committed), stay in the history but are not shown; so do CPU records (reference timings say nothing about
    the kernels). Each (operator, card) pair gets a heading naming the card; each table's first line gives
    the run's card, driver, software versions, commit and date."""
    latest: dict[tuple[str, str, str], str] = {}  # (op, device, case) -> run_id of its latest timed record
    order: dict[str, int] = {}  # run_id -> position of its last record in the history
    for i, r in enumerate(history):
        order[r.get("run_id")] = i
        if ("ms" in r and "+" not in str(r.get("commit") or "")
                and str(r.get("device") or "cpu").lower() not in ("cpu", "unknown")):
            latest[(r["op"], r["device"], r["case"])] = r["run_id"]
    shown: dict[tuple[str, str], dict[str, set]] = {}  # (op, device) -> run_id -> cases shown from that run
    for (op, dev, case), run_id in latest.items():
        shown.setdefault((op, dev), {}).setdefault(run_id, set()).add(case)
    parts = ["_Generated by `atrex bench report` from `bench_results/history.jsonl` (accelerator runs only); "
             "do not edit by hand._", ""]
    if not latest:
        parts.append("_No accelerator benchmark has been recorded yet._")
    for key in sorted(shown):
        op, dev = key
        parts += [f"### {op} on {dev}", ""]
        for run_id in sorted(shown[key], key=lambda rid: -order[rid]):
            cases = shown[key][run_id]
            parts.append(markdown([r for r in history if r.get("run_id") == run_id and r.get("case") in cases]))
    return "\n".join(parts)


def update_readme(readme: Path, history: list[dict]) -> bool:
    text = readme.read_text()
    if START not in text or END not in text:
        raise ValueError(f"{readme} has no {START} ... {END} markers")
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    new = f"{head}{START}\n{readme_section(history)}\n{END}{tail}"
    changed = new != text
    readme.write_text(new)
    return changed
