"""Smoke check of STATE_IMPL "gl_ws" before its target tests (round 9): a small varlen case and T=8192/16/32, each
against the tma kernel on the same inputs and the first against the float64 recurrence. Run under `timeout`: a
lost mbarrier hand-off hangs."""

import time

import _gdn_cases as C
import torch

from atrex_nvidia.chunk_gdn.sm90 import launch as L


def call(inp, impl):
    L.STATE_IMPL = impl
    out = L.gdn_fwd(inp["q"], inp["k"], inp["v"], inp["g"], inp["beta"], scale=inp["scale"],
                    initial_state=inp["initial_state"], output_final_state=True,
                    use_qk_l2norm_in_kernel=inp["use_qk_l2norm_in_kernel"], state_v_first=inp["state_v_first"],
                    cu_seqlens=inp["cu_seqlens"])
    torch.cuda.synchronize()
    return out


for name, kw in (("varlen_small", dict(T=400, H=2, HV=4, K=128, cu_seqlens=[0, 0, 1, 65, 129, 400], h0=torch.float32)),
                 ("T8192_H16_HV32", dict(T=8192, H=16, HV=32, K=128))):
    inp = C.make_inputs(device="cuda", **kw)
    t0 = time.time()
    o1, h1 = call(inp, "tma")
    o2, h2 = call(inp, "gl_ws")
    print(name, "gl_ws vs tma: o", C.rrmse(o1, o2), "ht", C.rrmse(h1, h2), f"({time.time() - t0:.1f} s)", flush=True)
    assert C.rrmse(o1, o2) <= 2e-3 and C.rrmse(h1, h2) <= 2e-3
L.STATE_IMPL = "gl_ws"
eo, eh, bound = C.run_case(L.gdn_fwd, "varlen_small", dict(T=400, H=2, HV=4, K=128,
                                                    cu_seqlens=[0, 0, 1, 65, 129, 400]), "cuda")
print("varlen_small gl_ws vs float64: o", eo, "ht", eh, "bound", bound)
assert eo <= bound and eh <= bound
print("SMOKE OK")
