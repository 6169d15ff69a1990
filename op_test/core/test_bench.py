"""`atrex bench run` finishing cold, on CPU with reference timings: each case's rows written as soon as it is
measured, `--resume`, `--budget-s`, `--warm`, and `--peer-path` (a child process with another release of a
baseline's library first on sys.path) with a fake module folder."""

from __future__ import annotations

import json
import textwrap
import time

import pytest
import torch
from click.testing import CliRunner

from atrex.cli import main
from atrex.dispatch import registry
from atrex.dispatch.plugins import PluginRecord
from atrex.plugin import PLUGIN_API, ImplSpec, PluginManifest
from atrex.validation import bench, peer
from atrex.validation.records import provenance
from atrex.validation.report import RunFiles, load_history

CPU = torch.device("cpu")
PAGED = "page"  # three small flash_attn cases: decode-gqa4-page16, mtp4-page64, chunked-prefill-paged


def install_fake(run: str):
    """A fake CPU flash_attn implementation from op_test/validation_fakes.py beside the reference."""
    spec = ImplSpec(op="flash_attn_varlen", id="fake.impl", archs=("cpu",), priority=0,
                    check="validation_fakes:check_all", run=f"validation_fakes:{run}")
    rec = PluginRecord("fake", "validation_fakes:plugin", "fake-dist", "0.0", "loaded",
                       manifest=PluginManifest("fake", PLUGIN_API, ("cpu",), (spec,)))
    registry.set_registry_for_tests(registry.build_registry([rec]))


@pytest.fixture
def quick_timing(monkeypatch):
    """One call stands in for each timing: these tests are about what is written when."""
    monkeypatch.setattr(bench, "time_ms", lambda fn, device, graph=False: (fn(), 0.5)[1])


def run_cli(*args):
    return CliRunner().invoke(main, ["bench", "run", *args, "--device", "cpu", "--no-progress"])


def test_each_case_is_written_the_moment_it_is_measured(tmp_path, quick_timing):
    hist = tmp_path / "h.jsonl"
    files = RunFiles("flash_attn", tmp_path / "out", hist, {"op": "flash_attn"}, resume=False)
    seen = []

    def on_case(records):
        files.add(records)
        seen.append((len(load_history(hist)), files.md_path.read_text(), records[0]["case"]))

    res = bench.run_bench("flash_attn", CPU, size="small", match=PAGED, progress=False, on_case=on_case)
    assert len(seen) == 3 and res["stopped"] is None and not res["left"]
    for i, (n_hist, md, case) in enumerate(seen):
        assert n_hist == sum(len([r for r in res["records"] if r["case"] == c]) for c in res["done"][:i + 1])
        assert f"| {case} | core.reference |" in md
        assert all(f"| {later} |" not in md for later in res["done"][i + 1:])
    assert len(load_history(files.rows_path)) == len(res["records"])


def test_resume_skips_cases_recorded_for_the_same_commit_device_and_options(tmp_path, quick_timing, monkeypatch):
    out, hist = tmp_path / "out", tmp_path / "h.jsonl"
    first = run_cli("flash_attn", "--match", "decode-gqa4", "--out", str(out), "--history", str(hist))
    assert first.exit_code == 0, first.output
    n_first = len(load_history(hist))
    again = run_cli("flash_attn", "--match", PAGED, "--out", str(out), "--history", str(hist), "--resume")
    assert again.exit_code == 0, again.output
    assert "resume: 1 case(s) already recorded" in again.output
    rows = load_history(out / "bench_flash_attn.jsonl")
    assert len({r["case"] for r in rows}) == 3 and len({r["run_id"] for r in rows}) == 1  # one run, one table
    assert [r["case"] for r in load_history(hist)].count("small/decode-gqa4-page16") == n_first  # not run again
    md = (out / "bench_flash_attn.md").read_text()
    assert md.count("| small/decode-gqa4-page16 | core.reference |") == 1 and "| small/mtp4-page64 |" in md
    # another commit (or device, --graph, peers) is another run: nothing is skipped
    monkeypatch.setenv("ATREX_BENCH_COMMIT", "feedbeef")
    from atrex import env

    env.reload()
    provenance.cache_clear()
    try:
        other = run_cli("flash_attn", "--match", "decode-gqa4", "--out", str(out), "--history", str(hist), "--resume")
    finally:
        monkeypatch.undo()
        env.reload()
        provenance.cache_clear()
    assert other.exit_code == 0 and "resume:" not in other.output
    assert {r["commit"] for r in load_history(out / "bench_flash_attn.jsonl")} == {"feedbeef"}


def test_budget_interrupts_a_case_and_writes_what_it_has(tmp_path):
    install_fake("run_sleepy")
    out = tmp_path / "out"
    t0 = time.monotonic()
    res = run_cli("flash_attn", "--match", "decode-gqa4", "--out", str(out), "--history", str(tmp_path / "h.jsonl"),
                  "--budget-s", "1.5")
    assert time.monotonic() - t0 < 30  # the 60 s kernel was interrupted
    assert res.exit_code == 0, res.output
    assert "budget: stopped after 0 of 1 cases (1 left); rerun with --resume" in res.output
    assert (out / "bench_flash_attn.md").exists() and load_history(out / "bench_flash_attn.jsonl") == []


def test_budget_does_not_start_a_case_it_cannot_finish(quick_timing):
    d = bench._Deadline(10.0, start=time.monotonic())
    assert d.room_for_next()
    d.longest = 11.0
    assert not d.room_for_next()
    res = bench.run_bench("flash_attn", CPU, size="small", match=PAGED, progress=False, budget_s=1.0,
                          start=time.monotonic() - 5)
    assert res["stopped"] == "budget" and res["done"] == [] and len(res["left"]) == 3


def test_budget_must_be_positive():
    res = run_cli("flash_attn", "--budget-s", "0")
    assert res.exit_code == 2 and "--budget-s" in res.output


def test_warm_runs_the_cases_in_worker_processes():
    from atrex.validation.warm import warm

    assert warm("flash_attn", CPU, ["small/zero-and-one-length"], False, 1) > 0
    assert warm("flash_attn", CPU, [], False, 4) == 0


# ---- --peer-path ----------------------------------------------------------------------------------

FAKE_FA4 = '''
"""A stand-in FlashAttention-4 release: FA4's varlen signature, ATREX's float64 oracle inside."""
from atrex.reference.oracle import attention_oracle

__version__ = "0.0.0"  # as FA4's own (it reads a distribution named "fa4"): the dist-info is what counts


def flash_attn_varlen_func(q, k, v, cu_seqlens_q=None, cu_seqlens_k=None, max_seqlen_q=None, max_seqlen_k=None,
                           seqused_k=None, page_table=None, softmax_scale=None, causal=False, window_size=(None, None),
                           learnable_sink=None, softcap=0.0, return_lse=False, num_splits=1):
    left, right = window_size
    out, lse = attention_oracle(q, k, v, cu_seqlens_q, seqused_k=seqused_k, block_table=page_table,
                                cu_seqlens_k=cu_seqlens_k, softmax_scale=softmax_scale, causal=causal,
                                window_size=(-1 if left is None else left, -1 if right is None else right),
                                softcap=softcap, s_aux=learnable_sink)
    return out.to(q.dtype), lse.float()
'''

FAKE_BASELINE = '''
"""A CPU maker calling the folder's flash_attn.cute, the way fa4_direct does on a GPU."""
from pathlib import Path

import flash_attn.cute as fa4
from atrex.validation.baselines import Baseline

assert Path(fa4.__file__).resolve().is_relative_to(Path(__file__).resolve().parent), fa4.__file__


def make(kw, target, graph=False):
    args = {n: kw.get(n) for n in ("cu_seqlens_q", "cu_seqlens_k", "seqused_k", "softmax_scale")}
    return Baseline(lambda: fa4.flash_attn_varlen_func(kw["q"], kw["k"], kw["v"], page_table=kw.get("block_table"),
                                                       causal=kw["causal"], **args))
'''


@pytest.fixture
def fake_release(tmp_path):
    """A folder as an unpacked FA4 wheel leaves it: flash_attn/cute (namespace flash_attn) and its dist-info."""
    root = tmp_path / "fa4-fake"
    (root / "flash_attn" / "cute").mkdir(parents=True)
    (root / "flash_attn" / "cute" / "__init__.py").write_text(textwrap.dedent(FAKE_FA4))
    info = root / "flash_attn_4-9.9.9b1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: flash-attn-4\nVersion: 9.9.9b1\n")
    (root / "fakebase.py").write_text(textwrap.dedent(FAKE_BASELINE))
    return root


def test_peer_child_runs_the_folders_release_and_returns_rows(fake_release):
    p = peer.Peer("fake", fake_release, "flash_attn", CPU, False, {"fa4_direct": "fakebase:make"})
    try:
        assert p.versions == {"fa4_direct": {"dist": "flash-attn-4", "version": "9.9.9b1"}}
        assert p.summary == "flash-attn-4 9.9.9b1"
        rows = p.run_case("small/decode-gqa4-page16")
        assert len(rows) == 1 and rows[0]["contender"] == "fa4_direct@fake" and rows[0]["ms"] > 0, rows
        assert rows[0]["peer"] == {"name": "fake", "path": str(fake_release), "dist": "flash-attn-4",
                                   "version": "9.9.9b1"}
        assert "error" in p.run_case("no/such-case")[0]
    finally:
        p.close()
    assert p.proc.returncode == 0


def test_peer_rows_reach_the_markdown_and_history(tmp_path, fake_release, quick_timing):
    out, hist = tmp_path / "out", tmp_path / "h.jsonl"
    res = run_cli("flash_attn", "--match", "decode-gqa4", "--out", str(out), "--history", str(hist),
                  "--peer-path", f"fake={fake_release}")
    assert res.exit_code == 0, res.output
    md = (out / "bench_flash_attn.md").read_text()
    assert "peers: fake = flash-attn-4 9.9.9b1" in md
    assert "fa4_direct@fake (flash-attn-4 9.9.9b1)" in md  # on CPU: skipped, with the reason, under its label
    rows = [r for r in load_history(hist) if r["contender"] == "fa4_direct@fake"]
    assert rows and rows[0]["peer"]["version"] == "9.9.9b1" and rows[0]["skipped"].startswith("needs an NVIDIA")
    assert all(r["peers"] == {"fake": "flash-attn-4 9.9.9b1"} for r in load_history(hist))


@pytest.mark.parametrize("value,message", [("nofolder", "NAME=PATH"), ("x=/no/such/folder", "existing folder"),
                                           ("x=EMPTY", "holds none of the libraries")])
def test_bad_peer_path_is_a_one_line_usage_error(tmp_path, value, message):
    (tmp_path / "empty").mkdir()
    res = run_cli("flash_attn", "--peer-path", value.replace("EMPTY", str(tmp_path / "empty")))
    assert res.exit_code == 2 and message in res.output and "Traceback" not in res.output


def test_peer_labels_follow_the_folders_libraries(tmp_path):
    (tmp_path / "flashinfer").mkdir()
    (tmp_path / "flash_attn" / "cute").mkdir(parents=True)
    labels = peer.labels_for("flash_attn", tmp_path)
    assert "fa4_direct" in labels and "flashinfer_paged_fa3" in labels and "torch_sdpa" not in labels
    assert peer.labels_for("chunk_gdn", tmp_path) == {"flashinfer": None}
    assert json.dumps(labels)  # what the child is sent
