"""What ``atrex bench`` writes: the JSONL history, the markdown table, the PNG plot and the README's
performance section. A record is one dict per (case, contender): timed (``ms``), ``wrong`` (failed the
check against the reference, not timed), ``skipped`` (a baseline that does not apply, with its reason)
or ``error``. A row from a ``--peer-path`` child carries ``peer`` (name, distribution, version, path)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path


def append_history(records: list[dict], history: Path) -> None:
    history.parent.mkdir(parents=True, exist_ok=True)
    with history.open("a") as f:
        for r in records:
            f.write(json.dumps(r, sort_keys=True) + "\n")
        f.flush()


def load_history(history: Path) -> list[dict]:
    if not history.exists():
        return []
    return [json.loads(line) for line in history.read_text().splitlines() if line.strip()]


def label(r: dict) -> str:
    """The contender as shown: a peer's row names the release it ran, e.g. ``fa4_direct@fa4-b36
    (flash-attn-4 4.0.0b36)``."""
    peer = r.get("peer")
    return f"{r['contender']} ({peer.get('dist') or '?'} {peer.get('version') or '?'})" if peer else r["contender"]


def _header(head: dict) -> str:
    """The run's provenance line. Fields that older records lack (flashinfer, peers) appear only when set,
    so the README's section of older runs reads as before."""
    extra = f", flashinfer {head['flashinfer']}" if head.get("flashinfer") else ""
    peers = head.get("peers") or {}
    peer_txt = (", peers: " + ", ".join(f"{n} = {v}" for n, v in sorted(peers.items()))) if peers else ""
    return (f"{head['op']} on {head['device']} (driver {head['driver'] or '-'}, torch {head['torch']}, "
            f"triton {head['triton'] or '-'}, flash-attn-4 {head['flash_attn_4'] or '-'}, fla-core "
            f"{head['fla_core'] or '-'}{extra}{peer_txt}), commit {head['commit']}, {head['date']}"
            + (", CUDA-graph replay" if head.get("graph") else ""))


def markdown(records: list[dict], skipped: bool = True) -> str:
    """One table per run: case, contender, time, throughput, ratio to the baseline, correctness. A wrong
    contender is a row with its error; errors and (with ``skipped``) each baseline's skip reasons follow,
    one line per (contender, reason)."""
    rows = [r for r in records if "ms" in r or "wrong" in r]
    if not any("ms" in r for r in rows):
        return "_no results_\n" + _notes(records, skipped)
    lines = [_header(next(r for r in rows if "ms" in r)), "",
             "| case | implementation | time (ms) | TFLOP/s | TB/s | vs baseline | correct |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        if "wrong" in r:
            lines.append(f"| {r['case']} | {label(r)} | - | - | - | - | wrong: {r['wrong']} |")
            continue
        ratio = f"{r['speedup_vs_baseline']:.2f}x {r['baseline']}" if r.get("speedup_vs_baseline") else "-"
        lines.append(f"| {r['case']} | {label(r)} | {r['ms']:.4f} | {r['tflops']:.1f} | {r['tbps']:.2f} | "
                     f"{ratio} | {'yes' if r['correct'] else 'NO'} |")
    return "\n".join(lines) + "\n" + _notes(records, skipped)


def _notes(records: list[dict], skipped: bool) -> str:
    out = [f"\n- {r['case']} / {r['contender']}: {r['error']}" for r in records if "error" in r]
    if skipped:  # one line per reason: the contenders it skipped, each with its number of cases
        counts = Counter((r["skipped"], label(r)) for r in records if "skipped" in r)
        for why in dict.fromkeys(w for w, _ in counts):
            who = ", ".join(f"{name} ({n})" for (w, name), n in counts.items() if w == why)
            out.append(f"\n- skipped {who}: {why}")
    return "".join(out) + ("\n" if out else "")


def plot(records: list[dict], path: Path) -> Path:
    """Grouped bars of time per case and contender (log scale)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ok = [r for r in records if "ms" in r]
    case_names = list(dict.fromkeys(r["case"] for r in ok))
    labels = list(dict.fromkeys(label(r) for r in ok))
    fig, ax = plt.subplots(figsize=(max(6, 0.6 * len(case_names) * max(1, len(labels))), 4.5))
    width = 0.8 / max(1, len(labels))
    for i, name in enumerate(labels):
        xs, ys = [], []
        for j, c in enumerate(case_names):
            hit = [r["ms"] for r in ok if r["case"] == c and label(r) == name]
            if hit:
                xs.append(j + i * width)
                ys.append(hit[0])
        ax.bar(xs, ys, width=width, label=name)
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
    the run's card, driver, software versions, commit and date. Skip reasons are left out."""
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
            parts.append(markdown([r for r in history if r.get("run_id") == run_id and r.get("case") in cases],
                                  skipped=False))
    return "\n".join(parts + host_section(history))


def _accelerator(r: dict) -> bool:
    return "+" not in str(r.get("commit") or "") and str(r.get("device") or "cpu").lower() not in ("cpu", "unknown")


#: the peer each operator's host time is set against (called directly, timed in the same run)
HOST_PEER = {"flash_attn": "fa4_direct", "chunk_gdn": "fla", "gdn_decode": "fla"}
HOST_TABLE_HEAD = ["| case | contender | host us / call | / peer |", "|---|---|---|---|"]


def host_table_rows(records: list[dict]) -> list[str]:
    """Markdown rows of the timed host records of one run: case, contender, host us per call and the time as a share
    of the operator's peer timed in the same run (:data:`HOST_PEER`; a shared host drifts between runs by more
    than the changes measured, the share much less)."""
    peer = {r["case"]: r["host_us"] for r in records
            if "host_us" in r and r["contender"] == HOST_PEER.get(r.get("op"))}
    rows = []
    for r in records:
        if "host_us" in r:
            p = peer.get(r["case"])
            share = "" if p is None or r["contender"] == HOST_PEER.get(r.get("op")) else f"{r['host_us'] / p:.3f}"
            rows.append(f"| {r['case']} | {r['contender']} | {r['host_us']:.1f} | {share} |")
    return rows


def host_section(history: list[dict]) -> list[str]:
    """``atrex bench host`` records (``bench: host``) as README lines: per card, the latest run of each case, one
    table per run (newest first) under its provenance; nothing when no accelerator host run is recorded."""
    latest: dict[tuple[str, str], str] = {}  # (device, case) -> run_id of its latest timed host record
    order: dict[str, int] = {}
    for i, r in enumerate(history):
        if r.get("bench") == "host" and "host_us" in r and _accelerator(r):
            latest[(r["device"], r["case"])] = r["run_id"]
            order[r["run_id"]] = i
    shown: dict[str, dict[str, set]] = {}
    for (dev, case), run_id in latest.items():
        shown.setdefault(dev, {}).setdefault(run_id, set()).add(case)
    parts = []
    for dev in sorted(shown):
        parts += [f"### host time per call on {dev}", ""]
        for run_id in sorted(shown[dev], key=lambda rid: -order[rid]):
            rows = [r for r in history if r.get("run_id") == run_id and r.get("case") in shown[dev][run_id]
                    and "host_us" in r]
            h = rows[0]
            parts += [f"`atrex bench host` on {h['device']} (driver {h.get('driver') or '-'}, torch {h.get('torch')}, "
                      f"triton {h.get('triton') or '-'}, flash-attn-4 {h.get('flash_attn_4') or '-'}, fla-core "
                      f"{h.get('fla_core') or '-'}), commit {h['commit']}, {h['date']}; median of {h.get('batches')} "
                      f"batches of {h.get('number')} eager calls"
                      + (", inference mode" if h.get("inference_mode") else "")
                      + "; / peer: the time as a share of the operator's peer (FA4 / fla) called directly in the same "
                      "run", "", *HOST_TABLE_HEAD]
            parts += host_table_rows(rows)
            parts.append("")
    return parts


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


#: what makes two runs' rows interchangeable for ``--resume``: same operator, card, commit and options
RESUME_KEY = ("op", "device", "commit", "graph", "peers")


class RunFiles:
    """One ``bench run``'s files in its output folder: ``bench_<op>.jsonl`` (the run's records, what
    ``--resume`` reads), ``bench_<op>.md`` (rewritten after every case) and ``.png`` (at the end); each
    case's records are also appended to the history the moment they are measured. With ``resume`` the
    folder's records of the same ``RESUME_KEY`` are kept (their cases are not run again, their run id
    is reused, so the run stays one table); other records there are dropped from the folder's file."""

    def __init__(self, op: str, out_dir: Path, history: Path, key: dict, resume: bool):
        self.op, self.history = op, history
        self.rows_path, self.md_path = out_dir / f"bench_{op}.jsonl", out_dir / f"bench_{op}.md"
        self.png_path = out_dir / f"bench_{op}.png"
        want = {k: key.get(k) or None for k in RESUME_KEY}
        old = load_history(self.rows_path) if resume else []
        self.records = [r for r in old if {k: r.get(k) or None for k in RESUME_KEY} == want]
        self.resumed = len(self.done)
        out_dir.mkdir(parents=True, exist_ok=True)
        self.rows_path.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in self.records))
        self.md_path.write_text(markdown(self.records))

    @property
    def done(self) -> set[str]:
        return {r["case"] for r in self.records if "case" in r}

    @property
    def run_id(self) -> str | None:
        return self.records[-1].get("run_id") if self.records else None

    def add(self, records: list[dict]) -> None:
        """One measured case: appended to the history and the folder's records, the markdown rewritten."""
        append_history(records, self.history)
        append_history(records, self.rows_path)
        self.records += records
        self.md_path.write_text(markdown(self.records))

    def finish(self) -> str:
        md = markdown(self.records)
        self.md_path.write_text(md)
        if any("ms" in r for r in self.records):
            plot(self.records, self.png_path)
        return md
