"""Shared by every test folder: where the tests' caches go, and the compile gate's extent.

No test writes outside a temporary directory. Before any test module imports Triton, torch or matplotlib, this
points every cache they (and ATREX) would keep under the home directory at a fresh temporary directory, removed
when the process exits: Triton's home (``TRITON_HOME``: its cache, dump and override folders; Triton reads these at
use time, subprocesses inherit them), ``ATREX_CACHE_DIR``, matplotlib's and torch inductor's caches, and
Hypothesis's storage (example database and constants; by default ``.hypothesis/`` in the working directory).

``ATREX_TEST_TRITON_CACHE``, when set, is the Triton cache instead (compiled artefacts keyed by source, options and
toolchain): the nox sessions set it to a folder in the session's own directory so a repeated run reuses the compile
gate's cubins.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile

_ROOT = tempfile.mkdtemp(prefix="atrex-op-test-")
atexit.register(shutil.rmtree, _ROOT, ignore_errors=True)
CACHE_ENV = {
    "TRITON_HOME": os.path.join(_ROOT, "triton-home"),
    "TRITON_CACHE_DIR": os.environ.get("ATREX_TEST_TRITON_CACHE") or os.path.join(_ROOT, "triton-home", ".triton", "cache"),
    "ATREX_CACHE_DIR": os.path.join(_ROOT, "atrex"),
    "MPLCONFIGDIR": os.path.join(_ROOT, "matplotlib"),
    "TORCHINDUCTOR_CACHE_DIR": os.path.join(_ROOT, "torchinductor"),
    "HYPOTHESIS_STORAGE_DIRECTORY": os.path.join(_ROOT, "hypothesis"),
}
os.environ.update(CACHE_ENV)


def _hypothesis_home() -> None:
    try:
        from hypothesis.configuration import set_hypothesis_home_dir
    except ImportError:
        return
    set_hypothesis_home_dir(CACHE_ENV["HYPOTHESIS_STORAGE_DIRECTORY"])  # (this process; the variable: subprocesses)


_hypothesis_home()


def pytest_addoption(parser):
    parser.addoption("--compile-gate", choices=("representative", "full"), default="representative",
                     help="SM90 compile gate (nvidia/test_triton_sm90_compile.py): compile a representative subset "
                          "of the recorded specialisations (default) or every one")

