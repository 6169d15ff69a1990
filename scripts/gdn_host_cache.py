"""Prebuild, on a CPU, the Triton cache that a device call's ATREX GDN kernels would otherwise compile on the H200 host.

Why: the host starts bare for every call, and compiling the intra and state kernels (and each bench variant's own
specialisations) costs tens of seconds of device time per call (round 18). The host runs Triton 3.6.0 under Python
3.12. ``triton_key()`` hashes the installed Triton's Python files and its ``libtriton`` shared object; only the latter
differs from this machine's Triton 3.6.0 under Python 3.11. So this script:

1. computes the host's key from this Triton's files and the cp312 wheel's ``libtriton.so``: its recorded sha256
   (``HOST_LIBTRITON_SHA256``), or the file itself (``--libtriton``; ``pip download triton==3.6.0 --python-version
   3.12 --only-binary=:all: --no-deps`` and unzip ``triton/_C/libtriton.so``). With ``--check-key`` it compares the
   key's hash with the one the host printed (r66: ``bd4757a49ddb4e61``) and refuses to go on if they differ;
2. records the specialisations that bench_gdn's calls ask for (the given cases x sweep variants, and with
   ``--latency`` the calls of ``scripts/gdn_intra_latency.py``), on CPU tensors under the sm90 stand-in driver
   (``op_test/sm90_standin.py``), nothing launched;
3. compiles each through Triton's own ``JITFunction.preload`` (the JIT's compile path, options included) with the
   host's key, into ``--out`` (binaries and metadata only), which a device call then uses as ``TRITON_CACHE_DIR``
   (``scripts/gdn-call.sh``).

A miss costs nothing but the compile the host would have done anyway; ``gdn-call.sh`` reports the entries a call added.

    PYTHONPATH=<triton 3.6 site-packages> python scripts/gdn_host_cache.py --check-key bd4757a49ddb4e61 \\
        --out .gpuhost/tcache --variants default,i3_d16 [--latency]
"""

import argparse
import hashlib
import os
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path[:0] = [os.path.join(ROOT, "packages", "core", "python"), os.path.join(ROOT, "packages", "nvidia", "src"),
                os.path.join(ROOT, "op_test")]


# sha256 of triton/_C/libtriton.so in PyPI's triton-3.6.0-cp312-cp312-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl
# (the host's; with it the key hash is r66's bd4757a49ddb4e61)
HOST_LIBTRITON_SHA256 = "28daaa70a904e4f8add754e518533e8a69b94ab8b16431ce77d45f1f25282b87"


def host_key(libtriton):
    """This Triton's ``triton_key()`` with its libtriton hash replaced by that of the file ``libtriton`` (or, for
    None, by ``HOST_LIBTRITON_SHA256``)."""
    import sysconfig

    import triton
    from triton.runtime import cache

    def file_hash(path):
        h = hashlib.sha256()
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
        return h.hexdigest()
    ext = sysconfig.get_config_var("EXT_SUFFIX").split(".")[-1]
    ours = file_hash(os.path.join(os.path.dirname(triton.__file__), "_C", f"libtriton.{ext}"))
    key = cache.triton_key()
    if key.count(ours) != 1:
        raise SystemExit("this Triton's key does not hold its libtriton hash once: key format changed")
    return key.replace(ours, HOST_LIBTRITON_SHA256 if libtriton is None else file_hash(libtriton))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--libtriton", default=None,
                    help="the host's libtriton.so (from the cp312 wheel); default: its recorded sha256")
    ap.add_argument("--check-key", default=None, help="the host's key hash (first 16 hex digits of its sha256)")
    ap.add_argument("--out", required=True, help="the cache folder to fill")
    ap.add_argument("--cases", default="T8192_H16_HV32,T32768_H16_HV32,varlen16x1024_H32_HV32,T8192_H32_HV32")
    ap.add_argument("--variants", default="default", help="bench_gdn sweep variants, comma-separated")
    ap.add_argument("--latency", action="store_true", help="also scripts/gdn_intra_latency.py's calls (3 configurations)")
    ap.add_argument("--h0", action="store_true", help="the cases with bench_gdn --h0's fp32 initial state (state_v_first)")
    ap.add_argument("--fused-tests", action="store_true",
                    help="also the calls of the fused kernel's GPU tests (op_test _gdn_cases.FUSED_CASES, as "
                         "test_fused_rc* make them, with and without the knob)")
    ap.add_argument("--fused-probe", action="store_true",
                    help="only the calls of scripts/gdn_fused_probe.py on the smoke run's cases, both inverse forms "
                         "(run in a tree with scripts/diag/fused_probe.patch applied)")
    a = ap.parse_args(argv)
    os.environ["CUDA_VISIBLE_DEVICES"] = ""
    os.environ.pop("TRITON_INTERPRET", None)
    os.environ["TRITON_CACHE_DIR"] = os.path.abspath(a.out)
    os.environ["TRITON_STORE_BINARY_ONLY"] = "1"

    import triton
    from triton import knobs
    from triton.runtime import cache
    if triton.__version__ != "3.6.0":
        raise SystemExit(f"the host runs Triton 3.6.0, this is {triton.__version__}")
    key = host_key(a.libtriton)
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    print(f"host key hash {digest}", flush=True)
    if a.check_key and digest != a.check_key:
        raise SystemExit(f"computed key hash {digest} is not the host's {a.check_key}")
    cache.triton_key = lambda: key  # get_cache_key reads the module global

    from sm90_standin import record_specialisations

    from atrex_nvidia.chunk_gdn.sm90 import bench_gdn as bg
    recorded = record_specialisations()  # the stand-in sm90 driver; nothing compiled or launched while recording

    def call(x, variant):
        with bg._Variant(variant):
            bg.atrex_call(x)()

    cases = {c[0]: c for c in bg.CASES}
    variants = dict(bg.VARIANTS)
    if a.fused_probe:  # scripts/gdn_fused_probe.py CASE [--diag16] for each case of the smoke run
        sys.path[:0] = [os.path.join(ROOT, "op_test", "nvidia", "chunk_gdn"), os.path.join(ROOT, "scripts")]
        import _gdn_cases as C
        import gdn_fused_probe as P
        import gdn_fused_smoke as S

        from atrex_nvidia.chunk_gdn.sm90 import launch
        if not hasattr(launch, "FUSED_PROBE"):
            raise SystemExit("--fused-probe needs scripts/diag/fused_probe.patch applied")
        for cid in S.DEFAULT_CASES:
            x, extra = C.fused_inputs(cid, dict(C.FUSED_CASES)[cid], "cpu")
            for diag16 in (False, True):
                with bg._Variant(dict(fused=True, fused_diag16=diag16)):
                    launch.FUSED_PROBE = P.buffers(x, "cpu")
                    launch.gdn_fwd(x["q"], x["k"], x["v"], x["g"], x["beta"], scale=x["scale"],
                                   initial_state=x["initial_state"], output_final_state=True,
                                   use_qk_l2norm_in_kernel=True, state_v_first=x["state_v_first"],
                                   cu_seqlens=x["cu_seqlens"], **extra)
        a.cases, a.variants = "", ""
    for cid in filter(None, a.cases.split(",")):
        x = bg.make(cases[cid], device="cpu")
        if a.h0:
            x = bg.with_h0(x)
        for name in filter(None, a.variants.split(",")):
            call(x, variants[name])
    if a.latency:  # scripts/calls/gdn-r72.sh's three configurations of scripts/gdn_intra_latency.py
        for variant in ({}, dict(diag16=True), dict(diag16=True, mask_out=True, maxnreg=128)):
            for m in (1, 2, 4, 8):
                call(bg.make((f"lat{m}", [64] * (132 * m), 1, 1), device="cpu"), variant)
    if a.fused_tests:  # test_fused_rc (whole grid), test_fused_rc_rings_across_items (3 CTAs; 3 slots at K = 64)
        sys.path.insert(0, os.path.join(ROOT, "op_test", "nvidia", "chunk_gdn"))
        import _gdn_cases as C

        from atrex_nvidia.chunk_gdn.sm90 import launch
        for cid, kw in C.FUSED_CASES:
            x, extra = C.fused_inputs(cid, kw, "cpu")
            for hooks in (dict(FUSED_RC=True), dict(FUSED_RC=True, FUSED_DIAG16=True), dict(FUSED_RC=True, sm_count=3),
                          dict(FUSED_RC=True, sm_count=3, FUSED_STAGES=3),
                          dict(FUSED_RC=False), dict(FUSED_RC=False, INTRA_V3_DIAG16=False),
                          dict(FUSED_RC=False, INTRA_V3_DIAG16=False, sm_count=3)):
                # (fused_check's comparison, in the inverse form of each fused run: INTRA_V3_DIAG16 is on by default)
                if hooks.get("sm_count") and cid not in ("fu_varlen_K64_gva", "fu_B2_T63_K64", "ws_varlen_empty_odd",
                                                          "qwen_varlen_mixed"):
                    continue  # (test_fused_rc_rings_across_items' cases)
                with bg._Variant({}):
                    for n, val in hooks.items():
                        if n != "sm_count":
                            setattr(launch, n, val)
                    launch.gdn_fwd(x["q"], x["k"], x["v"], x["g"], x["beta"], scale=x["scale"],
                                   initial_state=x["initial_state"], output_final_state=True,
                                   use_qk_l2norm_in_kernel=True, state_v_first=x["state_v_first"],
                                   cu_seqlens=x["cu_seqlens"], sm_count=hooks.get("sm_count"), **extra)
        with bg._Variant(dict(fused=True)):  # test_fused_rc_graph_capture (graph_replay_check's inputs)
            x = C.make_inputs(device="cpu", T=300, H=2, HV=4, K=64, cu_seqlens=[0, 10, 150, 150, 300],
                              h0=C.torch.float32, state_v_first=True)
            launch.gdn_fwd(x["q"], x["k"], x["v"], x["g"], x["beta"], scale=x["scale"],
                           initial_state=x["initial_state"], output_final_state=True, use_qk_l2norm_in_kernel=True,
                           state_v_first=True, cu_seqlens=x["cu_seqlens"])
    knobs.runtime.jit_cache_hook = None
    print(f"{len(recorded)} specialisations", flush=True)
    for i, (name, (jit_fn, opts)) in enumerate(sorted(recorded.items())):
        jit_fn.preload(opts["specialization_data"])
        print(f"[{i + 1}/{len(recorded)}] {name.split('|')[0]}", flush=True)


if __name__ == "__main__":
    main()
