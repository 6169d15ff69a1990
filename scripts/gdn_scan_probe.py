"""Round 35 probe (GPU): the sequence-parallel state pass's composition kernel alone
(``kernels.atrex_sm90_gdn_segment_scan``), over its launch options.

Round 34 (r129, torch profiler, one H100) put 15.1 us of the TP 4, 8k call's 127 us in the composition: 4 dependent
steps S_{s+1} = M_s S_s + R_s with K = 128, on HV x V / 16 = 64 programs. This times the kernel with
``triton.testing.do_bench_cudagraph`` on the shapes the launcher gives it (R written as the segment pass writes it, an fp32
initial state, the final state stored) for each option set, and checks each against the float64 composition
(rrmse of the segments' initial states and of the final state), so that a faster option that breaks the product shows.

    python scripts/gdn_scan_probe.py [--hv 8 4] [--na 4 8 16] [--out probe.json]

(r133 ran it at 1388f0c with a ``--desc`` option for the kernel's TMA-descriptor form, since removed.)
"""

import argparse
import functools
import itertools
import json
import os
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path[:0] = [os.path.join(ROOT, "packages", "core", "python"), os.path.join(ROOT, "packages", "nvidia", "src")]

import torch  # noqa: E402
import triton  # noqa: E402

from atrex_nvidia.chunk_gdn.sm90 import kernels as K_  # noqa: E402

INTERPRET = os.environ.get("TRITON_INTERPRET") == "1"  # (a CPU check of the script: no timing)
DEV = "cpu" if INTERPRET else "cuda"


def operands(HV, NA, K=128, V=128, seed=0):
    """R [1, NA, HV, K, V + K] (R_s | M_s, M_s a contraction as a decaying segment's transition), h0 [1, HV, K, V]."""
    gen = torch.Generator().manual_seed(seed)
    r = torch.empty((1, NA, HV, K, V + K), dtype=torch.float32)
    r[..., :V] = torch.randn((1, NA, HV, K, V), generator=gen)
    q, _ = torch.linalg.qr(torch.randn((NA * HV, K, K), generator=gen, dtype=torch.float64))
    d = torch.empty((NA * HV, 1, K), dtype=torch.float64).uniform_(0.3, 0.98, generator=gen)
    r[..., V:] = (q * d).reshape(1, NA, HV, K, K).float()
    h0 = torch.randn((1, HV, K, V), generator=gen)
    return r.to(DEV), h0.to(DEV)


def reference(r, h0, V):
    """float64 composition: (Hs [NA, HV, K, V], final [HV, K, V])."""
    s = h0[0].double()
    hs = []
    for i in range(r.shape[1]):
        hs.append(s)
        s = r[0, i, :, :, V:].double() @ s + r[0, i, :, :, :V].double()
    return torch.stack(hs), s


def rrmse(a, b):
    return float(((a.double() - b).pow(2).mean() / b.pow(2).mean()).sqrt())


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hv", type=int, nargs="+", default=[8, 4])
    ap.add_argument("--na", type=int, nargs="+", default=[4, 8, 16])
    ap.add_argument("--bvs", type=int, nargs="+", default=[8, 16, 32])
    ap.add_argument("--warps", type=int, nargs="+", default=[4, 8])
    ap.add_argument("--stages", type=int, nargs="+", default=[1, 2, 3])
    ap.add_argument("--prec", nargs="+", default=["tf32x3", "ieee"])
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    K = V = 128
    rows = []
    dev_name = "interpreter" if INTERPRET else torch.cuda.get_device_name()
    print(f"{dev_name}, triton {triton.__version__}, torch {torch.__version__}")
    print(f"{'HV':>3} {'NA':>3} {'prec':>7} {'BVS':>4} {'warps':>5} {'stages':>6} {'us':>8} {'rrmse Hs':>10} {'rrmse ht':>10}")
    for HV, NA in itertools.product(a.hv, a.na):
        r, h0 = operands(HV, NA)
        ref_hs, ref_ht = reference(r, h0, V)
        for prec, bvs, w, st in itertools.product(a.prec, a.bvs, a.warps, a.stages):
            hs = torch.full((1, NA, HV, K, V), float("nan"), device=DEV)
            ht = torch.full((1, HV, K, V), float("nan"), device=DEV)

            call = functools.partial(
                K_.atrex_sm90_gdn_segment_scan[(V // bvs, HV)], r, h0, hs, ht, NA, NA, HV, K, V, *h0.stride(),
                *ht.stride(), BK=K, BVS=bvs, USE_H0=True, STORE_HT=True, PREC=prec, num_warps=w, num_stages=st)
            try:
                call()
                if not INTERPRET:
                    torch.cuda.synchronize()
            except Exception as e:  # (an option set that does not compile or fit: reported, not timed)
                print(f"{HV:>3} {NA:>3} {prec:>7} {bvs:>4} {w:>5} {st:>6}  failed: {type(e).__name__}: {str(e)[:80]}")
                continue
            e_hs, e_ht = rrmse(hs[0], ref_hs), rrmse(ht[0], ref_ht)
            us = float("nan") if INTERPRET else 1e3 * triton.testing.do_bench_cudagraph(call, rep=100)  # (graph replay: R stays in L2, as in the call)
            rows.append(dict(HV=HV, NA=NA, prec=prec, BVS=bvs, warps=w, stages=st, us=us, rrmse_hs=e_hs, rrmse_ht=e_ht))
            print(f"{HV:>3} {NA:>3} {prec:>7} {bvs:>4} {w:>5} {st:>6} {us:8.2f} {e_hs:10.2e} {e_ht:10.2e}", flush=True)
    if a.out:
        with open(a.out, "w") as f:
            json.dump(dict(device=dev_name, triton=triton.__version__, rows=rows), f, indent=1)


if __name__ == "__main__":
    main()
