"""One fused-kernel diagnosis on the GPU (round 18): ``gdn_fwd`` with FUSED and the given launcher knobs against the
default two-kernel call on one case, and where they differ, which (batch, value head, chunk) blocks of o differ.

    python scripts/gdn_fused_diag.py CASE [KNOB=VALUE ...]      # CASE: an _gdn_cases id or a make_inputs dict
Prints one line: case, knobs, o / state rrmse against the default call, NaN count, the worst blocks.
"""

import ast
import os
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path[:0] = [os.path.join(ROOT, "op_test", "nvidia", "chunk_gdn"), os.path.join(ROOT, "op_test")]

import _gdn_cases as C  # noqa: E402
import torch  # noqa: E402

from atrex_nvidia.chunk_gdn.sm90 import launch as L  # noqa: E402


def main():
    case = sys.argv[1]
    pool = dict(C.SMALL_CASES + C.GPU_CASES + C.GLUON_CASES)
    kw = pool[case] if case in pool else eval(case, {"dict": dict, "torch": torch})
    knobs = {n: ast.literal_eval(v) for n, v in (a.split("=", 1) for a in sys.argv[2:])}
    dev = "cuda" if torch.cuda.is_available() else "cpu"  # (cpu: under TRITON_INTERPRET=1, a dry run)
    x = C.make_inputs(device=dev, **kw)

    def call():
        return L.gdn_fwd(x["q"], x["k"], x["v"], x["g"], x["beta"], scale=x["scale"],
                         initial_state=x["initial_state"], output_final_state=True,
                         use_qk_l2norm_in_kernel=x["use_qk_l2norm_in_kernel"], state_v_first=x["state_v_first"],
                         cu_seqlens=x["cu_seqlens"])
    o0, h0 = call()
    for n, val in dict(knobs, FUSED=True).items():
        setattr(L, n, val)
    plan = L.gdn_fwd(x["q"], x["k"], x["v"], x["g"], x["beta"], scale=x["scale"], initial_state=x["initial_state"],
                     output_final_state=True, use_qk_l2norm_in_kernel=x["use_qk_l2norm_in_kernel"],
                     state_v_first=x["state_v_first"], cu_seqlens=x["cu_seqlens"], _plan_only=True)
    m = plan[0][3]
    meta = ",".join(f"{k}={m[k]}" for k in ("BV", "num_warps") if k in m) + "," + ",".join(
        k for k in ("DEVICE_DESC", "LATE_Q", "MASK_OUT", "PIPE", "SPLIT_XU", "FAST_EXP", "INV_FP16") if m.get(k))
    o1, h1 = call()
    if dev == "cuda":
        torch.cuda.synchronize()
    eo, eh = C.rrmse(o0, o1), C.rrmse(h0, h1)
    nan = int((~torch.isfinite(o1.float())).sum())
    worst = ""
    if eo > 1e-3 or nan:
        B, T, HV, V = o0.shape
        d = (o0.float() - o1.float()).abs().nan_to_num(1e9)
        nt = -(-T // 64)
        d = torch.nn.functional.pad(d, (0, 0, 0, 0, 0, nt * 64 - T)).view(B, nt, 64, HV, V)
        blk = d.amax(dim=(2, 4))  # [B, chunk, HV]
        rows = d.amax(dim=(0, 1, 3, 4))  # per row in chunk
        cols = d.amax(dim=(0, 1, 2, 3))
        bad = (blk > 1e-2).nonzero().tolist()
        worst = (f" bad(b,c,hv)={bad[:8]} of {blk.numel()} rows_bad={(rows > 1e-2).nonzero().flatten().tolist()[:16]}"
                 f" cols_bad={(cols > 1e-2).nonzero().flatten().tolist()[:16]}")
    print(f"DIAG eo={eo:.3g} eh={eh:.3g} nan={nan} {case} {knobs} [{meta}]{worst}", flush=True)


if __name__ == "__main__":
    main()
