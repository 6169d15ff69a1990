"""The validation workflow's CPU-testable parts: case tables, verify (and that it can fail), bench
records, reports, plots, README generation, atrex-bench op-dir loading run on the reference."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner

from atrex.cli import main
from atrex.dispatch import registry
from atrex.dispatch.plugins import PluginRecord
from atrex.errors import AtrexValueError
from atrex.plugin import PLUGIN_API, ImplSpec, PluginManifest
from atrex.validation import bench, opdir
from atrex.validation.cases import CHUNK_GDN_CASES, FLASH_ATTN_CASES, cases, causal_pairs
from atrex.validation.verify import verify

CPU = torch.device("cpu")
OP_DIR = Path(__file__).resolve().parents[1] / "cases" / "atrex_bench" / "chunk_gdn_recurrent"


def install_fake(run: str, check: str = "validation_fakes:check_all", impl_id: str = "fake.impl"):
    spec = ImplSpec(op="flash_attn_varlen", id=impl_id, archs=("cpu",), priority=0, check=check,
                    run=f"validation_fakes:{run}")
    rec = PluginRecord("fake", "validation_fakes:plugin", "fake-dist", "0.0", "loaded",
                       manifest=PluginManifest("fake", PLUGIN_API, ("cpu",), (spec,)))
    registry.set_registry_for_tests(registry.build_registry([rec]))


# ---- case tables ----------------------------------------------------------------------------------

def test_case_tables_are_well_formed():
    for table in (FLASH_ATTN_CASES, CHUNK_GDN_CASES):
        names = [c.name for c in table]
        assert len(names) == len(set(names))
        assert {c.size for c in table} == {"small", "perf"}
        for c in table:
            assert c.flops() > 0 and c.bytes() > 0
    # the serving workloads are in the perf tables
    perf = {c.name for c in cases("flash_attn", "perf")}
    assert "prefill/qwen3next-16-2-d256-1x16384" in perf and "decode/b1-lk8192-p16-q1" in perf
    assert len([n for n in perf if n.startswith("decode/")]) == 9 * 2 * 2
    assert "perf/T8192-H16-HV32" in {c.name for c in cases("chunk_gdn", "perf")}


@pytest.mark.parametrize("case", cases("flash_attn", "small") + cases("chunk_gdn", "small"), ids=lambda c: c.name)
def test_small_cases_build_valid_calls(case):
    from atrex.api.chunk_gdn import normalize_gdn_call
    from atrex.api.flash_attn import normalize_flash_attn_call

    kw = case.inputs(CPU)
    (normalize_flash_attn_call if case.op == "flash_attn" else normalize_gdn_call)(**kw)


def test_causal_pair_count_matches_the_mask():
    from atrex.reference.flash_attn import visible_mask

    for sq, sk in ((1, 10), (5, 5), (7, 3), (4, 9)):
        assert causal_pairs(sq, sk) == int(visible_mask(sq, sk, -1, 0, "cpu").sum())


# ---- verify ---------------------------------------------------------------------------------------

def test_verify_passes_on_the_reference():
    rows = verify("chunk_gdn", CPU, size="small", sweep=False)
    assert rows and all(r.ok for r in rows)
    assert {r.check for r in rows} >= {"correctness", "probe:decay-20", "probe:decay-0"}


def test_verify_fails_a_wrong_implementation():
    install_fake("run_wrong")
    rows = verify("flash_attn", CPU, match="decode-gqa4", sweep=False)
    fake = [r for r in rows if r.impl == "fake.impl" and r.check == "correctness"]
    assert fake and not fake[0].ok
    ref = [r for r in rows if r.impl == "core.reference" and r.check == "correctness"]
    assert ref and ref[0].ok


def test_verify_nan_page_probe_catches_leaks():
    install_fake("run_leaky")
    rows = verify("flash_attn", CPU, match="decode-gqa4", sweep=False)
    probe = [r for r in rows if r.impl == "fake.impl" and r.check == "probe:nan-pages"]
    assert probe and probe[0].ok is False


def test_sweep_flags_accepted_calls_that_crash():
    install_fake("run_crashes", check="validation_fakes:check_paged_only")
    rows = verify("flash_attn", CPU, match="nothing-matches", sweep=True)
    fake = [r for r in rows if r.impl == "fake.impl"]
    assert fake and all(r.ok is False and "accepted by check" in r.detail for r in fake)


def test_verify_cli_exit_codes():
    runner = CliRunner()
    res = runner.invoke(main, ["verify", "chunk_gdn", "--device", "cpu", "--match", "fixed", "--no-sweep"])
    assert res.exit_code == 0, res.output
    assert "passed, 0 failed" in res.output
    install_fake("run_wrong")
    res = runner.invoke(main, ["verify", "flash_attn", "--device", "cpu", "--match", "decode-gqa4", "--no-sweep"])
    assert res.exit_code == 1 and "FAIL" in res.output


# ---- atrex-bench op dirs --------------------------------------------------------------------------

def test_op_dir_loads_and_checks_against_atrex():
    loaded = opdir.load(OP_DIR)
    assert loaded.name == "chunk_gdn_recurrent_example" and len(loaded.shapes) == 3
    name, fn = opdir.resolve_atrex_op(loaded, None)  # from metadata origin
    assert name == "chunk_gated_delta_rule"
    results = opdir.check(loaded, fn, CPU)
    assert [r["ok"] for r in results] == [True, True, True], results


def test_op_dir_comparison_can_fail(tmp_path):
    import shutil

    bad = tmp_path / "op"
    shutil.copytree(OP_DIR, bad)
    shapes = json.loads((bad / "shapes.json").read_text())
    shapes["0"]["init_kwargs"]["use_qk_l2norm_in_kernel"] = False  # ATREX then skips the norm the Model does
    (bad / "shapes.json").write_text(json.dumps(shapes))
    src = (bad / "reference.py").read_text().replace("if self.l2:", "if True:")
    (bad / "reference.py").write_text(src)
    res = CliRunner().invoke(main, ["verify", "--op-dir", str(bad), "--device", "cpu"])
    assert res.exit_code == 1 and "FAIL" in res.output


def test_op_dir_missing_files(tmp_path):
    with pytest.raises(AtrexValueError, match="--op-dir"):
        opdir.load(tmp_path)


def test_op_dir_cli():
    res = CliRunner().invoke(main, ["verify", "--op-dir", str(OP_DIR), "--device", "cpu"])
    assert res.exit_code == 0, res.output
    assert "3 passed, 0 failed" in res.output


# ---- bench, reports, plots, README ----------------------------------------------------------------

def test_bench_records_report_plot_and_readme(tmp_path):
    install_fake("run_correct")
    records = bench.run_bench("flash_attn", CPU, size="small", match="zero-and-one", progress=False)["records"]
    timed = [r for r in records if "ms" in r]
    assert {r["contender"] for r in timed} == {"fake.impl", "core.reference"}
    for r in timed:
        assert r["ms"] > 0 and r["correct"] and r["device"] == "cpu" and r["commit"]
        assert {"torch", "triton", "driver", "date", "run_id"} <= set(r)
    hist = tmp_path / "history.jsonl"
    bench.append_history(records, hist)
    bench.append_history(records, hist)
    assert len(bench.load_history(hist)) == 2 * len(records)
    md = bench.markdown(records)
    assert "| small/zero-and-one-length | fake.impl |" in md
    png = bench.plot(records, tmp_path / "p.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    readme = tmp_path / "README.md"
    readme.write_text(f"# x\n\n{bench.START}\nold\n{bench.END}\ntail\n")
    assert bench.update_readme(readme, bench.load_history(hist))
    text = readme.read_text()  # CPU runs never reach the README's section
    assert "fake.impl" not in text and "No accelerator benchmark" in text and text.endswith("tail\n")
    gpu = [{**r, "device": "NVIDIA Fake GPU"} for r in bench.load_history(hist)]
    assert bench.update_readme(readme, gpu)
    text = readme.read_text()
    assert "### flash_attn on NVIDIA Fake GPU" in text and "fake.impl" in text and "old" not in text
    assert not bench.update_readme(readme, gpu)  # idempotent


def test_readme_section_keeps_each_cases_latest_record():
    """Per (op, device) the section shows every case's latest timed record under its own run's provenance line:
    a later run that timed only one case replaces that case's rows and leaves the other cases' rows of the earlier
    run; other devices keep theirs; a newer untimed (error) record does not hide a timed one."""
    def rec(run, case, ms, dev="gpu-a", contender="impl", commit="c1"):
        r = dict(op="chunk_gdn", device=dev, driver="d", torch="t", triton="tr", flash_attn_4=None, fla_core="f",
                 commit=commit, date=f"2026-12-05T0{run}", run_id=f"run{run}", case=case, contender=contender,
                 baseline="fla", correct=True)
        if ms is None:
            r["error"] = "boom"
        else:
            r.update(ms=ms, tflops=1.0, tbps=1.0, speedup_vs_baseline=None)
        return r
    history = [rec(1, "perf/a", 1.0), rec(1, "perf/b", 2.0), rec(1, "perf/a", 5.0, contender="fla"),
               rec(2, "perf/a", 0.5, commit="c2"), rec(3, "perf/b", 9.0, dev="gpu-b"), rec(4, "perf/b", None)]
    text = bench.readme_section(history)
    assert "| perf/a | impl | 0.5000 |" in text and "| perf/a | impl | 1.0000 |" not in text
    assert "| perf/a | fla | 5.0000 |" not in text  # (run 1's rows of perf/a: replaced by run 2's)
    assert "| perf/b | impl | 2.0000 |" in text and "| perf/b | impl | 9.0000 |" in text
    assert "boom" not in text
    assert "### chunk_gdn on gpu-a" in text and "### chunk_gdn on gpu-b" in text
    a = text.index("on gpu-a")
    assert text.index("commit c2", a) < text.index("commit c1", a)  # newest run first
    # a later run of a variant (a launcher option changed: commit "<sha>+<variant>") is kept out of the section
    text2 = bench.readme_section(history + [rec(5, "perf/a", 0.1, commit="c2+knob")])
    assert text2 == text and "c2+knob" not in text2


def test_bench_run_history_defaults_to_the_user_cache(tmp_path, monkeypatch):
    """Without --history / --out, `bench run` writes under $ATREX_CACHE_DIR/bench, never the checkout."""
    from atrex import env

    install_fake("run_correct")
    monkeypatch.setenv("ATREX_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    env.reload()
    try:
        res = CliRunner().invoke(main, ["bench", "run", "flash_attn", "--device", "cpu", "--match", "zero-and-one",
                                        "--no-progress"])
    finally:
        monkeypatch.undo()
        env.reload()
    assert res.exit_code == 0, res.output
    assert (tmp_path / "cache" / "bench" / "history.jsonl").exists()
    assert (tmp_path / "cache" / "bench" / "bench_flash_attn.md").exists()
    assert not (tmp_path / "bench_results").exists()


def test_bench_cli_writes_files(tmp_path):
    install_fake("run_correct")
    out, hist = tmp_path / "out", tmp_path / "h.jsonl"
    res = CliRunner().invoke(main, ["bench", "run", "flash_attn", "--device", "cpu", "--match", "zero-and-one",
                                    "--out", str(out), "--history", str(hist), "--no-progress"])
    assert res.exit_code == 0, res.output
    assert (out / "bench_flash_attn.md").exists() and (out / "bench_flash_attn.png").exists()
    readme = tmp_path / "R.md"
    readme.write_text(f"{bench.START}\n{bench.END}\n")
    assert CliRunner().invoke(main, ["bench", "report", "--history", str(hist), "--readme", str(readme),
                                     "--check"]).exit_code == 1
    assert CliRunner().invoke(main, ["bench", "report", "--history", str(hist), "--readme", str(readme)]).exit_code == 0
    assert CliRunner().invoke(main, ["bench", "report", "--history", str(hist), "--readme", str(readme),
                                     "--check"]).exit_code == 0
