"""Dump the normalised sm90 SASS of the Gluon state kernels (gl_ws, gl_rc) for a fixed set of launch shapes, without
a GPU: ``op_test/sm90_standin.py`` records the specialisations the launcher asks for (a stand-in driver reports an
sm90 target), and each is compiled with Triton and disassembled with Triton's ``nvdisasm``. Addresses and
comments are stripped, so two dumps of the same binary compare equal line for line. This is how round 10 checked that
its helper refactors left the measured binaries unchanged:

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
    a = ap.parse_args(argv)
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

    for impl in ("gl_ws", "gl_rc"):
        gdn(dict(T=64, H=16, HV=32, K=128), STATE_IMPL=impl)
        gdn(dict(T=640, H=32, HV=32, K=128, cu_seqlens=[64 * i for i in range(11)], h0=torch.float32,
                 state_v_first=True), STATE_IMPL=impl)
    from triton.experimental.gluon._runtime import GluonASTSource
    os.makedirs(a.out, exist_ok=True)
    for i, (name, (jit_fn, c)) in enumerate(sorted(specs.items())):
        if "_gl_" not in name.split("|")[0]:
            continue
        src = GluonASTSource(jit_fn, c["signature"], c["constants"], c["configs"][0])
        k = triton.compile(src, target=SM90, options=dict(num_warps=c["num_warps"], num_stages=c["num_stages"]))
        cubin = os.path.join(a.out, "k.cubin")
        with open(cubin, "wb") as f:
            f.write(k.asm["cubin"])
        sass = subprocess.run([knobs.nvidia.nvdisasm.path, "-c", cubin], capture_output=True, text=True,
                              check=True).stdout
        os.remove(cubin)
        lines = [re.sub(r"/\*[0-9a-f]+\*/", "", ln).rstrip() for ln in sass.splitlines()
                 if ln.strip() and not ln.strip().startswith("//")]
        path = os.path.join(a.out, f"{name.split('|')[0]}_{i}.sass")
        with open(path, "w") as f:
            f.write("\n".join(lines) + "\n")
        print(f"{path}: {len(lines)} lines, triton {triton.__version__}")


if __name__ == "__main__":
    main()
