"""Lazy compilation and loading of the native PPU sources (never at import, never under capture).

Each translation unit of ``native/`` becomes one shared library with ``extern "C"`` kernels
(``atrex_ppu_*``) and host launch wrappers, loaded with :mod:`ctypes` and launched on the current
torch stream with raw pointers.

* Real PPU (target not emulated): HGCC from ``ATREX_PPU_HGCC`` with the PPU SDK headers from
  ``ATREX_PPU_SDK`` (flags not yet verified on hardware).
* Emulation (``ATREX_PPU_EMULATE=1``, NVIDIA SM90): the same sources built by nvcc for ``sm_90``.

Cache key: sha256 of the library name, the translation unit and the shared header, the compiler path
and ``--version`` output, the flags, the arch and the emulation flag; computed once per process and
library. On-disk cache under ``atrex.env.settings().cache_dir / "ppu"``, written under a
:mod:`filelock` lock and renamed atomically, so threads and processes can share it.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from atrex import env

NATIVE_DIR = Path(__file__).resolve().parent / "native"
HEADER = "ppu_attn_common.cuh"

#: library -> translation unit
LIBRARIES: dict[str, str] = {
    "decode": "native_decode.cu",
    "prep_kv": "prep_kv.cu",
    "prefill_h8k1": "prefill_h8k1.cu",
    "prefill_general": "prefill_general.cu",
}

_P, _I, _L, _F = ctypes.c_void_p, ctypes.c_int, ctypes.c_longlong, ctypes.c_float
_DESC = [_P, _L, _L]
#: exported launch wrappers: name -> argtypes (all return int, a cudaError_t)
LAUNCHERS: dict[str, dict[str, list]] = {
    "decode": {
        "atrex_ppu_launch_decode": [_I, _P, _L, _P, _P, _L, _L, _L, _L, _L, _L, _P, _L, _I, *_DESC, *_DESC, *_DESC,
                                    _P, _P, _P, _L, _L, _P, _P, _I, _I, _I, _I, _I, _I, _I, _F, _P],
        "atrex_ppu_launch_decode_combine": [_P, _P, _P, _P, _L, _L, _I, _I, _I, _I, _I, _P],
    },
    "prep_kv": {
        "atrex_ppu_launch_prep_raw": [_P, _P, _L, _L, _L, _L, _L, _L, _P, _L, _I, _P, _P, _P, _I, _I, _I,
                                      *_DESC, *_DESC, *_DESC, _P, _P],
        "atrex_ppu_launch_combine": [_P, _P, _P, _P, _L, _L, _I, _I, _I, _I, _I, _P],
    },
    "prefill_h8k1": {
        "atrex_ppu_launch_attn": [_P, _L, _P, _P, _P, _P, _P, _L, _L, _P, _P, _I, _I, _I, _I, _I, _I, _P],
    },
    "prefill_general": {
        "atrex_ppu_launch_attn_general": [_P, _L, _P, _P, _P, _P, _P, _P, _L, _L, _P, _P, _I, _I, _I, _I, _I, _I,
                                          _I, _I, _F, _P],
    },
}

NVCC_FLAGS = ("-O3", "-std=c++17", "-arch=sm_90", "-shared", "-Xcompiler", "-fPIC", "-DATREX_PPU_EMULATION=1")
# Not yet verified on a PPU host: HGCC is CUDA-compatible; the SDK include folder is passed explicitly.
HGCC_FLAGS = ("-O3", "-std=c++17", "-shared", "-fPIC", "-DATREX_PPU_HGCC=1")


@dataclass(frozen=True)
class Toolchain:
    compiler: str  # path
    identity: str  # first lines of `--version`
    flags: tuple[str, ...]
    arch: str  # "sm_90" (emulation) or "zwm890p"
    emulated: bool


def compute_cache_key(library: str, sources: Mapping[str, bytes], compiler_identity: str,
                      flags: Iterable[str], arch: str, emulated: bool) -> str:
    """sha256 over everything that changes the binary (pure: unit-tested without a compiler)."""
    h = hashlib.sha256()
    for part in (library, compiler_identity, "\0".join(flags), arch, "emulated" if emulated else "native"):
        h.update(part.encode())
        h.update(b"\x00\x01")
    for name in sorted(sources):
        h.update(name.encode())
        h.update(b"\x00\x02")
        h.update(sources[name])
        h.update(b"\x00\x03")
    return h.hexdigest()


def library_sources(library: str) -> dict[str, bytes]:
    """The translation unit of ``library`` and the header it includes."""
    tu = LIBRARIES[library]
    return {name: (NATIVE_DIR / name).read_bytes() for name in (tu, HEADER)}


def _find_nvcc() -> str:
    for cand in (shutil.which("nvcc"), os.environ.get("CUDA_HOME") and os.path.join(os.environ["CUDA_HOME"], "bin",
                                                                                         "nvcc"),
                 "/usr/local/cuda/bin/nvcc"):
        if cand and os.path.exists(cand):
            return cand
    raise RuntimeError("atrex_ppu: PPU emulation needs nvcc (CUDA 12.4+) on PATH, in $CUDA_HOME/bin or "
                       "/usr/local/cuda/bin")


def _identity(compiler: str) -> str:
    res = subprocess.run([compiler, "--version"], capture_output=True, text=True, timeout=60)
    return f"{compiler}\n{res.stdout.strip()}"


_toolchains: dict[bool, Toolchain] = {}
_keys: dict[tuple[str, bool], str] = {}
_loaded: dict[tuple[str, bool], Library] = {}
_lock = threading.Lock()
_lib_locks: dict[tuple[str, bool], threading.Lock] = {}


def toolchain(emulated: bool) -> Toolchain:
    """The compiler for a target (probed once per process)."""
    with _lock:
        tc = _toolchains.get(emulated)
    if tc is not None:
        return tc
    if emulated:
        cc = _find_nvcc()
        tc = Toolchain(cc, _identity(cc), NVCC_FLAGS, "sm_90", True)
    else:
        s = env.settings()
        if not s.ppu_hgcc:
            raise RuntimeError("atrex_ppu: ATREX_PPU_HGCC is not set (the HGCC path on a PPU host)")
        flags = HGCC_FLAGS + ((f"-I{Path(s.ppu_sdk) / 'include'}",) if s.ppu_sdk else ())
        tc = Toolchain(s.ppu_hgcc, _identity(s.ppu_hgcc), flags, "zwm890p", False)
    with _lock:
        return _toolchains.setdefault(emulated, tc)


def cache_key(library: str, emulated: bool) -> str:
    """The library's cache key, hashed once per process."""
    k = (library, emulated)
    with _lock:
        hit = _keys.get(k)
    if hit is not None:
        return hit
    tc = toolchain(emulated)
    key = compute_cache_key(library, library_sources(library), tc.identity, tc.flags, tc.arch, emulated)
    with _lock:
        return _keys.setdefault(k, key)


class Library:
    """A loaded shared library with typed launch wrappers; ``call`` raises on a launch error."""

    def __init__(self, name: str, path: Path):
        self.name = name
        self.path = path
        self._dll = ctypes.CDLL(str(path))
        self._err = self._dll.atrex_ppu_error_string
        self._err.restype = ctypes.c_char_p
        self._err.argtypes = [ctypes.c_int]
        self._touch = self._dll.atrex_ppu_touch
        self._touch.restype = ctypes.c_int
        self._fns = {}
        for fn, argtypes in LAUNCHERS[name].items():
            f = getattr(self._dll, fn)
            f.restype = ctypes.c_int
            f.argtypes = argtypes
            self._fns[fn] = f
        self._touched: set[int] = set()

    def touch(self, device_index: int) -> None:
        """Load the kernels into the device's context (before any capture)."""
        if device_index in self._touched:
            return
        self._check("atrex_ppu_touch", self._touch())
        self._touched.add(device_index)

    def call(self, fn: str, *args) -> None:
        self._check(fn, self._fns[fn](*args))

    def _check(self, fn: str, code: int) -> None:
        if code:
            raise RuntimeError(f"atrex_ppu: {fn} failed: CUDA error {code} ({self._err(code).decode()})")


def is_loaded(library: str, emulated: bool) -> bool:
    return (library, emulated) in _loaded


def get_loaded(library: str, emulated: bool) -> Library | None:
    return _loaded.get((library, emulated))


def _compile(library: str, emulated: bool) -> Library:
    tc = toolchain(emulated)
    key = cache_key(library, emulated)
    out_dir = env.settings().cache_dir / "ppu"
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{library}-{'emu' if emulated else 'ppu'}-{key[:32]}.so"
    if not path.exists():
        from filelock import FileLock

        with FileLock(str(path) + ".lock"):
            if not path.exists():
                fd, tmp = tempfile.mkstemp(suffix=".so", dir=out_dir)
                os.close(fd)
                cmd = [tc.compiler, *tc.flags, "-I", str(NATIVE_DIR), "-o", tmp, str(NATIVE_DIR / LIBRARIES[library])]
                res = subprocess.run(cmd, capture_output=True, text=True)
                if res.returncode != 0:
                    os.unlink(tmp)
                    raise RuntimeError(f"atrex_ppu: compiling {LIBRARIES[library]} failed ({' '.join(cmd)}):\n"
                                       f"{(res.stderr or res.stdout)[-4000:]}")
                os.replace(tmp, path)
    return Library(library, path)


def ensure(libraries: Iterable[str], emulated: bool, device_index: int | None = None) -> dict[str, Library]:
    """Compile (or load from the disk cache) and load the libraries; independent ones build in parallel.
    With ``device_index`` also load their kernels into that device's context."""
    libraries = tuple(libraries)
    missing = [lib for lib in libraries if (lib, emulated) not in _loaded]

    def one(lib: str) -> None:
        with _lock:
            lk = _lib_locks.setdefault((lib, emulated), threading.Lock())
        with lk:
            if (lib, emulated) not in _loaded:
                built = _compile(lib, emulated)
                with _lock:
                    _loaded[(lib, emulated)] = built

    if len(missing) == 1:
        one(missing[0])
    elif missing:
        with ThreadPoolExecutor(max_workers=len(missing)) as ex:
            list(ex.map(one, missing))
    libs = {lib: _loaded[(lib, emulated)] for lib in libraries}
    if device_index is not None:
        for lib in libs.values():
            lib.touch(device_index)
    return libs
