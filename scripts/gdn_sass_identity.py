"""Fingerprint, on a CPU, the SASS of the Gluon state kernels' specialisations that a fixed set of ``gdn_fwd`` calls
asks for (gl_ws in its forms, the sequence-parallel segment kernel), so that a refactor can be shown to change no
compiled code: run it before and after, and compare the two files.

Each specialisation is keyed by kernel name and a hash of its constants and signature (not of its source), compiled
for sm90 under the stand-in driver (``op_test/sm90_standin.py``; nothing is launched), disassembled by Triton's
``nvdisasm`` without line information, and fingerprinted as (sha256 of the SASS text, instruction count).

    env -u PYTHONPATH CUDA_VISIBLE_DEVICES= .venv/bin/python scripts/gdn_sass_identity.py before.json
    ... edit ...
    env -u PYTHONPATH CUDA_VISIBLE_DEVICES= .venv/bin/python scripts/gdn_sass_identity.py after.json
    diff before.json after.json
"""

import hashlib
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path[:0] = [os.path.join(ROOT, "packages", "core", "python"), os.path.join(ROOT, "packages", "nvidia", "src"),
                os.path.join(ROOT, "op_test", "nvidia", "chunk_gdn"), os.path.join(ROOT, "op_test")]

import torch  # noqa: E402
import triton  # noqa: E402
from sm90_standin import SM90, record_specialisations  # noqa: E402

CALLS = [  # (make_inputs kwargs, launcher knobs)
    (dict(T=8192, H=4, HV=8, K=128), {}),
    (dict(T=5000, H=4, HV=8, K=128, h0=torch.float32, state_v_first=True), {}),
    (dict(T=4100, H=8, HV=8, K=64, V=128, l2norm=False), {}),
    (dict(T=8192, H=4, HV=8, K=128), dict(SEQ_PAR_BV=32)),
    (dict(T=512, H=16, HV=32, K=128), {}),
    (dict(T=512, H=16, HV=32, K=128), dict(GL_WS_OUT2=False)),
    (dict(T=512, H=16, HV=32, K=128), dict(GL_WS_FAC_SMEM=False, STATE_IMPL="gl_ws")),
    (dict(T=256, H=4, HV=8, K=64), dict(GL_WS_QSIDE=True, STATE_IMPL="gl_ws")),
]
KERNELS = ("atrex_sm90_gdn_state_output_gl_ws", "atrex_sm90_gdn_state_segments_gl")


def main(out_path):
    specs = record_specialisations()
    import _gdn_cases as C
    from triton.experimental.gluon._runtime import GluonASTSource

    from atrex_nvidia.chunk_gdn.sm90 import launch as GL
    for kw, knobs in CALLS:
        saved = {a: getattr(GL, a) for a in knobs}
        for a, v in knobs.items():
            setattr(GL, a, v)
        try:
            x = C.make_inputs(device="cpu", **kw)
            GL.gdn_fwd(x["q"], x["k"], x["v"], x["g"], x["beta"], scale=x["scale"], initial_state=x["initial_state"],
                       output_final_state=True, use_qk_l2norm_in_kernel=x["use_qk_l2norm_in_kernel"],
                       state_v_first=x["state_v_first"], cu_seqlens=x["cu_seqlens"])
        finally:
            for a, v in saved.items():
                setattr(GL, a, v)
    nvdisasm = triton.knobs.nvidia.nvdisasm.path
    out = {}
    for name, (jit_fn, c) in sorted(specs.items()):
        kname = name.split("|")[0]
        if kname not in KERNELS:
            continue
        src = GluonASTSource(jit_fn, c["signature"], c["constants"], c["configs"][0])
        k = triton.compile(src, target=SM90, options=dict(num_warps=c["num_warps"], num_stages=c["num_stages"]))
        with tempfile.NamedTemporaryFile(suffix=".cubin", delete=False) as f:
            f.write(k.asm["cubin"])
        try:
            sass = subprocess.run([nvdisasm, "-c", f.name], capture_output=True, text=True, check=True).stdout
        finally:
            os.unlink(f.name)
        spec = repr(sorted((str(a), repr(b)) for a, b in c["constants"].items())) + repr(c["signature"])
        out[f"{kname} {hashlib.sha1(spec.encode()).hexdigest()[:10]}"] = (
            f"{hashlib.sha256(sass.encode()).hexdigest()[:16]} {sass.count(';')}")
    with open(out_path, "w") as f:
        json.dump(out, f, indent=1, sort_keys=True)
    print(f"{len(out)} specialisations -> {out_path}")


if __name__ == "__main__":
    main(sys.argv[1])
