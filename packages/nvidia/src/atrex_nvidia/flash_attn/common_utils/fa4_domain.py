"""The FA4 eligibility domains as data (one per supported FA4 release), and the one ``check`` engine.

Each arch folder (``sm90/``, ``sm100/``, ``sm103/``, ``sm120/``) declares one :class:`Fa4Domain`
per supported FA4 release in its ``fa4_table.py`` (``TABLES``: version -> domain);
:func:`check_fa4` turns a normalized call plus a domain into an ``Eligibility`` listing every
reason. The check is host-only: it reads shapes, dtypes, strides, data pointers and host ints,
never tensor contents, and never imports FA4 (the import probe runs once and is cached,
:func:`fa4_requirement`; it also names the installed release, :func:`fa4_table_version`).

The rules of each table mirror the asserts of that release (``flash_attn/cute/interface.py::
_flash_attn_fwd`` and the kernel classes it builds; the adapter's mapping is in
docs/flash_attn_varlen_func.md, "Notes for FlashAttention-4-backed implementations"). Where ATREX is
deliberately stricter than FA4 the domain field carries the reason in its comment. Any other release is declined
(reason ``requires``, listing the supported ones).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

import torch

from atrex.eligibility import Eligibility, Reason

__all__ = ["FA4_B19", "FA4_B36", "FA4_DIST", "FA4_MODULE", "FA4_RECOMMENDED", "FA4_SUPPORTED", "FA4_VERSIONS",
           "DecodePolicy", "Fa4Domain", "PagedTmaPolicy", "check_fa4", "check_key", "fa4_requirement",
           "fa4_table_version", "fa4_window", "reset_fa4_probe"]

FA4_DIST = "flash-attn-4"
FA4_B19 = "4.0.0b19"  # the first release ATREX pinned
FA4_B36 = "4.0.0b36"
#: The releases the adapter has check tables for (each derived from that release's asserts).
FA4_VERSIONS = (FA4_B19, FA4_B36)
#: The release uv.lock pins; its tables also list the other reasons when FA4 is missing or unsupported. b19: the
#: release the SM90 target tests have passed on hardware; b36's tables come from its source and await that run.
FA4_RECOMMENDED = FA4_B19
FA4_SUPPORTED = " or ".join(f"{FA4_DIST}=={v}" for v in FA4_VERSIONS)
#: The module whose import proves FA4 usable (the launcher calls into it).
FA4_MODULE = "flash_attn.cute.interface"

FP8 = tuple(t for t in (getattr(torch, "float8_e4m3fn", None), getattr(torch, "float8_e5m2", None)) if t)


@dataclass(frozen=True)
class DecodePolicy:
    """``policy.decode_shape``: hand paged calls with ``max_seqlen_q <= max_seqlen_q`` to a split-KV
    kernel. Only meaningful once that kernel is registered; ``enabled=False`` keeps the rule declared
    but inactive."""

    enabled: bool
    max_seqlen_q: int
    goes_to: str


@dataclass(frozen=True)
class PagedTmaPolicy:
    """``policy.paged_tma_tail``: hand paged calls with ``page_size == tile_n`` (FA4's TMA paged path,
    which loads whole pages) to ``goes_to``. ``enabled=False`` keeps the rule declared but inactive."""

    enabled: bool
    goes_to: str


@dataclass(frozen=True)
class Fa4Domain:
    """What ``nvidia.fa4`` accepts on one arch with one FA4 release (that release's facts unless a
    comment says otherwise)."""

    arch: str  # target arch id, e.g. "sm90"
    fa4_arch: int  # FA4's ``_arch`` integer (major*10 + minor); also part of its compile key
    dtypes: tuple  # q/k/v dtypes (all three equal; the core rejects mixed dtypes)
    head_dim_range: tuple[int, int]  # generic kernel: inclusive D = Dv range
    # D must be a multiple of 16 bytes / element size (FA4 ``alignment``): 8 for fp16/bf16, 16 for fp8
    head_dim_align_bytes: int
    paged: bool  # FA4 accepts ``page_table`` on this arch
    # paged KV with page_size != tile_n takes the cp.async path, which asserts
    # "Paged KV does not support irregular head dim" unless D % 16 == 0
    paged_cpasync_head_dim_multiple: int
    tile_n: Callable[[int, bool, bool], int]  # (D, causal, local) -> FA4 forward tile_n
    sink_dtypes: tuple  # learnable_sink dtypes ([Hq]); () = no sinks on this arch
    softcap: bool
    window: bool
    # Stricter than FA4's asserts: the cp.async paged path gives each of its 128 producer threads
    # tile_n // 128 page-table entries. tile_n < 128 fails to compile ("Expected size in shape to be
    # strictly positive", observed on the H200 for D=256 with page 16/128/144), and tile_n = 144 would
    # leave rows 128..143 of a tile without a page entry. So cp.async paging only when tile_n % 128 == 0.
    paged_cpasync_tile_n_multiple: int = 128
    fp8_dtypes: tuple = ()  # fp8 inputs (with descales) -- FA4 asserts arch // 10 == 10
    # D = Dv = 256 through FA4's dedicated 2-CTA kernel (10.x): asserts on softcap, sinks, seqused_k,
    # local windows and descales, and needs a fully contiguous table when paged -> non-paged only
    hd256_dedicated: bool = False
    decode_policy: DecodePolicy | None = None
    paged_tma_policy: PagedTmaPolicy | None = None
    notes: tuple[str, ...] = ()
    fa4_version: str = FA4_B19  # the release whose asserts this table mirrors (and its call convention)
    # b36 only (None on b19): varlen batches above this size make FA4 pass a per-call block-count
    # prefix sum (``_compute_tile_cumsum``) to a kernel compiled for it (BIN_BATCH_SEARCH_THRESH).
    cu_hint_batch_above: int | None = None
    # b36 only: head_dim -> FA4 forward tile_m (its ``is_static_persistent`` compile flag compares
    # max_seqlen_q * G with q_stage * tile_m) and the tile size of that prefix sum
    tile_m: Callable[[int], int] | None = None

    @property
    def fa4_tag(self) -> str:
        """``b19`` for ``4.0.0b19``: the short name used in reasons."""
        return "b" + self.fa4_version.rsplit("b", 1)[-1]

    def head_dim_supported(self) -> str:
        lo, hi = self.head_dim_range
        text = f"{lo}..{hi}, a multiple of 16 bytes (8 for fp16/bf16, 16 for fp8)"
        if self.hd256_dedicated:
            text += "; or 256 (FA4's dedicated kernel: fp16/bf16, non-paged, no softcap, sink, window)"
        return text


# ---- the FA4 import probe (once per process) -------------------------------------------------------

_probe_lock = threading.Lock()
_probe_done = False
_probe_reason: Reason | None = None
_probe_version: str | None = None  # the installed release when it is one of FA4_VERSIONS


def reset_fa4_probe() -> None:
    """Forget the cached probe (tests; after installing FA4 in a running process)."""
    global _probe_done, _probe_reason, _probe_version
    with _probe_lock:
        _probe_done = False
        _probe_reason = None
        _probe_version = None


def _probe() -> tuple[Reason | None, str | None]:
    import importlib
    import importlib.metadata as md

    try:
        version = md.version(FA4_DIST)
    except md.PackageNotFoundError:
        return Reason("requires", "flash_attn.cute", f"{FA4_DIST} not installed",
                      f"{FA4_SUPPORTED} installed and importable (pip install 'atrex[nvidia]')"), None
    except Exception as exc:  # broken metadata
        return Reason("requires", "flash_attn.cute", f"{type(exc).__name__}: {exc}", FA4_SUPPORTED), None
    if version not in FA4_VERSIONS:
        return Reason("requires", "flash_attn.cute", f"{FA4_DIST}=={version}",
                      f"{FA4_SUPPORTED} (the adapter mirrors those releases' asserts)"), None
    try:
        importlib.import_module(FA4_MODULE)
    except Exception as exc:  # ImportError, or a CUDA-DSL runtime failing at import
        return Reason("requires", "flash_attn.cute", f"import failed: {type(exc).__name__}: {exc}",
                      f"{FA4_DIST}=={version} importable"), version
    return None, version


def _probe_once() -> None:
    global _probe_done, _probe_reason, _probe_version
    with _probe_lock:
        if not _probe_done:
            _probe_reason, _probe_version = _probe()
            _probe_done = True


def fa4_requirement() -> Reason | None:
    """None when a supported FA4 release is importable, else the ``requires`` reason (probed once,
    then cached)."""
    if not _probe_done:
        _probe_once()
    return _probe_reason


def fa4_table_version() -> str:
    """The release whose check tables and call convention apply: the installed one when supported,
    else :data:`FA4_RECOMMENDED` (its tables list the other reasons beside ``requires``)."""
    if not _probe_done:
        _probe_once()
    return _probe_version or FA4_RECOMMENDED


# ---- vLLM window -> FA4 window ------------------------------------------------------------------

def fa4_window(call) -> tuple[str, int | None, int | None]:
    """``(mask, left, right)`` exactly as FA4 (b19 and b36) resolves ``causal``/``window_size_left/right``.

    Each vLLM bound maps separately (-1 -> None; never pass -1: FA4 treats ``L + R < 0`` as "no
    window"; b36 when both are negative). ``mask`` is ``"none"``, ``"causal"`` (FA4 collapses ``(None, 0)`` to plain causal, both
    bounds None) or ``"local"``.
    """
    left, right = call.window_left, call.window_right
    if right == 0 and left == -1:
        return "causal", None, None
    if left == -1 and right == -1:
        return "none", None, None
    return "local", (None if left == -1 else left), (None if right == -1 else right)


# ---- the check engine -------------------------------------------------------------------------

_ALIGN = 16  # FA4 builds q/k/v/out CuTe tensors with assumed_align=16; TMA needs 16-byte strides


def _misaligned(t: torch.Tensor) -> str | None:
    es = t.element_size()
    if t.data_ptr() % _ALIGN:
        return f"data_ptr % 16 = {t.data_ptr() % _ALIGN}"
    for s in t.stride()[:-1]:
        if (s * es) % _ALIGN:
            return f"strides {tuple(t.stride())} (elements of {es} bytes)"
    return None


def check_fa4(call, dom: Fa4Domain) -> Eligibility:
    """Every reason ``call`` falls outside ``dom`` (empty -> eligible). Host-only, no FA4 import."""
    reasons = []
    req = fa4_requirement()
    if req is not None:
        reasons.append(req)
    dtype = call.dtype
    is_fp8 = dtype in FP8
    if is_fp8:
        if dtype not in dom.fp8_dtypes:
            reasons.append(Reason("dtype", "q", str(dtype), "float16, bfloat16" + (
                ", float8_e4m3fn, float8_e5m2" if dom.fp8_dtypes else
                f" (FA4 {dom.fa4_tag} asserts fp8 only on arch 10.x; {dom.arch} has none)")))
    elif dtype not in dom.dtypes:
        reasons.append(Reason("dtype", "q", str(dtype), ", ".join(str(d) for d in dom.dtypes + dom.fp8_dtypes)))
    d = call.head_dim
    mask = fa4_window(call)[0]
    local = mask == "local"
    lo, hi = dom.head_dim_range
    multiple = dom.head_dim_align_bytes // max(1, call.q.element_size())
    if d % multiple:
        reasons.append(Reason("head_dim", "q", d, f"a multiple of {multiple} for {dtype} (16-byte rows)"))
    if dom.hd256_dedicated and d == 256:
        # FA4's dedicated D=256 kernel (10.x): everything it asserts on, as separate reasons
        if is_fp8:
            reasons.append(Reason("dtype", "q", str(dtype), "fp16/bf16 with D=256 (the dedicated hd256 kernel "
                                                            "asserts on descales)"))
        if call.paged:
            reasons.append(Reason("paged", "block_table", f"page_size {call.page_size} with D=256",
                                  "non-paged KV for D=256 (FA4's hd256 kernel rejects seqused_k)"))
        if call.softcap != 0.0:
            reasons.append(Reason("softcap", "softcap", call.softcap, "0 with D=256"))
        if call.s_aux is not None:
            reasons.append(Reason("sinks", "s_aux", "given", "None with D=256"))
        if local:
            reasons.append(Reason("window", "window_size", (call.window_left, call.window_right),
                                  "no sliding window with D=256 (causal or full only)"))
    elif not (lo <= d <= hi):
        reasons.append(Reason("head_dim", "q", d, dom.head_dim_supported()))
    if call.paged:
        if not dom.paged:
            reasons.append(Reason("paged", "block_table", f"paged KV (page_size {call.page_size})",
                                  f"non-paged KV only on {dom.arch} (FA4 {dom.fa4_tag} asserts page_table is None)"))
        elif not (dom.hd256_dedicated and d == 256):
            tile_n = dom.tile_n(d, mask == "causal", local)
            tma = dom.paged_tma_policy
            if call.page_size == tile_n and tma is not None and tma.enabled:
                reasons.append(Reason("policy.paged_tma_tail", "block_table",
                                      f"page_size {call.page_size} == FA4 tile_n (its TMA paged path)",
                                      f"page_size != {tile_n} for paged calls (the TMA path reads page tails "
                                      f"beyond seqused_k into P @ V; these go to {tma.goes_to})"))
            if call.page_size != tile_n:  # FA4's cp.async paged path
                if d % dom.paged_cpasync_head_dim_multiple:
                    reasons.append(Reason("head_dim", "q", f"{d} with page_size {call.page_size}",
                                          f"paged KV needs head_dim % {dom.paged_cpasync_head_dim_multiple} == 0 "
                                          f"(FA4's cp.async path), unless page_size == tile_n ({tile_n} here)"))
                elif tile_n % dom.paged_cpasync_tile_n_multiple:
                    reasons.append(Reason("page_size", "k", f"page_size {call.page_size} with head_dim {d}",
                                          f"page_size == FA4 tile_n ({tile_n} for this head dim and mask): FA4's "
                                          f"cp.async paged path needs tile_n % 128 == 0 (it is {tile_n})"))
        pol = dom.decode_policy
        if pol is not None and pol.enabled and call.max_seqlen_q <= pol.max_seqlen_q:
            reasons.append(Reason("policy.decode_shape", "max_seqlen_q", call.max_seqlen_q,
                                  f"> {pol.max_seqlen_q} for paged calls (decode/MTP shapes go to {pol.goes_to})"))
    if call.s_aux is not None and call.s_aux.dtype not in dom.sink_dtypes:
        reasons.append(Reason("sinks", "s_aux", str(call.s_aux.dtype),
                              " or ".join(str(t).replace("torch.", "") for t in dom.sink_dtypes) + " [num_heads_q]"
                              if dom.sink_dtypes else
                              f"None on {dom.arch} (FA4 {dom.fa4_tag}'s kernel asserts learnable_sink is None)"))
    if call.softcap != 0.0 and not dom.softcap:
        reasons.append(Reason("softcap", "softcap", call.softcap, f"0 on {dom.arch}"))
    if local and not dom.window:
        reasons.append(Reason("window", "window_size", (call.window_left, call.window_right),
                              f"no sliding window on {dom.arch}"))
    # Stricter than FA4: it compiles q/k/v/out with assumed_align=16 and reads K/V through TMA
    # (16-byte strides); a misaligned view would fault or fail inside the kernel call instead.
    # (skipped for a head dim that is already declined: its row strides are misaligned by construction)
    # The core computes ``call.aligned16`` once; the per-tensor walk only names the offender.
    if not call.aligned16:
        for name, t in (("q", call.q), ("k", call.k), ("v", call.v), ("out", call.out)):
            if t is not None and not d % multiple:
                bad = _misaligned(t)
                if bad is not None:
                    reasons.append(Reason("alignment", name, bad,
                                          "16-byte aligned data_ptr and 16-byte multiple strides"))
    return Eligibility.of(reasons)


def check_key(call, dom: Fa4Domain) -> tuple | None:
    """Everything :func:`check_fa4` reads from the call, as a hashable key (None for calls that are not
    16-byte aligned: their reasons name tensors). The caller adds the FA4 probe's answer."""
    if not call.aligned16:
        return None
    pol = dom.decode_policy
    return (dom.arch, call.dtype, call.head_dim, call.page_size if call.paged else 0, call.window_left,
            call.window_right, call.max_seqlen_q if pol is not None and pol.enabled else -1,
            None if call.s_aux is None else call.s_aux.dtype, call.softcap)
