"""Dump the normalised sm90 SASS of the Gluon state kernels (gl_ws, gl_rc, the segment pass) for a fixed set of launch
shapes, without
a GPU (``--intra``: the intra v3 kernel instead, at T=8192/16/32 (two value heads per program) and H = HV = 32 (one);
``--hook NAME=VALUE`` sets a launcher knob, e.g. ``INTRA_V3_FP16_FALLBACK=0`` leaves only the fp16 inverse path in
the binary, so that its instruction count is that path's): ``op_test/sm90_standin.py`` records the specialisations the launcher asks for (a stand-in driver reports an
sm90 target), and each is compiled with Triton and disassembled with Triton's ``nvdisasm``. Addresses and
comments are stripped, so two dumps of the same binary compare equal line for line. This is how round 10 checked that
its helper refactors left the measured binaries unchanged (and round 34 that the segment kernel's move onto
``_ws_chain`` changed no gl_ws or segment-pass binary):

    PYTHONPATH=<triton 3.6 site-packages> python scripts/gdn_gluon_sass.py /tmp/before   # at the old commit
    PYTHONPATH=<triton 3.6 site-packages> python scripts/gdn_gluon_sass.py /tmp/after    # at the new commit
    diff -r /tmp/before /tmp/after
"""

import argparse
import os
import re
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path[:0] = [os.path.join(ROOT, "packages", "core", "python"), os.path.join(ROOT, "packages", "nvidia", "src"),
                os.path.join(ROOT, "op_test", "nvidia", "chunk_gdn"), os.path.join(ROOT, "op_test")]
os.environ["CUDA_VISIBLE_DEVICES"] = ""
os.environ.pop("TRITON_INTERPRET", None)

import torch  # noqa: E402
import triton  # noqa: E402
from sm90_standin import SM90, record_specialisations  # noqa: E402
from triton import knobs  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", help="folder for one .sass file per specialisation")
    ap.add_argument("--intra", action="store_true", help="the intra v3 kernel instead of the Gluon state kernels")
    ap.add_argument("--hook", action="append", default=[], metavar="NAME=VALUE",
                    help="a launch.py knob for every call (Python literal), repeatable")
    ap.add_argument("--ir", action="store_true", help="also write each specialisation's TTGIR and PTX")
    ap.add_argument("--match", default=None, help="dump the kernels whose name contains this instead (e.g. kk_prev)")
    ap.add_argument("--case", default=None, metavar="DICT",
                    help="one make_inputs case instead of the fixed shapes, e.g. \"dict(T=256, H=2, HV=4, K=64)\"")
    a = ap.parse_args(argv)
    import ast
    knobs_set = {n: ast.literal_eval(v) for n, v in (h.split("=", 1) for h in a.hook)}
    specs = record_specialisations()
    import _gdn_cases as C

    from atrex_nvidia.chunk_gdn.sm90 import launch as L

    def gdn(kw, **hooks):
        saved = {n: getattr(L, n) for n in hooks}
        for n, val in hooks.items():
            setattr(L, n, val)
        try:
            x = C.make_inputs(device="cpu", **kw)
            L.gdn_fwd(x["q"], x["k"], x["v"], x["g"], x["beta"], scale=x["scale"], initial_state=x["initial_state"],
                      output_final_state=True, use_qk_l2norm_in_kernel=x["use_qk_l2norm_in_kernel"],
                      state_v_first=x["state_v_first"], cu_seqlens=x["cu_seqlens"])
        finally:
            for n, val in saved.items():
                setattr(L, n, val)

    if a.case:
        gdn(eval(a.case, {"dict": dict, "torch": torch}), **knobs_set)  # (a developer's command line)
    elif a.intra:
        gdn(dict(T=64, H=16, HV=32, K=128), **knobs_set)
        gdn(dict(T=64, H=32, HV=32, K=128), **knobs_set)
        gdn(dict(T=640, H=32, HV=32, K=128, cu_seqlens=[64 * i for i in range(11)]), **knobs_set)  # varlen
    else:
        for impl in ("gl_ws", "gl_rc"):
            gdn(dict(T=64, H=16, HV=32, K=128), STATE_IMPL=impl, **knobs_set)
            gdn(dict(T=640, H=32, HV=32, K=128, cu_seqlens=[64 * i for i in range(11)], h0=torch.float32,
                     state_v_first=True), STATE_IMPL=impl, **knobs_set)
        # the sequence-parallel plan (launch.SEQ_PARALLEL, round 34): the segment pass and gl_ws over the segments, at
        # Qwen3-Next's TP 4 heads with an fp32 state_v_first initial state, and with caller-normalised q, k at K = 64
        gdn(dict(T=8192, H=4, HV=8, K=128, h0=torch.float32, state_v_first=True), **knobs_set)
        gdn(dict(T=4100, H=8, HV=8, K=64, V=128, l2norm=False), **knobs_set)
    from triton.compiler import ASTSource
    from triton.experimental.gluon._runtime import GluonASTSource
    os.makedirs(a.out, exist_ok=True)
    for i, (name, (jit_fn, c)) in enumerate(sorted(specs.items())):
        if (a.match or ("_intra_chunk_v3" if a.intra else "_gl_")) not in name.split("|")[0] + "_":
            continue
        opts = dict(num_warps=c["num_warps"], num_stages=c["num_stages"])
        if c.get("maxnreg"):
            opts["maxnreg"] = c["maxnreg"]
        is_gluon = getattr(jit_fn, "is_gluon", lambda: False)()
        src = (GluonASTSource if is_gluon else ASTSource)(jit_fn, c["signature"], c["constants"], c["configs"][0])
        k = triton.compile(src, target=SM90, options=opts)
        cubin = os.path.join(a.out, "k.cubin")
        with open(cubin, "wb") as f:
            f.write(k.asm["cubin"])
        sass = subprocess.run([knobs.nvidia.nvdisasm.path, "-c", cubin], capture_output=True, text=True,
                              check=True).stdout
        usage = subprocess.run([os.path.join(os.path.dirname(knobs.nvidia.nvdisasm.path), "cuobjdump"),
                                "--dump-resource-usage", cubin], capture_output=True, text=True).stdout
        os.remove(cubin)
        lines = [re.sub(r"/\*[0-9a-f]+\*/", "", ln).rstrip() for ln in sass.splitlines()
                 if ln.strip() and not ln.strip().startswith("//")]
        path = os.path.join(a.out, f"{name.split('|')[0]}_{i}.sass")
        with open(path, "w") as f:
            f.write("\n".join(lines) + "\n")
        if a.ir:
            for ext in ("ttgir", "ptx"):
                with open(path[:-4] + ext, "w") as f:
                    f.write(k.asm[ext])
        res = " ".join(re.findall(r"(?:REG|STACK|SHARED):\d+", usage))
        setmax = sorted(set(re.findall(r"setmaxnreg\.(inc|dec)[.a-z0-9]*\s+(\d+)", k.asm["ptx"])))
        if setmax:  # the warp partitions' register counts (Triton's warp-group allocation)
            res += " [" + ", ".join(f"{d} {n}" for d, n in setmax) + "]"
        gs = c["constants"].get((jit_fn.arg_names.index("GS"),)) if "GS" in jit_fn.arg_names else None
        print(f"{path}: {sum(';' in ln for ln in lines)} instructions, {res}, dynamic shared {k.metadata.shared}, "
              f"maxnreg {c.get('maxnreg')}"
              f"{f', GS {gs}' if gs is not None else ''}, triton {triton.__version__}")


if __name__ == "__main__":
    main()
