"""A GPU-free sm90 target for Triton: the launchers' specialisations are recorded, not compiled or launched.

``record_specialisations()`` makes Triton's active driver a stand-in that reports an sm90 target (device 0, stream
0, torch device cpu) and installs a ``knobs.runtime.jit_cache_hook`` that records each specialisation a launcher asks
for and returns before any compile or launch. Used by ``nvidia/test_triton_sm90_compile.py`` (the compile gate).
"""

import re

import torch
from triton import knobs
from triton.backends.compiler import GPUTarget
from triton.runtime import driver

SM90 = GPUTarget("cuda", 90, 32)


class Sm90StandIn:
    """Just enough of a Triton driver for the binder: an sm90 target, device 0, stream 0."""

    def get_current_target(self):
        return SM90

    def get_current_device(self):
        return 0

    def get_current_stream(self, device=None):
        return 0

    def get_active_torch_device(self):
        return torch.device("cpu")


def record_specialisations():
    """Activate the stand-in driver and the recording hook; returns the dict it fills:
    ``"<kernel name>|<key>" -> (JITFunction, compile options)``; the options include ``maxnreg`` where the launch
    set one."""
    driver.set_active(Sm90StandIn())
    specs = {}

    def record(*, key, repr, fn, compile, is_manual_warmup, already_compiled):
        # the launch's register cap (Triton's ``maxnreg``) is in the key's options, not in ``compile``
        cap = re.search(r"'maxnreg': (\d+)", key)
        if cap:
            compile = dict(compile, maxnreg=int(cap.group(1)))
        specs.setdefault(f"{fn.name}|{key}", (fn.jit_function, compile))
        return True  # handled: Triton neither compiles nor launches

    knobs.runtime.jit_cache_hook = record
    return specs


# ---- the compile gate's selection and its compile step -------------------------------------------------------


def _params(jit_fn):
    return [p.name for p in jit_fn.params]


def features(name, jit_fn, c) -> set:
    """What one recorded specialisation exercises, per kernel: each constexpr value (an int argument equal to 1 that
    Triton specialised counts as a constexpr of value 1), each argument type, each argument's alignment
    attributes, the launch options (warps, stages, register cap); for the per-head intra kernel also the pair of
    its fp16-inverse flag and value heads per program (the gate's HMMA check needs both with the inverse on)."""
    kernel, params = name.split("|", 1)[0], _params(jit_fn)
    const = {params[k[0]]: v for k, v in c["constants"].items() if len(k) == 1}
    out = {(kernel,), (kernel, "launch", c["num_warps"], c["num_stages"], c.get("maxnreg"))}
    out |= {(kernel, "const", p, repr(v)) for p, v in const.items()}
    out |= {(kernel, "type", p, t) for p, t in c["signature"].items() if t != "constexpr"}
    out |= {(kernel, "attr", params[k[0]], repr(a)) for k, a in (c["configs"][0] or {}).items() if len(k) == 1}
    if "INV_FP16" in const:
        out.add((kernel, "INV_FP16*GS", bool(const["INV_FP16"]), const.get("GS", 1)))
    return out


def representative(specs: dict) -> list:
    """Names of a subset of ``specs`` (from ``record_specialisations``) that has every feature (``features``) of the
    whole set: a greedy set cover over the names in sorted order, so the same set of specialisations gives the same
    subset on every machine. The compile gate's default tier compiles this subset; ``--compile-gate=full`` all."""
    todo = {n: features(n, *specs[n]) for n in sorted(specs)}
    need = set().union(*todo.values()) if todo else set()
    chosen = []
    while need:
        best = max(todo, key=lambda n: len(todo[n] & need))  # (max keeps the first of equals: sorted order)
        chosen.append(best)
        need -= todo.pop(best)
    return sorted(chosen)


def describe(name, jit_fn, c) -> dict:
    """What the gate checks that the constants alone decide (no compile): the PDL constexpr, the per-head intra
    kernel's value heads per program and fp16 inverse, whether a state kernel has T as the constant 1, the rc / rc2
    initial-state prefetch mode and its block sizes, the gates kernel's gate options, the generic pair's dot
    precision."""
    params = _params(jit_fn)
    const = lambda p, default=None: c["constants"].get((params.index(p),), default)
    r = {}
    if "PDL" in params:
        r["pdl_const"] = bool(const("PDL", False))
    if "intra_chunk_v3" in name:
        r["gs"], r["inv_fp16"] = const("GS", 1), bool(const("INV_FP16", False))
    if name.startswith("atrex_sm90_gdn_gates|"):  # fla's in-kernel gate: (GATE_IN_KERNEL, HAS_DT_BIAS, STORE_FAC)
        r["gate"] = [bool(const("GATE_IN_KERNEL", False)), bool(const("HAS_DT_BIAS", False)),
                     bool(const("STORE_FAC", True))]
    if "DOT_PRECISION" in params:  # the generic pair's dot precision (tf32x3 for fp32 q/k/v)
        r["dot_precision"] = const("DOT_PRECISION", "tf32")
    if "state_output" in name:
        r["t_is_one"] = const("T") == 1
        if "H0PF" in params:
            r["h0pf"] = dict(mode=const("H0PF", 0), bk=const("BK"), bv=const("BV"),
                             two=name.startswith("atrex_sm90_gdn_state_output_gl_rc2|"))
    return r


def compile_items(specs: dict, names) -> list:
    """Picklable work items for ``compile_one``: the kernel by module and name (a worker process imports it)."""
    items = []
    for n in names:
        jit_fn, c = specs[n]
        items.append((n, jit_fn.fn.__module__, jit_fn.fn.__name__, c))
    return items


SMEM_LIMIT = 232448  # bytes of shared memory one block may use on H100 / H200 (227 KiB)
_MEM = r"\b(LDG|STG|LDS|STS|ATOM|ATOMG|RED|UTMALDG|UTMASTG|UBLKCP|LDGSTS)\b"


def compile_one(item) -> tuple:
    """Compiles one specialisation to a cubin for sm90 (Triton's cache, keyed by source, options and toolchain,
    serves a repeat) and reads from it what the gate checks: static shared memory against the per-block limit,
    the PTX register cap, and, where Triton ships ``nvdisasm``, the SASS: instruction / HMMA / HGMMA / barrier
    counts, uniform registers read but never written, the PDL instructions and the first memory access, the L2
    prefetches. Returns ``(name, result)``; a compile error is a result with ``ok`` False."""
    import importlib
    import os
    import re
    import subprocess
    import tempfile

    import triton
    from sass_check import unwritten_uniform_reads
    from triton.compiler import ASTSource

    driver.set_active(Sm90StandIn())  # (in a worker process too: the target the recording saw)
    name, module, fname, c = item
    jit_fn = getattr(importlib.import_module(module), fname)
    is_gluon = getattr(jit_fn, "is_gluon", lambda: False)()
    if is_gluon:
        from triton.experimental.gluon._runtime import GluonASTSource as Source
    else:
        Source = ASTSource
    src = Source(jit_fn, c["signature"], c["constants"], c["configs"][0])
    opts = dict(num_warps=c["num_warps"], num_stages=c["num_stages"])
    if c.get("maxnreg"):
        opts["maxnreg"] = c["maxnreg"]
    r = dict(describe(name, jit_fn, c), compiled=True)
    try:
        k = triton.compile(src, target=SM90, options=opts)
    except Exception as exc:  # the finding
        return name, dict(r, ok=False, error=f"{type(exc).__name__}: {str(exc)[:400]}")
    smem = int(k.metadata.shared)
    r.update(ok=smem <= SMEM_LIMIT, shared=smem)
    cap = re.search(r"\.maxnreg\s+(\d+)", k.asm.get("ptx", ""))
    r["ptx_maxnreg"] = int(cap.group(1)) if cap else None
    nvdisasm = nvdisasm_path()
    if not nvdisasm:
        return name, r
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "k.cubin")
        with open(path, "wb") as f:
            f.write(k.asm["cubin"])
        sass = subprocess.run([nvdisasm, "-c", path], capture_output=True, text=True, check=True).stdout
    r.update(insns=sass.count(";"), hmma=sass.count("HMMA."), hgmma=sass.count("HGMMA."), bars=sass.count("BAR.SYNC"))
    if "h0pf" in r:  # L2 prefetches: plain (PF2) and L2::evict_last (PML2)
        r["h0pf"].update(pf2=sass.count("CCTL.E.PF2"), pml2=sass.count("CCTL.E.PML2"))
    r["unwritten_ur"] = unwritten_uniform_reads(sass)[:4]
    # programmatic dependent launch: griddepcontrol.wait / .launch_dependents (ACQBULK / PREEXIT) and, in text order,
    # the first memory access (the Gluon kernels' worker partitions come first in the text, behind a barrier)
    lines = sass.splitlines()
    first = lambda pat: next((i for i, ln in enumerate(lines) if re.search(pat, ln)), None)
    r["pdl"] = dict(
        on=r.get("pdl_const"), gluon=bool(is_gluon), acq=sass.count("ACQBULK"), preexit=sass.count("PREEXIT"),
        acq_at=first(r"ACQBULK"), mem_at=first(_MEM), preexit_at=first(r"PREEXIT"),
        gmem_last=max((i for i, ln in enumerate(lines) if re.search(r"\b(LDG|STG|ATOMG|RED)\b", ln)), default=None))
    return name, r


def nvdisasm_path():
    """Triton's bundled ``nvdisasm``, or None for a Triton without it (the SASS checks are then reported as not
    run)."""
    try:
        return knobs.nvidia.nvdisasm.path
    except Exception:
        return None


def compile_all(items, workers: int) -> dict:
    """``compile_one`` over ``items`` in ``workers`` processes (spawned: they import the kernels afresh, none of the
    recording's state); results in the order of ``items``."""
    if workers <= 1 or len(items) <= 1:
        return dict(compile_one(it) for it in items)
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        return dict(pool.map(compile_one, items, chunksize=1))
