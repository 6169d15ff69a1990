"""Host time per GDN call on a GPU: the launcher called directly and the public API, at a GPU-trivial
shape (T=64) and at T=4096, plus a cProfile of the public path. Prints microseconds per call.

    python3 scripts/gdn_host_overhead.py
"""

import cProfile
import pstats
import time

import torch

import atrex
from atrex_nvidia.chunk_gdn.sm90 import launch as L
from atrex_nvidia.chunk_gdn.sm90.launch import gdn_fwd


def inputs(T, H=16, HV=32, K=128):
    r = lambda *s: torch.randn(*s, device="cuda")
    return dict(q=r(1, T, H, K).bfloat16(), k=r(1, T, H, K).bfloat16(), v=r(1, T, HV, K).bfloat16(),
                g=torch.nn.functional.logsigmoid(r(1, T, HV)).float(), beta=torch.sigmoid(r(1, T, HV)).bfloat16())


def per_call_us(fn, n=300):
    for _ in range(20):
        fn()
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(n):
        fn()
    host = (time.perf_counter() - t) / n * 1e6
    torch.cuda.synchronize()
    wall = (time.perf_counter() - t) / n * 1e6
    return host, wall


# round 23: FAST_LAUNCH (a warm call's launches replayed through the compiled kernels) against Triton's own launch
# path, twice each, interleaved
VARIANTS = {"default": {}, "no fast launch": dict(FAST_LAUNCH=False), "default (again)": {},
            "no fast launch (again)": dict(FAST_LAUNCH=False)}
if "--all" in __import__("sys").argv:  # the round-5 comparison: the old tma state kernel, in-kernel / host descriptors
    VARIANTS.update({"state tma": dict(STATE_IMPL="tma"),
                     "state tma, host descriptors": dict(STATE_IMPL="tma", TMA_DEVICE_DESC=False)})


def host_times(T, cu=None):
    x = inputs(T)
    cu = None if cu is None else torch.tensor(cu, dtype=torch.int32, device="cuda")
    direct = lambda: gdn_fwd(x["q"], x["k"], x["v"], x["g"], x["beta"], scale=0.088, initial_state=None,
                             output_final_state=True, use_qk_l2norm_in_kernel=True, state_v_first=False,
                             cu_seqlens=cu)
    public = lambda: atrex.chunk_gated_delta_rule(x["q"], x["k"], x["v"], x["g"], x["beta"], scale=0.088,
                                                  output_final_state=True, use_qk_l2norm_in_kernel=True,
                                                  cu_seqlens=cu)
    for name, fn in (("launcher", direct), ("public API", public)):
        host, wall = per_call_us(fn)
        print(f"T={T:5d}{' varlen' if cu is not None else ''} {name:10s}: host {host:7.1f} us/call, wall {wall:7.1f} us/call")


for vname, hooks in VARIANTS.items():
    saved = {a: getattr(L, a) for a in hooks}
    for a, val in hooks.items():
        setattr(L, a, val)
    print(f"-- {vname}")
    for T in (64, 4096):
        host_times(T)
    host_times(1024, cu=[0, 100, 300, 1024])
    for a, val in saved.items():
        setattr(L, a, val)
x = inputs(64)
prof = cProfile.Profile()
prof.enable()
for _ in range(300):
    atrex.chunk_gated_delta_rule(x["q"], x["k"], x["v"], x["g"], x["beta"], scale=0.088, output_final_state=True,
                                 use_qk_l2norm_in_kernel=True)
prof.disable()
torch.cuda.synchronize()
pstats.Stats(prof).sort_stats("tottime").print_stats(22)
