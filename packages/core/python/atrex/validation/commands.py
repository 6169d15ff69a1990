"""Click commands ``atrex verify`` and ``atrex bench`` (registered on the main group in atrex.cli)."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import click

# The repository's record of accelerator runs: what `bench report` reads. `bench run` appends to it only
# when `--history` names it; by default its records and reports go to the user's cache directory.
REPO_HISTORY = Path("bench_results/history.jsonl")


def default_bench_dir() -> Path:
    """``$ATREX_CACHE_DIR/bench`` (default ``~/.cache/atrex/bench``): outside any checkout."""
    from atrex import env

    return env.settings().cache_dir / "bench"


def _device(name):
    from atrex.cli import resolve_device

    return resolve_device(name)


@click.command()
@click.argument("op", required=False, type=click.Choice(["flash_attn", "chunk_gdn", "gdn_decode"]))
@click.option("--device", default=None, help="default: cuda:current if present, else cpu")
@click.option("--size", default="small", type=click.Choice(["small", "perf", "all"]),
              help="case size class (perf cases need an accelerator)")
@click.option("--match", default=None, help="only cases whose name contains this")
@click.option("--no-sweep", is_flag=True, help="skip the check/run agreement sweep")
@click.option("--op-dir", type=click.Path(exists=True, file_okay=False, path_type=Path), default=None,
              help="an operator in the atrex-bench layout, checked against an ATREX operator")
@click.option("--atrex-op", default=None, help="with --op-dir: the ATREX operator (default: from metadata origin)")
@click.option("--atol", default=None, type=float, help="with --op-dir (evaluator default 1e-2)")
@click.option("--rtol", default=None, type=float, help="with --op-dir (evaluator default 0.05)")
@click.option("--json", "as_json", is_flag=True)
def verify(op, device, size, match, no_sweep, op_dir, atrex_op, atol, rtol, as_json):
    """Every eligible implementation against the reference, with probes; exit 1 on any failure."""
    dev = _device(device)
    if op_dir is not None:
        from atrex.validation import opdir

        loaded = opdir.load(op_dir)
        name, fn = opdir.resolve_atrex_op(loaded, atrex_op)
        results = opdir.check(loaded, fn, dev, atol if atol is not None else opdir.ATOL,
                              rtol if rtol is not None else opdir.RTOL)
        if as_json:
            click.echo(json.dumps({"op_dir": str(op_dir), "atrex_op": name, "results": results}, indent=2))
        else:
            click.echo(f"{loaded.name} (atrex-bench layout) vs atrex.{name} on {dev}")
            for r in results:
                click.echo(f"  shape {r['shape']:<4} {'PASS' if r['ok'] else 'FAIL'}  {r['detail']}")
            n_ok = sum(r["ok"] for r in results)
            click.echo(f"{n_ok} passed, {len(results) - n_ok} failed")
        sys.exit(0 if all(r["ok"] for r in results) else 1)
    if op is None:
        raise click.UsageError("give an operator (flash_attn, chunk_gdn, gdn_decode) or --op-dir")
    from atrex.validation.verify import render
    from atrex.validation.verify import verify as run_verify

    rows = run_verify(op, dev, None if size == "all" else size, match, sweep=not no_sweep)
    if as_json:
        click.echo(json.dumps([r.__dict__ | {"status": r.status} for r in rows], indent=2, default=str))
    else:
        click.echo(render(rows))
    sys.exit(1 if any(r.ok is False for r in rows) else 0)


@click.group(invoke_without_command=True)
@click.pass_context
def bench(ctx):
    """Benchmark an operator's cases (``atrex bench run OP``) or regenerate reports (``atrex bench report``)."""
    if ctx.invoked_subcommand is None:
        click.echo(ctx.get_help())


@bench.command("run")
@click.argument("op", type=click.Choice(["flash_attn", "chunk_gdn", "gdn_decode"]))
@click.option("--device", default=None)
@click.option("--size", default=None, type=click.Choice(["small", "perf", "all"]),
              help="default: perf on an accelerator, small on the CPU")
@click.option("--match", default=None)
@click.option("--graph", is_flag=True, help="time CUDA-graph replays")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="where bench_<op>.md, .png and .jsonl go (default: ~/.cache/atrex/bench)")
@click.option("--history", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="the JSONL history to append to (default: ~/.cache/atrex/bench/history.jsonl; the repository's "
                   "record is bench_results/history.jsonl, appended to only when named here)")
@click.option("--peer-path", "peer_paths", multiple=True, metavar="NAME=PATH",
              help="also run the baselines whose library PATH holds (e.g. flash_attn/cute of another FA4 release) "
                   "in a child process with PATH first on sys.path; rows '<baseline>@NAME'. Repeatable")
@click.option("--resume", is_flag=True,
              help="skip the cases already recorded in --out for the same commit, device and options")
@click.option("--budget-s", type=click.FloatRange(min=1), default=None,
              help="stop cleanly, with every measured case written, within this many seconds of the start")
@click.option("--warm", "warm_workers", type=click.IntRange(min=0), default=0, show_default=True,
              help="worker processes that run every case once before timing (fills on-disk kernel caches)")
@click.option("--no-progress", is_flag=True)
def bench_run(op, device, size, match, graph, out_dir, history, peer_paths, resume, budget_s, warm_workers,
              no_progress):
    """Run the cases across eligible implementations and baselines; each case's rows are appended to the
    history and <out>/bench_<op>.jsonl and .md as soon as it is measured, the PNG is drawn at the end."""
    start = time.monotonic()
    from atrex.validation.bench import run_bench
    from atrex.validation.records import provenance
    from atrex.validation.report import RunFiles

    dev = _device(device)
    out_dir = out_dir or default_bench_dir()
    history = history or default_bench_dir() / "history.jsonl"
    if size is None:
        size = "perf" if dev.type != "cpu" else "small"
    peers = _start_peers(op, dev, graph, peer_paths)
    try:
        prov = provenance(str(dev))
        peer_info = {p.name: p.summary for p in peers}
        key = {"op": op, "device": prov["device"], "commit": prov["commit"], "graph": graph, "peers": peer_info}
        files = RunFiles(op, out_dir, history, key, resume)
        if warm_workers:
            from atrex.validation.cases import cases
            from atrex.validation.warm import warm

            names = [c.name for c in cases(op, None if size == "all" else size, match) if c.name not in files.done]
            click.echo(f"warm: {len(names)} cases in {warm_workers} processes, "
                       f"{warm(op, dev, names, graph, warm_workers):.1f} s", err=True)
        res = run_bench(op, dev, size=None if size == "all" else size, match=match, graph=graph,
                        progress=not no_progress, on_case=files.add, skip_cases=files.done, budget_s=budget_s,
                        start=start, peers=peers, run_id=files.run_id,
                        common={"peers": peer_info} if peer_info else None)
    finally:
        for p in peers:
            p.close()
    click.echo(files.finish())
    click.echo(f"history: {history} (+{len(res['records'])} records); report: {files.md_path}")
    if files.resumed:
        click.echo(f"resume: {files.resumed} case(s) already recorded in {out_dir} were not run again")
    if res["stopped"]:
        n = len(res["done"]) + len(res["left"])
        click.echo(f"budget: stopped after {len(res['done'])} of {n} cases ({len(res['left'])} left); "
                   "rerun with --resume to continue")


def _start_peers(op, dev, graph, values) -> list:
    """One child per ``--peer-path``; a bad value or a child that cannot start is a one-line usage error."""
    from atrex.errors import AtrexValueError
    from atrex.validation import peer

    started = []
    try:
        for value in values:
            try:
                name, path = peer.parse(value)
            except AtrexValueError as exc:
                raise click.BadParameter(str(exc).splitlines()[0], param_hint="--peer-path") from None
            labels = peer.labels_for(op, path)
            if not labels:
                raise click.BadParameter(f"{path} holds none of the libraries of {op}'s baselines "
                                         "(flash_attn/cute, flashinfer, fla)", param_hint="--peer-path")
            try:
                started.append(peer.Peer(name, path, op, dev, graph, labels))
            except AtrexValueError as exc:
                raise click.UsageError(str(exc).splitlines()[0]) from None
    except BaseException:
        for p in started:
            p.close()
        raise
    return started


@bench.command("host")
@click.option("--device", default=None)
@click.option("--match", default=None, help="only host cases whose name contains this")
@click.option("--number", default=200, show_default=True, type=click.IntRange(min=1), help="calls per timed batch")
@click.option("--batches", default=11, show_default=True, type=click.IntRange(min=1),
              help="timed batches (the median is recorded)")
@click.option("--warmup", default=50, show_default=True, type=click.IntRange(min=1), help="untimed calls first")
@click.option("--inference-mode/--no-inference-mode", default=True, show_default=True,
              help="call under torch.inference_mode(), as vLLM runs its model")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="where bench_host.md goes (default: ~/.cache/atrex/bench)")
@click.option("--history", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="the JSONL history to append to (default: ~/.cache/atrex/bench/history.jsonl; the repository's "
                   "record is bench_results/history.jsonl)")
def bench_host(device, match, number, batches, warmup, inference_mode, out_dir, history):
    """Host microseconds per eager call (no sync inside the timed loop) of every eligible ATREX implementation,
    through the public operator, and of FA4 / fla called directly: a small paged decode (B=1, 64 keys, page 16), a
    small paged prefill, a Gated-DeltaNet prefill (T=64, H=16, HV=32) and a decode step."""
    import uuid

    import torch

    from atrex.validation.host import run_host, table
    from atrex.validation.records import provenance
    from atrex.validation.report import append_history

    dev = _device(device)
    out_dir = out_dir or default_bench_dir()
    history = history or default_bench_dir() / "history.jsonl"
    common = {**provenance(str(dev)), "run_id": uuid.uuid4().hex[:12], "inference_mode": inference_mode}
    with torch.inference_mode(inference_mode):
        records = run_host(dev, match=match, number=number, batches=batches, warmup=warmup, common=common)
    append_history(records, history)
    md = table(records)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "bench_host.md").write_text(md)
    click.echo(md)
    click.echo(f"history: {history} (+{len(records)} records); report: {out_dir / 'bench_host.md'}")


@bench.command("report")
@click.option("--history", type=click.Path(dir_okay=False, path_type=Path), default=REPO_HISTORY, show_default=True)
@click.option("--readme", type=click.Path(dir_okay=False, path_type=Path), default=Path("README.md"))
@click.option("--check", is_flag=True, help="exit 1 if the README's section is not up to date")
def bench_report(history, readme, check):
    """Regenerate the README's performance section from the recorded history (accelerator runs only)."""
    from atrex.validation.report import load_history, readme_section, update_readme

    records = load_history(history)
    if check:
        text = readme.read_text()
        if readme_section(records) not in text:
            click.echo(f"{readme}: performance section is stale; run `atrex bench report`", err=True)
            sys.exit(1)
        click.echo(f"{readme}: performance section is up to date")
        return
    changed = update_readme(readme, records)
    click.echo(f"{readme}: {'updated' if changed else 'unchanged'} from {history} ({len(records)} records)")
