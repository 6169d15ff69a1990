"""Click commands ``atrex verify`` and ``atrex bench`` (registered on the main group in atrex.cli)."""

from __future__ import annotations

import json
import sys
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
              help="where bench_<op>.md and .png go (default: ~/.cache/atrex/bench)")
@click.option("--history", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="the JSONL history to append to (default: ~/.cache/atrex/bench/history.jsonl; the repository's "
                   "record is bench_results/history.jsonl, appended to only when named here)")
@click.option("--no-progress", is_flag=True)
def bench_run(op, device, size, match, graph, out_dir, history, no_progress):
    """Run the cases across eligible implementations and baselines; write <out>/bench_<op>.md and .png,
    append to the history."""
    from atrex.validation.bench import append_history, markdown, plot, run_bench

    dev = _device(device)
    out_dir = out_dir or default_bench_dir()
    history = history or default_bench_dir() / "history.jsonl"
    if size is None:
        size = "perf" if dev.type != "cpu" else "small"
    records = run_bench(op, dev, size=None if size == "all" else size, match=match, graph=graph,
                        progress=not no_progress)
    append_history(records, history)
    md = markdown(records)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / f"bench_{op}.md").write_text(md)
    if any("ms" in r for r in records):
        plot(records, out_dir / f"bench_{op}.png")
    click.echo(md)
    click.echo(f"history: {history} (+{len(records)} records); report: {out_dir / f'bench_{op}.md'}")


@bench.command("report")
@click.option("--history", type=click.Path(dir_okay=False, path_type=Path), default=REPO_HISTORY, show_default=True)
@click.option("--readme", type=click.Path(dir_okay=False, path_type=Path), default=Path("README.md"))
@click.option("--check", is_flag=True, help="exit 1 if the README's section is not up to date")
def bench_report(history, readme, check):
    """Regenerate the README's performance section from the recorded history (accelerator runs only)."""
    from atrex.validation.bench import load_history, readme_section, update_readme

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
