"""`atrex bench host` on CPU: every host case timed through the public operator (the reference here), the peers
reported as skipped off an NVIDIA device, records appended to the history with their provenance, and the README's
generated section showing accelerator host runs only (and unchanged while there are none)."""

from __future__ import annotations

from click.testing import CliRunner

from atrex.cli import main
from atrex.validation import host
from atrex.validation.report import host_section, load_history, readme_section


def test_bench_host_records_every_case(tmp_path):
    hist = tmp_path / "h.jsonl"
    res = CliRunner().invoke(main, ["bench", "host", "--device", "cpu", "--number", "2", "--batches", "1",
                                    "--warmup", "1", "--history", str(hist), "--out", str(tmp_path / "out")])
    assert res.exit_code == 0, res.output
    rows = load_history(hist)
    timed = {(r["case"], r["contender"]) for r in rows if "host_us" in r}
    assert timed == {(c.name, "core.reference") for c in host.HOST_CASES}
    skipped = {(r["case"], r["contender"]) for r in rows if "skipped" in r}
    assert skipped == {(c.name, "fa4_direct" if c.op == "flash_attn" else "fla") for c in host.HOST_CASES}
    assert all(r["bench"] == "host" and r["commit"] and r["device"] == "cpu" and r["inference_mode"] for r in rows)
    assert all(r["host_us"] > 0 for r in rows if "host_us" in r)
    assert "| host/decode-b1-k64-p16 | core.reference |" in (tmp_path / "out" / "bench_host.md").read_text()
    assert "/ peer |" in (tmp_path / "out" / "bench_host.md").read_text()
    assert host_section(rows) == []  # CPU runs never reach the README


def test_readme_section_shows_accelerator_host_runs(tmp_path):
    base = dict(bench="host", device="NVIDIA H100 80GB HBM3", driver="580", torch="2.11", triton="3.6.0",
                flash_attn_4="4.0.0b19", fla_core="0.6.0", commit="abc123", date="2026-12-07", number=200,
                batches=11, inference_mode=True, op="flash_attn")
    old = [dict(base, run_id="r1", case="host/decode-b1-k64-p16", contender="nvidia.decode_splitkv", host_us=30.0)]
    new = [dict(base, run_id="r2", case="host/decode-b1-k64-p16", contender="nvidia.decode_splitkv", host_us=14.2),
           dict(base, run_id="r2", case="host/decode-b1-k64-p16", contender="fa4_direct", host_us=75.0)]
    text = readme_section(old + new)
    assert "### host time per call on NVIDIA H100 80GB HBM3" in text
    assert "| host/decode-b1-k64-p16 | nvidia.decode_splitkv | 14.2 | 0.189 |" in text and "30.0" not in text
    assert "| host/decode-b1-k64-p16 | fa4_direct | 75.0 |  |" in text  # (the peer itself: no share)
    assert readme_section([]) == readme_section([dict(base, device="cpu", run_id="c", case="x", contender="y",
                                                      host_us=1.0)])


def test_batches_run_round_robin_and_a_failing_contender_is_reported():
    """Batches alternate between the contenders (each inside its own context), so host drift reaches all alike;
    a contender that raises is reported with its error and leaves the rotation."""
    import contextlib

    import torch

    order, inside = [], []

    @contextlib.contextmanager
    def ctx(label):
        inside.append(label)
        yield
        inside.pop()

    def call(label):
        def fn():
            assert inside == [label]
            order.append(label)
        return fn

    def broken():
        order.append("c")
        if order.count("c") > 2:  # after its warm-up
            raise RuntimeError("lost the device")

    rows = host.time_round_robin([("a", call("a"), lambda: ctx("a")), ("b", call("b"), lambda: ctx("b")),
                                  ("c", broken, contextlib.nullcontext)], torch.device("cpu"), number=3, batches=2,
                                 warmup=1)
    assert [r["contender"] for r in rows] == ["a", "b", "c"]
    assert rows[0]["host_us"] > 0 and rows[1]["host_us"] > 0 and rows[2]["error"].startswith("RuntimeError")
    per_batch = host.SETTLE + 3
    timed = order[3:]  # after the three warm-ups
    assert timed[:per_batch] == ["a"] * per_batch and timed[per_batch:2 * per_batch] == ["b"] * per_batch
    assert timed[-2 * per_batch:] == ["a"] * per_batch + ["b"] * per_batch  # batch 2: c has left
