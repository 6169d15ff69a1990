"""CPU test: every Triton specialisation ATREX's SM90 launchers would launch compiles for sm90 and fits.

No GPU is needed: in a subprocess, Triton's active driver is replaced by a stand-in that reports an sm90
target, and ``knobs.runtime.jit_cache_hook`` records each specialisation the launchers
(``nvidia.gdn_sm90``, ``nvidia.decode_splitkv``, ``nvidia.paged_prefill_sm90``) ask for and returns before any
compile or launch. Each recorded specialisation is then compiled to a cubin for ``GPUTarget("cuda", 90, 32)``, and its static
shared memory is compared with the H100/H200 limit per block (227 KiB).

What is compiled: by default (``nox -s tests-cpu``) a representative subset, in which every kernel's every
constexpr value, argument type, alignment and launch option set of the recorded set appears
(``sm90_standin.representative``); with ``--compile-gate=full`` (``nox -s compile-gate-full``, which CI runs too)
every recorded specialisation. The checks that the constants alone decide (T = 1, PDL, the plan paths) see every
recorded specialisation either way. Compiles run in parallel processes through Triton's cache, keyed by source,
options and toolchain (the test tier points it at a temporary directory; see ``op_test/conftest.py``).

For ``nvidia.gdn_sm90`` the calls are the default plans of every target-test case (the sequence-parallel
segments, rc2 with its PDL chain, T = 1, fla's in-kernel gate and fp32 q/k/v included) and every state path forced
through a ``GdnPlan``.

This catches, on a CPU, two failures seen on the GPU: a kernel that did not compile when Triton specialised an
int argument equal to 1 into a constexpr (HV == 1), and a configuration needing 260 KB of shared memory (K = 256
with a 3-stage state kernel); the SASS checks below catch the T = 1 miscompile of ptxas 12.8. Triton versions
differ in their lowering; the GPU target tests remain the authority.
"""

import json
import os
import textwrap

import pytest

from testlib import run_result_script

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
PATHS = [os.path.join(ROOT, "packages", "core", "python"), os.path.join(ROOT, "packages", "nvidia", "src"),
         os.path.join(HERE, "chunk_gdn"), os.path.join(ROOT, "op_test")]

triton = pytest.importorskip("triton")

_SCRIPT = textwrap.dedent(r'''
    import json, sys
    sys.path[:0] = SYS_PATH_LIST
    import torch
    import triton
    from sm90_standin import record_specialisations

    specs = record_specialisations()

    # ---- nvidia.gdn_sm90: every default plan of the target-test shapes, and every plan path forced
    import dataclasses
    import _gdn_cases as C
    from atrex_nvidia.chunk_gdn.sm90 import launch as GL
    from atrex_nvidia.chunk_gdn.sm90 import runner

    def gdn(kw, path=None, cid="", **call_kw):
        x, extra = C.case_inputs(cid, kw, "cpu")
        plan = C.plan_for(path, x) if path else None
        if path and plan is None:
            raise AssertionError(f"{path} does not apply to {kw}")
        C.call(x, extra, plan=plan, **call_kw)

    # every gdn_fwd call below also checks that its call signature (the memo that lets a warm call skip its
    # launch keys) determines those keys: one signature must never map to two different key lists
    from atrex_nvidia.triton_warm import launch_key
    sig_keys, sig_clash = {}, []
    _launch_all = GL.launch_all

    # and that the argument list the compiled-kernel replay forms (runner._launch: the positional arguments, then
    # each later parameter from meta or its default) is the one Triton's own binder forms
    bound_checked, bound_wrong = [0], []

    def same(a, b):
        return a is b or (not isinstance(a, torch.Tensor) and not isinstance(b, torch.Tensor) and type(a) is type(b)
                          and a == b)

    def recording_launch_all(dev, launches, sig=None):
        keys = [launch_key(kern, args, meta) for kern, _, args, meta in launches]
        if sig_keys.setdefault(sig, keys) != keys:
            sig_clash.append(repr(sig)[:300])
        for kern, _, args, meta in launches:
            binder = kern.device_caches[0][4]  # (the stand-in driver's device 0)
            want = tuple(binder(*args, **meta)[0].values())
            got = (*args, *[meta[n] if n in meta else d for n, d in runner._param_tail(kern, len(args))])
            bound_checked[0] += 1
            if len(want) != len(got) or not all(same(a, b) for a, b in zip(want, got)):
                bad = [i for i, (a, b) in enumerate(zip(want, got)) if not same(a, b)]
                bound_wrong.append(f"{kern.__name__}: {len(want)} vs {len(got)} arguments, differing at {bad[:5]}")
        return _launch_all(dev, launches, sig)

    GL.launch_all = recording_launch_all
    # the default plan of every target-test case (per-head intra with ws / rc / rc2 / tma / triton, the generic
    # pair, the gates kernel and the varlen bookkeeping, fp16, both state layouts, the sequence-parallel segments)
    for cid, kw in C.GPU_CASES + C.RING_CASES + C.SEQ_PAR_CASES:
        gdn(kw, cid=cid)
    # every state path forced where it applies (the target test's plans)
    for path, cid, kw in C.path_cases(C.STATE_PATHS, C.GPU_CASES):
        gdn(kw, path, cid=cid)
    # T = 1 (the state kernels' twins without T's specialisation, Gluon kernels that never specialise it) with more
    # batch rows, GVA, an initial state, varlen; T = 1 and 2 at the Qwen3-Next head shapes
    for kw in (dict(B=2, T=1, H=2, HV=4, K=64, h0=torch.float32),
               dict(B=3, T=1, H=16, HV=32, K=128, h0=torch.bfloat16, state_v_first=True),
               dict(T=1, H=2, K=32, cu_seqlens=[0, 1]), dict(T=1, H=16, HV=32, K=128), dict(T=2, H=16, HV=32, K=128),
               dict(B=64, T=1, H=16, HV=32, K=128), dict(T=1, H=2, K=32, l2norm=False)):
        gdn(kw)
        gdn(kw, "triton")
    # the Qwen3-Next goal shapes and their fp16 form: fixed length (ws), varlen with one-head programs (rc2 with the
    # gates kernel and PDL), Qwen3-Next's TP 2 heads (rc), initial states in both layouts (rc's h0 prefetch)
    vl = [64 * i for i in range(11)]
    for dtype in (torch.bfloat16, torch.float16):
        gdn(dict(T=64, H=16, HV=32, K=128, dtype=dtype))
        gdn(dict(T=640, H=32, HV=32, K=128, cu_seqlens=vl, dtype=dtype))
        gdn(dict(T=640, H=32, HV=32, K=128, cu_seqlens=vl, dtype=dtype, h0=torch.float32, state_v_first=True))
        gdn(dict(T=1612, H=8, HV=16, K=128, cu_seqlens=[0, 700, 1100, 1300, 1455, 1558, 1598, 1611, 1612],
                 h0=torch.float32, dtype=dtype))
    # many programs outside the Gluon kernels' domain: triton with 64-column blocks (K = 32; V = 96)
    gdn(dict(T=17 * 64, H=32, HV=32, K=32, cu_seqlens=[64 * i for i in range(18)]))
    gdn(dict(T=17 * 64, H=32, HV=32, K=128, V=96, cu_seqlens=[64 * i for i in range(18)]))
    # no in-kernel L2 norm with small K: the split X / U products (tma), the 16-column triton configuration
    gdn(dict(T=64, H=1, HV=3, K=16, V=32, l2norm=False, h0=torch.bfloat16))
    gdn(dict(T=64, H=1, HV=3, K=16, V=16, l2norm=False))
    # the sequence-parallel plan without the final state (the segment pass stops a segment earlier)
    gdn(dict(C.SEQ_PAR_CASES[0][1]), output_final_state=False)
    # rc / rc2 without PDL (the target test's PDL comparison)
    for kw in (dict(T=640, H=32, HV=32, K=128, cu_seqlens=vl), dict(T=640, H=2, HV=8, K=128, cu_seqlens=vl)):
        x, _ = C.case_inputs("", kw, "cpu")
        plan, _ = C.call(x, plan_only=True)
        C.call(x, plan=C.without_pdl(plan))
    gdn(dict(T=256, H=16, HV=32, K=128), "rc")
    gdn(dict(T=256, H=16, HV=32, K=128), "rc2")
    # fla's in-kernel gate in the gates kernel's full form with dt_bias (varlen one-head programs, rc / rc2 with PDL)
    # and without; fp32 q/k/v (the generic pair, tf32x3) at T = 1 and with many programs (the state kernel's V block
    # stays 32)
    for gate in ("bias", "nobias"):
        gdn(dict(T=640, H=32, HV=32, K=128, cu_seqlens=vl, gate=gate))
    gdn(dict(T=1, H=2, K=32, dtype=torch.float32))
    gdn(dict(T=17 * 64, H=32, HV=32, K=128, dtype=torch.float32, cu_seqlens=[64 * i for i in range(18)], gate="bias"))

    # ---- nvidia.decode_splitkv: head dims, pages, split / no split, fp8, sinks and LSE
    from atrex.api.flash_attn import normalize_flash_attn_call
    from atrex.dispatch.target import DeviceTarget
    from atrex.inputs import attn_inputs
    from atrex_nvidia.flash_attn.sm90.decode_splitkv import launch as DL

    H200 = DeviceTarget("nvidia", "sm90", "NVIDIA H200", (9, 0), "cuda 13.0", 132, False, 0)
    for q_lens, k_lens, kw in (
        ((1,), (8192,), dict(head_dim=128, page_size=16, num_heads_q=32, num_heads_k=8)),
        ((4,) * 8, (8192,) * 8, dict(head_dim=128, page_size=128, num_heads_q=32, num_heads_k=8)),
        ((1,) * 64, (300,) * 64, dict(head_dim=128, page_size=16, num_heads_q=32, num_heads_k=8)),
        ((1, 2), (40, 70), dict(head_dim=256, page_size=64, num_heads_q=16, num_heads_k=2, sinks=True,
                                return_lse=True)),
        ((3,), (1000,), dict(head_dim=40, page_size=1, num_heads_q=4, num_heads_k=4, window_size=[32, 0])),
        ((1, 1), (600, 70), dict(head_dim=128, page_size=16, num_heads_q=8, num_heads_k=1,
                                 dtype=torch.float8_e4m3fn, softcap=30.0)),
    ):
        call = normalize_flash_attn_call(**attn_inputs(list(q_lens), list(k_lens), **kw))._replace(target=H200)
        out = torch.empty((call.total_q, call.num_heads_q, call.head_dim_v), dtype=call.out_dtype)
        DL.decode(call, out)

    # ---- nvidia.paged_prefill_sm90: head dims 40..256, pages 1 / 16 / 32 / 64 / 80 / 128 (one block id per key
    # tile or one per key), fp8 with and without descales, sinks, softcap, windows, LSE, tiles of 16..128 rows,
    # a GQA group split over two programs
    from atrex_nvidia.flash_attn.sm90.paged_prefill import launch as PL

    FP8 = torch.float8_e4m3fn
    for q_lens, k_lens, kw in (
        ((129, 1, 40), (2011, 18, 463), dict(head_dim=128, page_size=16, num_heads_q=8, num_heads_k=2)),
        ((129, 5), (2011, 18), dict(head_dim=128, page_size=128, num_heads_q=8, num_heads_k=2, return_lse=True)),
        ((64, 3), (700, 90), dict(head_dim=256, page_size=80, num_heads_q=16, num_heads_k=2, sinks=True,
                                  return_lse=True)),
        ((64, 3), (700, 90), dict(head_dim=256, page_size=16, num_heads_q=4, num_heads_k=4, window_size=[255, 0],
                                  softcap=50.0)),
        ((33, 7), (300, 40), dict(head_dim=40, page_size=1, num_heads_q=4, num_heads_k=4, window_size=[32, 0])),
        ((33, 7), (300, 40), dict(head_dim=72, page_size=32, num_heads_q=8, num_heads_k=2, dtype=torch.float16,
                                  softcap=50.0)),
        ((40, 1), (600, 70), dict(head_dim=128, page_size=64, num_heads_q=8, num_heads_k=2, dtype=FP8,
                                  return_lse=True)),
        ((40, 1), (600, 70), dict(head_dim=64, page_size=16, num_heads_q=4, num_heads_k=4, dtype=FP8,
                                  fp8_descales=False, causal=False, window_size=[20, 20])),
        ((2, 1), (600, 70), dict(head_dim=128, page_size=16, num_heads_q=256, num_heads_k=2, sinks=True)),
        ((20, 1), (600, 70), dict(head_dim=96, page_size=16, num_heads_q=12, num_heads_k=2)),
    ):
        call = normalize_flash_attn_call(**attn_inputs(list(q_lens), list(k_lens), **kw))._replace(target=H200)
        out = torch.empty((call.total_q, call.num_heads_q, call.head_dim_v), dtype=call.out_dtype)
        PL.prefill(call, out)

    # same shapes, different alignment / dtype / flags: different signatures, and the memo must see them
    base = C.make_inputs(device="cpu", T=64, H=2, K=32)
    for mutate in ({}, dict(q=torch.empty(64 * 64 + 1, dtype=torch.bfloat16)[1:].view(1, 64, 2, 32)),
                   dict(g=base["g"].to(torch.bfloat16))):
        x = dict(base, **{n: (t.copy_(base[n]) if t.dtype == base[n].dtype else t) for n, t in mutate.items()})
        for l2 in (True, False):
            GL.gdn_fwd(x["q"], x["k"], x["v"], x["g"], x["beta"], scale=0.1, initial_state=None,
                       output_final_state=True, use_qk_l2norm_in_kernel=l2, state_v_first=False, cu_seqlens=None)
    GL.launch_all = _launch_all
    results = {"signature_determines_keys": dict(ok=not sig_clash and len(sig_keys) > 20, clashes=sig_clash[:3],
                                                 signatures=len(sig_keys)),
               "replay_bound_args": dict(ok=not bound_wrong and bound_checked[0] > 50, checked=bound_checked[0],
                                              wrong=bound_wrong[:3])}
    # ---- compile: the representative subset (every kernel's every constexpr value, argument type, alignment and
    # launch option set; sm90_standin.representative) or, with --compile-gate=full, every specialisation; in
    # parallel processes, through Triton's cache (keyed by source, options and toolchain)
    import os
    from sm90_standin import compile_all, compile_items, describe, features, nvdisasm_path, representative
    full = os.environ.get("ATREX_COMPILE_GATE") == "full"
    chosen = sorted(specs) if full else representative(specs)
    workers = int(os.environ.get("ATREX_COMPILE_GATE_WORKERS") or (
        len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1))
    for name, (jit_fn, c) in specs.items():  # what the constants decide, for every recorded specialisation
        results[name] = dict(describe(name, jit_fn, c), compiled=False)
    results.update(compile_all(compile_items(specs, chosen), workers))
    have = set().union(*(features(n, *specs[n]) for n in chosen)) if chosen else set()
    missing = sorted(repr(f) for n in specs for f in features(n, *specs[n]) if f not in have)
    results["selection"] = dict(ok=not missing and len(chosen) <= len(specs), mode="full" if full else "representative",
                                recorded=len(specs), compiled=len(chosen), missing=missing[:5], workers=workers)
    results["nvdisasm"] = dict(ok=True, path=nvdisasm_path(), triton=triton.__version__)
    print("RESULT " + json.dumps(results))
''').replace("SYS_PATH_LIST", repr(PATHS))


@pytest.fixture(scope="module")
def compiled(request):
    try:
        from triton.backends.compiler import GPUTarget  # noqa: F401
        from triton.backends.nvidia.compiler import CUDABackend  # noqa: F401
    except Exception as exc:  # a Triton build without the NVIDIA backend cannot compile for sm90
        pytest.skip(f"Triton's NVIDIA backend is unavailable: {exc}")
    # the launchers must not touch a real GPU from this subprocess
    mode = request.config.getoption("--compile-gate")
    return run_result_script(_SCRIPT, set_env={"CUDA_VISIBLE_DEVICES": "", "TRITON_DEFAULT_FP_FUSION": "1",
                                               "ATREX_COMPILE_GATE": mode},
                             drop_env=("TRITON_INTERPRET",), timeout=1500, cwd=ROOT, what="compile subprocess")


def test_launchers_request_every_kernel(compiled):
    names = {name.split("|", 1)[0] for name in compiled}
    want = {"atrex_sm90_gdn_" + n for n in (
        "intra_chunk", "intra_chunk_v3", "state_output", "state_output_v2", "state_output_tma", "state_output_gl_ws",
        "state_output_gl_rc", "state_output_gl_rc2", "state_segments_gl", "segment_scan", "chunk_offsets", "slot_seq",
        "gates")} | {"atrex_sm90_decode_splitkv", "atrex_sm90_decode_combine", "atrex_sm90_paged_prefill"}
    assert want <= names, f"not requested: {sorted(want - names)}"


def test_gdn_default_specialisations_include_segments_and_rc2(compiled):
    """The default plans of the gate's calls reach the sequence-parallel pass (a T >= 4096 prompt with few heads)
    and rc2 with its PDL chain; every forced path (ws, rc, rc2, tma, triton, generic) was requested too."""
    names = {name.split("|", 1)[0] for name in compiled}
    assert {"atrex_sm90_gdn_state_segments_gl", "atrex_sm90_gdn_segment_scan"} <= names
    rc2_pdl = [n for n, r in compiled.items() if n.startswith("atrex_sm90_gdn_state_output_gl_rc2|")
               and r.get("pdl_const")]
    assert rc2_pdl, "no rc2 specialisation with PDL requested"


def test_compiled_replay_binds_arguments_as_triton_does(compiled):
    """The runner replays a warm call's launches through the compiled kernels with an argument list formed from the
    launch's positional arguments, its ``meta`` and the kernel's parameter defaults. For every launch of every
    call the gate plans, that list is, element by element, the one Triton's own binder forms for
    ``kern[grid](*args, **meta)``."""
    r = compiled["replay_bound_args"]
    assert r["ok"], r


def test_signature_determines_launch_keys(compiled):
    r = compiled["signature_determines_keys"]
    assert r["ok"], r


def test_compiled_set_covers_every_recorded_feature(compiled):
    """The default tier compiles a subset of the recorded specialisations in which every kernel's every constexpr
    value (an int argument Triton specialised to 1 included), argument type, alignment and launch option set
    appears (``sm90_standin.representative``); ``--compile-gate=full`` (nox session ``compile-gate-full``, which CI
    also runs) compiles every one."""
    sel = compiled["selection"]
    assert sel["ok"], sel
    built = [n for n, r in compiled.items() if r.get("compiled") is True]
    assert len(built) == sel["compiled"] and (sel["mode"] != "full" or len(built) == sel["recorded"]), sel


def test_every_specialisation_compiles_for_sm90_within_shared_memory(compiled):
    """Every compiled specialisation (the representative subset, or all with ``--compile-gate=full``)."""
    bad = {name: r for name, r in compiled.items() if r.get("compiled", True) and not r["ok"]}
    assert not bad, json.dumps(bad, indent=1)[:6000]


def test_no_specialisation_reads_a_uniform_register_nothing_writes(compiled):
    """The SASS of every specialisation (``nvdisasm``, ``op_test/sass_check.py``): no uniform register is read that
    no instruction writes. ptxas 12.8 (Triton 3.6) assembled the T = 1 specialisation of the triton state kernel
    that way (an intermittent T = 1 illegal address on the GPU); the launcher never compiles the state kernels with
    T as the constant 1 (``triton_state.NO_T1_SPECIALISATION``)."""
    if not compiled["nvdisasm"]["path"]:
        pytest.skip(f"Triton {compiled['nvdisasm']['triton']} ships no nvdisasm")
    kernels = {name: r for name, r in compiled.items() if "insns" in r}
    # (a sanity floor on each disassembly: the varlen bookkeeping kernels are small, the slot map at N = 1 has 64)
    small = ("atrex_sm90_gdn_chunk_offsets|", "atrex_sm90_gdn_slot_seq|")
    short = {n: r["insns"] for n, r in kernels.items() if r["insns"] <= (20 if n.startswith(small) else 100)}
    assert len(kernels) > 20 and not short, (len(kernels), short)
    bad = {name: r["unwritten_ur"] for name, r in kernels.items() if r["unwritten_ur"]}
    assert not bad, json.dumps(bad, indent=1)[:6000]


def test_t1_calls_compile_the_state_kernels_without_t_as_a_constant(compiled):
    """Every state-kernel specialisation requested (T = 1 shapes included) keeps T a runtime argument or a constant
    other than 1: Triton records an int argument equal to 1 as a constexpr, which is what ptxas 12.8 miscompiled."""
    t1 = [name for name, r in compiled.items() if r.get("t_is_one")]
    assert not t1, t1


def test_intra_kernels_compile_with_the_launch_register_cap(compiled):
    """The gate compiles each specialisation with the options of its launch, register cap included (Triton keeps
    ``maxnreg`` in the cache key, not in the compile options): every per-head intra specialisation's PTX carries
    the launcher's cap, 168, for one value head per program and for two."""
    import re
    pairs, kinds = [], set()
    for name, r in compiled.items():
        if name.startswith("atrex_sm90_gdn_intra_chunk_v3|") and r["compiled"]:
            want = re.search(r"'maxnreg': (\d+)", name)
            pairs.append((int(want.group(1)) if want else None, r.get("ptx_maxnreg")))
            kinds.add((r.get("gs"), r.get("ptx_maxnreg")))
    assert pairs and all(want == got == 168 for want, got in pairs), pairs
    assert {(1, 168), (2, 168)} <= kinds, kinds


def test_intra_fp16_inverse_runs_its_diagonal_blocks_as_warp_mma(compiled):
    """The per-head intra kernel's fp16 UT inverse (``INV_FP16``, with the in-kernel L2 norm) forms its 16x16
    diagonal blocks per warp: the batched dots lower to mma.sync (HMMA.16816: 2 per dot, 6 dots per value head, in
    the fp16 path and again in the positive-g fallback), at least 24 per value head. Specialisations without it
    (bf16 merges and the Newton step) have no HMMA."""
    if not compiled["nvdisasm"]["path"]:
        pytest.skip(f"Triton {compiled['nvdisasm']['triton']} ships no nvdisasm")
    intra = {n: r for n, r in compiled.items() if n.startswith("atrex_sm90_gdn_intra_chunk_v3|") and "hmma" in r}
    on = {n: r for n, r in intra.items() if r["inv_fp16"]}
    assert on and len(on) < len(intra), sorted(intra)
    bad = {n: r["hmma"] for n, r in on.items() if r["hmma"] < 24 * (r["gs"] or 1)}
    bad.update({n: r["hmma"] for n, r in intra.items() if not r["inv_fp16"] and r["hmma"]})
    assert not bad, bad
    assert {r["gs"] for r in on.values()} == {1, 2}, on


def test_pdl_kernels_wait_for_their_predecessor_before_any_memory_access(compiled):
    """Programmatic dependent launch (rc / rc2 plans) in the SASS: every specialisation compiled with its PDL
    constexpr has exactly one griddepcontrol.wait (ACQBULK) and one launch_dependents (PREEXIT), and in a Triton
    kernel (straight-line prologue) the wait comes before the first load or store; no specialisation without it
    has either. The PDL specialisations cover every kernel of the chain (``build._PDL_KERNELS``)."""
    if not compiled["nvdisasm"]["path"]:
        pytest.skip(f"Triton {compiled['nvdisasm']['triton']} ships no nvdisasm")
    from atrex_nvidia.chunk_gdn.sm90 import build
    pdl = {n: r["pdl"] for n, r in compiled.items() if "pdl" in r}
    on = {n: p for n, p in pdl.items() if p["on"]}
    assert {n.split("|", 1)[0] for n in on} == set(build._PDL_KERNELS), sorted(on)
    bad = {n: p for n, p in on.items() if p["acq"] != 1 or p["preexit"] != 1
           or (not p["gluon"] and (p["mem_at"] is None or p["acq_at"] > p["mem_at"]))}
    assert not bad, json.dumps(bad, indent=1)[:4000]
    off = {n: p for n, p in pdl.items() if not p["on"] and (p["acq"] or p["preexit"])}
    assert not off, json.dumps(off, indent=1)[:4000]


def test_h0_prefetch_issues_one_l2_prefetch_per_line(compiled):
    """The initial-state prefetch of rc and rc2 in the SASS: an item's initial-state block is BW x BK values (BW =
    128 for rc2's two V blocks, 64 for rc), ``n`` = BW * BK / 32 prefetch addresses. The kernel's start prefetches
    the CTA's first item over its 4 warps (n / 128 prefetches per thread), the one-warp loader each later item
    (n / 32), both plain (CCTL.E.PF2). The specialisations without it (no initial state, or none with a unit-stride
    dimension) have none."""
    if not compiled["nvdisasm"]["path"]:
        pytest.skip(f"Triton {compiled['nvdisasm']['triton']} ships no nvdisasm")
    rc = {n: r["h0pf"] for n, r in compiled.items() if "pf2" in r.get("h0pf", {})}
    assert {p["mode"] for p in rc.values()} == {0, 1} and any(p["two"] for p in rc.values() if p["mode"]), rc
    bad = {}
    for name, p in rc.items():
        lines = (2 if p["two"] else 1) * p["bv"] * p["bk"] // 32
        want = {0: (0, 0), 1: (lines // 128 + lines // 32, 0)}[p["mode"]]
        if (p["pf2"], p["pml2"]) != want:
            bad[name] = (p, want)
    assert not bad, json.dumps(bad, indent=1)[:4000]


def test_gdn_fla_option_specialisations_requested(compiled):
    """fla 0.6's forward options reach the gate's specialisations: the gates kernel with the in-kernel gate with and
    without dt_bias, in its full form (factor planes) and transform-only, on a PDL chain; the generic pair with
    tf32x3 dots (fp32 q/k/v) beside its 16-bit specialisations."""
    gates = {tuple(r["gate"]) for r in compiled.values() if "gate" in r}
    want = {(gate, bias, fac) for gate, bias, fac in ((True, True, True), (True, False, True), (True, True, False),
                                                      (True, False, False), (False, False, True))}
    assert want <= gates, sorted(gates)
    assert any(r["gate"][0] and r["pdl_const"] for r in compiled.values() if "gate" in r)
    prec = {(n.split("|", 1)[0], r["dot_precision"]) for n, r in compiled.items() if "dot_precision" in r}
    assert {(f"atrex_sm90_gdn_{k}", p) for k in ("intra_chunk", "state_output") for p in ("tf32", "tf32x3")} <= prec
