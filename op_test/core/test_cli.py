"""The ``atrex`` command line (in-process through click's CliRunner; ``python -m atrex`` in a subprocess)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from click.testing import CliRunner

import atrex
from atrex.cli import main

ATTN = ["--device", "cpu", "--q-lens", "1,3", "--k-lens", "40,7", "--heads", "8", "--kv-heads", "2",
        "--head-dim", "32"]
GDN = ["--device", "cpu", "--seq-lens", "100,1,57", "--heads", "2", "--v-heads", "4", "--head-dim", "32"]


def invoke(*args):
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def test_help_and_version():
    out = invoke("--help")
    for cmd in ("env", "explain", "prewarm", "demo"):
        assert cmd in out
    assert atrex.__version__ in invoke("--version")


def test_env_text():
    out = invoke("env", "--device", "cpu")
    assert "target cpu" in out
    assert "plugins:" in out and "implementations:" in out
    assert "nvidia   atrex-nvidia" in out and "ppu      atrex-ppu" in out and "[loaded]" in out
    assert "core.reference" in out and "every target" in out and "candidate here" in out


def test_env_json():
    rep = json.loads(invoke("env", "--json", "--device", "cpu"))
    assert rep["atrex_core"] == atrex.__version__
    assert rep["target"]["id"] == "cpu" and rep["target"]["emulated"] is False
    plugins = {p["name"]: p for p in rep["plugins"]}
    assert plugins["nvidia"]["distribution"] == "atrex-nvidia" and plugins["nvidia"]["state"] == "loaded"
    assert plugins["ppu"]["distribution"] == "atrex-ppu" and plugins["ppu"]["state"] == "loaded"
    for op in ("flash_attn_varlen", "chunk_gated_delta_rule"):
        ref = [i for i in rep["implementations"][op] if i["id"] == "core.reference"]
        assert ref and ref[0]["candidate_here"] and ref[0]["archs"] == ["*"]
    assert set(rep["settings"]) >= {"strict_plugins", "disabled", "forced", "allow_reference", "ppu_emulate"}


def test_env_json_reflects_settings(monkeypatch):
    from atrex import env

    monkeypatch.setenv("ATREX_DISABLE", "core.reference")
    monkeypatch.setenv("ATREX_IMPL_CHUNK_GATED_DELTA_RULE", "core.reference")
    env.reload()
    rep = json.loads(invoke("env", "--json", "--device", "cpu"))
    assert rep["settings"]["disabled"] == ["core.reference"]
    assert rep["settings"]["forced"] == {"chunk_gated_delta_rule": "core.reference"}
    ref = rep["implementations"]["flash_attn_varlen"][-1]
    assert ref["id"] == "core.reference" and ref["disabled"] and not ref["candidate_here"]


def test_python_m_atrex_env():
    env = {k: v for k, v in os.environ.items() if not k.startswith("ATREX_")}
    proc = subprocess.run([sys.executable, "-m", "atrex", "env", "--device", "cpu"], env=env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "target cpu" in proc.stdout and "atrex-nvidia" in proc.stdout and "[loaded]" in proc.stdout


def test_explain_flash_attn():
    out = invoke("explain", "flash_attn", *ATTN)
    assert out.startswith("flash_attn_varlen on cpu")
    assert "core.reference" in out and "CHOSEN" in out
    assert out.rstrip().endswith("=> core.reference")


def test_explain_flash_attn_json():
    d = json.loads(invoke("explain", "flash_attn", *ATTN, "--json"))
    assert d["op"] == "flash_attn_varlen" and d["target"] == "cpu" and d["chosen"] == "core.reference"
    ref = next(c for c in d["candidates"] if c["id"] == "core.reference")
    assert ref["eligible"] is True and ref["note"] == "CHOSEN" and ref["reasons"] == []


@pytest.mark.parametrize("extra", [["--page-size", "0"], ["--window", "16", "0", "--softcap", "30", "--sinks", "--lse"],
                                   ["--dtype", "fp16", "--no-causal"], ["--dtype", "fp8"]])
def test_explain_flash_attn_options(extra):
    d = json.loads(invoke("explain", "flash_attn", *ATTN, *extra, "--json"))
    assert d["chosen"] == "core.reference"


def test_explain_chunk_gdn():
    out = invoke("explain", "chunk_gdn", *GDN)
    assert out.startswith("chunk_gated_delta_rule on cpu")
    assert "CHOSEN" in out and out.rstrip().endswith("=> core.reference")
    d = json.loads(invoke("explain", "chunk_gdn", *GDN, "--state", "none", "--k-first", "--json"))
    assert d["op"] == "chunk_gated_delta_rule" and d["chosen"] == "core.reference"


def test_explain_shows_a_refusal(monkeypatch):
    from atrex import env

    monkeypatch.setenv("ATREX_DISABLE", "core.reference")
    env.reload()
    out = invoke("explain", "flash_attn", *ATTN)
    assert "disabled (ATREX_DISABLE)" in out and "=> NOT SUPPORTED" in out


def test_explain_malformed_call_fails_with_the_argument():
    result = CliRunner().invoke(main, ["explain", "flash_attn", "--device", "cpu", "--heads", "6", "--kv-heads", "4"])
    assert result.exit_code == 1  # a clean CLI error, not a traceback
    assert "Error: AtrexValueError" in result.output and "`k`" in result.output
    assert "Traceback" not in result.output


def test_prewarm_refusal_is_a_cli_error(monkeypatch):
    from atrex import env

    monkeypatch.setenv("ATREX_DISABLE", "core.reference")
    env.reload()
    result = CliRunner().invoke(main, ["prewarm", "chunk_gdn", *GDN])
    assert result.exit_code == 1
    assert "AtrexNotSupportedError" in result.output and "disabled by ATREX_DISABLE: core.reference" in result.output


def test_prewarm_flash_attn():
    out = invoke("prewarm", "flash_attn", *ATTN)
    assert out.strip() == "core.reference: nothing to compile"


def test_prewarm_chunk_gdn():
    out = invoke("prewarm", "chunk_gdn", *GDN)
    assert out.strip() == "core.reference: nothing to compile"


@pytest.mark.parametrize("extra", [["--gate", "A_log"], ["--gate", "A_log+dt_bias", "--beta-sigmoid", "sigmoid"],
                                   ["--dtype", "fp32", "--beta-sigmoid", "sigmoid-neg-eig"]])
def test_chunk_gdn_fla_options(extra):
    """fla's in-kernel gate and beta sigmoid (and fp32) reach explain and prewarm, so a serving engine can warm
    those specialisations from the command line."""
    from atrex.cli import _gdn_kwargs
    d = json.loads(invoke("explain", "chunk_gdn", *GDN, *extra, "--json"))
    assert d["chosen"] == "core.reference"
    assert invoke("prewarm", "chunk_gdn", *GDN, *extra).strip() == "core.reference: nothing to compile"
    kw = _gdn_kwargs("cpu", "bf16", "5,3", 2, 4, 16, "fp32", True, True, "A_log+dt_bias", "sigmoid-neg-eig")
    assert kw["use_gate_in_kernel"] and kw["A_log"].shape == kw["dt_bias"].shape == (4,)
    assert kw["use_beta_sigmoid_in_kernel"] and kw["allow_neg_eigval"]


def test_demo():
    out = invoke("demo")
    assert out.count("MATCHES") == 3
    assert "summary" in out


@pytest.mark.parametrize("argv", [
    ["explain", "flash_attn", "--device", "cuda"],
    ["explain", "chunk_gdn", "--device", "cuda:0"],
    ["prewarm", "flash_attn", "--device", "cuda"],
    ["demo", "--device", "cuda"],
    ["verify", "flash_attn", "--device", "cuda"],
    ["bench", "run", "chunk_gdn", "--device", "cuda", "--history", os.devnull],
])
def test_cuda_without_a_gpu_is_a_one_line_error(monkeypatch, argv):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)
    result = CliRunner().invoke(main, argv)
    assert result.exit_code == 2, result.output  # click's usage error, not a traceback
    assert "Traceback" not in result.output and isinstance(result.exception, SystemExit)
    [line] = [ln for ln in result.output.splitlines() if ln.startswith("Error:")]
    assert "no CUDA device is visible" in line


def test_unknown_device_is_a_usage_error():
    result = CliRunner().invoke(main, ["explain", "flash_attn", "--device", "nonsense"])
    assert result.exit_code == 2 and "--device" in result.output and "Traceback" not in result.output
