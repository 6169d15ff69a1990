"""Sessions: lint, tests-cpu (default), compile-gate-full, tests(<target>), vllm-cpu (the vLLM plugin against
installed vLLM releases, CPU only), build. CI (.ci/run) runs tests-cpu, compile-gate-full and vllm-cpu.

Every session installs from ``uv.lock`` (uv backend), so CI and developers test the same versions.
Target sessions probe the hardware *before* installing anything and skip with a clear message.
"""

from __future__ import annotations

import filecmp
import os
import shutil
import subprocess
from pathlib import Path

import nox

nox.options.default_venv_backend = "uv"
nox.options.sessions = ["tests-cpu"]
nox.options.reuse_existing_virtualenvs = True

ROOT = Path(__file__).parent
PACKAGES = ["packages/core", "packages/nvidia", "packages/ppu"]

# target -> (vendor test folder, how to recognise the hardware)
TARGETS = {
    "nvidia-sm90": ("nvidia", "sm90"),
    "nvidia-sm100": ("nvidia", "sm100"),
    "nvidia-sm103": ("nvidia", "sm103"),
    "nvidia-sm120": ("nvidia", "sm120"),
    "ppu-zwm890p": ("ppu", "zwm890p"),
}


def _sync(session: nox.Session, *extra: str) -> None:
    """Install the locked workspace (every member) into the session's venv."""
    session.run_install(
        "uv", "sync", "--locked", "--all-packages", "--group", "test", *extra,
        f"--python={session.virtualenv.location}",
        env={"UV_PROJECT_ENVIRONMENT": session.virtualenv.location},
        external=True,
    )


def _test_caches(session: nox.Session) -> tuple[list[str], dict[str, str]]:
    """Pytest options and environment for a session's test run: pytest's own cache and Triton's (compiled artefacts,
    keyed by source, options and toolchain: a repeated run reuses the compile gate's cubins) in the session's own
    directory; every other cache a test would write goes to a temporary directory (``op_test/conftest.py``)."""
    tmp = Path(session.virtualenv.location) / "test-cache"
    return ["-o", f"cache_dir={tmp / 'pytest'}"], {"ATREX_TEST_TRITON_CACHE": str(tmp / "triton")}


def _workers() -> int:
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return max(1, min(cpus, 8))


@nox.session(name="tests-cpu")
def tests_cpu(session: nox.Session) -> None:
    """CPU tier: contracts, validation, registry, references, fuzzing, CLI, the SM90 compile gate over a
    representative subset of its specialisations. Target tests skip. One pytest worker per CPU (up to 8), each
    test file on one worker."""
    _sync(session)
    opts, env = _test_caches(session)
    session.run("pytest", "op_test", "-n", str(_workers()), "--dist", "loadfile", *opts, *session.posargs,
                env={"ATREX_STRICT_PLUGINS": "1", "CUDA_VISIBLE_DEVICES": os.environ.get("CUDA_VISIBLE_DEVICES", ""),
                     **env})


@nox.session(name="compile-gate-full")
def compile_gate_full(session: nox.Session) -> None:
    """The SM90 compile gate over every specialisation the launchers request (tests-cpu compiles a representative
    subset); CI runs it after tests-cpu."""
    _sync(session)
    opts, env = _test_caches(session)
    session.run("pytest", "op_test/nvidia/test_triton_sm90_compile.py", "--compile-gate=full", *opts,
                *session.posargs, env={"ATREX_STRICT_PLUGINS": "1", "CUDA_VISIBLE_DEVICES": "", **env})


@nox.session
def lint(session: nox.Session) -> None:
    """ruff, a fresh lock, and byte-identical LICENSE/NOTICE copies in every package."""
    session.run_install("uv", "pip", "install", "ruff>=0.8", f"--python={session.virtualenv.location}",
                        external=True)
    session.run("ruff", "check", ".")
    session.run("uv", "lock", "--check", external=True)
    bad = [f"{p}/{name}" for p in PACKAGES for name in ("LICENSE", "NOTICE")
           if not filecmp.cmp(ROOT / name, ROOT / p / name, shallow=False)]
    if bad:
        session.error(f"not identical to the root copy: {', '.join(bad)}")


def _probe_nvidia() -> list[tuple[str, str]]:
    """(name, compute capability) of each visible GPU, via nvidia-smi; no Python package needed."""
    smi = shutil.which("nvidia-smi")
    if not smi:
        return []
    try:
        res = subprocess.run([smi, "--query-gpu=name,compute_cap", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return []
    rows = []
    for line in res.stdout.splitlines():
        if "," in line:
            name, cap = (x.strip() for x in line.rsplit(",", 1))
            rows.append((name, cap))
    return rows


def _hardware_present(target: str) -> tuple[bool, str]:
    gpus = _probe_nvidia()
    names = ", ".join(f"{n} ({c})" for n, c in gpus) or "no GPU visible to nvidia-smi"
    if target == "ppu-zwm890p":
        if any(n == "ZW-M890P" for n, _ in gpus):
            return True, "ZW-M890P present"
        if os.environ.get("ATREX_PPU_EMULATE") == "1" and any(c == "9.0" for _, c in gpus):
            return True, "EMULATION on an NVIDIA SM90 GPU (ATREX_PPU_EMULATE=1): not real PPU hardware"
        return False, f"needs a ZW-M890P (or ATREX_PPU_EMULATE=1 on an SM90 GPU); found: {names}"
    arch = TARGETS[target][1]
    want = f"{arch[2:-1]}.{arch[-1]}"  # sm90 -> 9.0, sm103 -> 10.3
    if any(c == want for n, c in gpus if n.startswith("NVIDIA ")):
        return True, f"{arch} present"
    return False, f"needs an NVIDIA GPU with compute capability {want}; found: {names}"


@nox.session
@nox.parametrize("target", list(TARGETS))
def tests(session: nox.Session, target: str) -> None:
    """Target tier for one hardware target; skips (before installing anything) without the hardware."""
    ok, why = _hardware_present(target)
    if not ok:
        session.skip(f"tests({target}): {why}")
    session.log(why)
    vendor, arch = TARGETS[target]
    if vendor == "ppu":
        # The PPU lane uses the vendor's preinstalled torch: no-deps installs of the members.
        session.run_install("uv", "pip", "install", "--no-deps", *(f"./{p}" for p in ("packages/core", "packages/ppu")),
                            "pytest", "hypothesis", "filelock", "click", f"--python={session.virtualenv.location}",
                            external=True)
    else:
        _sync(session)
    opts, env = _test_caches(session)
    session.run("pytest", f"op_test/{vendor}", "-k", arch, *opts, *session.posargs,
                env={"ATREX_STRICT_PLUGINS": "1", **env})


#: vLLM releases the vllm-cpu session installs -> the torch each pins (atrex.integrations.vllm._versions.TESTED).
VLLM_CPU_RELEASES = {"0.20.0": "2.11.0", "0.33.0": "2.14.0", "0.34.0": "2.14.0"}
#: What importing vLLM's attention backend and GDN layer needs on a CPU host, at the versions vLLM requires: with
#: their own dependencies, and without (these would pull torch again, or triton).
VLLM_IMPORT_DEPS = ("regex", "psutil", "pyzmq", "pydantic", "aiohttp", "requests", "pillow", "pybase64", "cachetools",
                    "cbor2", "msgspec", "cloudpickle", "uvloop", "py-cpuinfo", "prometheus-client", "einops", "pyyaml",
                    "transformers", "tokenizers", "loguru", "gguf", "openai", "openai-harmony", "fastapi",
                    "partial-json-parser")
VLLM_IMPORT_DEPS_NO_DEPS = ("xgrammar", "llguidance", "compressed-tensors", "apache-tvm-ffi")
_VLLM_REQS = """
import importlib.metadata as md, re, sys
want = {n.lower().replace("_", "-") for n in sys.argv[1:]}
reqs = {re.split(r"[ ;<>=!~\\[]", r, maxsplit=1)[0].lower().replace("_", "-"): r.split(";")[0].strip()
        for r in md.requires("vllm") or []}
print("\\n".join(reqs.get(n, n) for n in sorted(want)))
"""


def _uv_pip(session: nox.Session, *args: str) -> None:
    session.run_install("uv", "pip", "install", "-q", f"--python={session.virtualenv.location}", *args,
                        external=True)


def _locked_torch() -> str:
    """The newest torch version uv.lock pins for the workspace (what tests-cpu installs, so uv has it cached)."""
    import re
    versions = re.findall(r'name = "torch"\nversion = "([^"]+)"', (ROOT / "uv.lock").read_text())
    return max(versions, key=lambda v: tuple(int(x) for x in re.findall(r"\d+", v)))


def _vllm_torch(session: nox.Session, pinned: str) -> None:
    """ATREX_VLLM_TORCH (a requirement or a wheel) if set; else the CPU build of the torch the release pins from
    PyTorch's CPU index; where that index cannot be reached, the workspace's locked torch from PyPI (the checks
    import vLLM without its compiled ops, which do not bind them to one torch), said in the log."""
    override = os.environ.get("ATREX_VLLM_TORCH")
    if override:
        _uv_pip(session, override)
        return
    try:
        _uv_pip(session, f"torch=={pinned}+cpu", "--extra-index-url", "https://download.pytorch.org/whl/cpu")
    except nox.command.CommandFailed:
        locked = _locked_torch()
        session.warn(f"torch=={pinned}+cpu could not be installed (PyTorch's CPU index unreachable?): using the "
                     f"workspace's locked torch=={locked} from PyPI instead")
        _uv_pip(session, f"torch=={locked}")


@nox.session(name="vllm-cpu")
@nox.parametrize("vllm", list(VLLM_CPU_RELEASES))
def vllm_cpu(session: nox.Session, vllm: str) -> None:
    """The vLLM plugin against installed vLLM releases (op_test/vllm_installed), no GPU: vLLM without its dependencies, the
    CPU torch it pins (PyTorch's CPU index; ATREX_VLLM_TORCH=<requirement or wheel> overrides), the few packages
    importing its attention backend and GDN layer needs, atrex-core and atrex-nvidia (its manifest) editable."""
    _vllm_torch(session, VLLM_CPU_RELEASES[vllm])
    _uv_pip(session, "--no-deps", f"vllm=={vllm}")
    reqs = session.run("python", "-c", _VLLM_REQS, *VLLM_IMPORT_DEPS, silent=True).splitlines()
    no_deps = session.run("python", "-c", _VLLM_REQS, *VLLM_IMPORT_DEPS_NO_DEPS, silent=True).splitlines()
    _uv_pip(session, *reqs, "numpy>=1.24", "click>=8.1", "tqdm>=4.66", "pytest>=8")
    _uv_pip(session, "--no-deps", *no_deps, "-e", "./packages/core", "-e", "./packages/nvidia")
    opts, env = _test_caches(session)
    session.run("pytest", "op_test/vllm_installed", "-s", *opts, *session.posargs,
                env={"CUDA_VISIBLE_DEVICES": "", "ATREX_STRICT_PLUGINS": "1", **env})


@nox.session
def build(session: nox.Session) -> None:
    """Build the four wheels (and sdists) into dist/."""
    session.run("uv", "build", "--all-packages", "-o", "dist", external=True)
