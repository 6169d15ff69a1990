"""Where a benchmark result comes from: device, driver, library versions, commit, date."""

from __future__ import annotations

import datetime as _dt
import subprocess
from functools import cache
from importlib import metadata
from pathlib import Path


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def _git(*args: str) -> str | None:
    try:
        res = subprocess.run(["git", *args], capture_output=True, text=True, timeout=10, check=False,
                             cwd=Path.cwd())
    except (OSError, subprocess.TimeoutExpired):
        return None
    return res.stdout.strip() or None if res.returncode == 0 else None


def _driver() -> str | None:
    try:
        res = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20, check=False)
        return res.stdout.strip().splitlines()[0] if res.returncode == 0 and res.stdout.strip() else None
    except (OSError, subprocess.TimeoutExpired):
        return None


@cache
def provenance(device_str: str) -> dict:
    import torch

    device = torch.device(device_str)
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    from atrex import env

    # A copied tree on a test host may carry a stale .git: the caller's ATREX_BENCH_COMMIT wins.
    commit = env.settings().bench_commit
    dirty = None
    if commit is None:
        commit = _git("rev-parse", "--short=12", "HEAD")
        dirty = _git("status", "--porcelain", "--untracked-files=no") if commit else None
    try:
        import triton

        triton_version = triton.__version__
    except ImportError:
        triton_version = None
    return {
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "device": name,
        "driver": _driver() if device.type == "cuda" else None,
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "triton": triton_version,
        "atrex_core": _version("atrex-core"),
        "atrex_nvidia": _version("atrex-nvidia"),
        "flash_attn_4": _version("flash-attn-4"),
        "nvidia_cutlass_dsl": _version("nvidia-cutlass-dsl"),
        "fla_core": _version("fla-core"),
        "flashinfer": _version("flashinfer-python"),
        "commit": (commit + ("-dirty" if dirty else "")) if commit else "unknown",
    }
