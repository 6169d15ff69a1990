"""Round 33 probe: the arithmetic of a sequence-parallel state pass, for calls with few (sequence, value head) pairs
(Qwen3-Next under tensor parallelism), where most SMs idle while one chain steps through a long sequence.

The chunk recurrence is linear in the state, and each state column evolves on its own. So a segment of chunks maps
its initial state S to ``M S + B``. ``B`` is the segment's end state from zero and ``M`` (K x K) is the end state of
the same chain run on the identity with zero v. One run yields both, on the widened value ``[v | 0]`` from
``[S0 | I]``. The state pass then needs three phases:
  A. every segment at once: ``[B_s | M_s]`` (segment 0 from the true initial state, so that B_0 is its end state);
  B. a short scan: ``S_(s+1) = M_s S_s + B_s`` (fp32);
  C. every segment at once again, from ``S_s``, for the outputs and the final state.

``algebra`` (CPU): in float64 the three phases equal the token-by-token recurrence (CONTRACTS §2.3); with the
kernels' bf16 rounding points (``gdn_pair_step._forward``'s emulation, the scan in fp32), how far output and final
state land from that recurrence, against the plain chunk chain's emulation. This is the accuracy question of the
design; its speed needs new kernel options (a chain-only phase A, one intra pass) and is not measured.

    python scripts/gdn_segment_scan.py algebra --T 1000 4096 --segments 2 4 8
"""

import argparse
import math
import os
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path[:0] = [os.path.join(ROOT, "op_test", "nvidia", "chunk_gdn"), os.path.dirname(os.path.abspath(__file__))]

import gdn_pair_step as P  # noqa: E402
import torch  # noqa: E402


def bounds(T, segments, C=64):
    """Segment token bounds: ``segments`` pieces of whole chunks (the last may be shorter or missing)."""
    per = math.ceil(math.ceil(T / C) / segments) * C
    return [(a, min(T, a + per)) for a in range(0, T, per)]


def segmented(q, k, v, g, beta, scale, S0, segments, rnd):
    """The three phases on one head: (o [T, V], final S [K, V])."""
    dt = torch.float32 if rnd else torch.float64
    K, V = k.shape[1], v.shape[1]
    segs = bounds(k.shape[0], segments)
    ident = torch.eye(K, dtype=dt)
    # A: [B_s | M_s] per segment on [v | 0] from [S0 | I] (segment 0: from the true initial state)
    BM = []
    for i, (a, b) in enumerate(segs):
        v_ext = torch.cat([v[a:b].to(dt), torch.zeros(b - a, K, dtype=dt)], 1)
        s0 = torch.cat([S0.to(dt) if i == 0 else torch.zeros(K, V, dtype=dt), ident], 1)
        _, S = P._forward(q[a:b], k[a:b], v_ext, g[a:b], beta[a:b], scale, pair=False, rnd=rnd, S0=s0)
        BM.append((S[:, :V], S[:, V:]))
    # B: the segments' initial states (fp32 or float64 products); segment 0 ran from S0, so B_0 is its end state
    starts = [S0.to(dt)]
    for i in range(1, len(segs)):
        Bs, Ms = BM[i - 1]
        starts.append(Bs if i == 1 else Ms @ starts[-1] + Bs)
    # C: outputs and end states from the true initial states
    o = torch.zeros(v.shape[0], V, dtype=dt)
    S = None
    for (a, b), s0 in zip(segs, starts):
        o[a:b], S = P._forward(q[a:b], k[a:b], v[a:b], g[a:b], beta[a:b], scale, pair=False, rnd=rnd, S0=s0)
    return o, S


def head_inputs(T, K=128, seed=1, g_mode="tiny"):
    """``gdn_pair_step.head_inputs`` with a random fp32 initial state. The default decays, "tiny" (slow), keep a state
    alive across segments (with logsigmoid decays a 128-token segment forgets its initial state: M ~ 0)."""
    return P.head_inputs(T, K=K, seed=seed, g_mode=g_mode, h0=torch.float32)


def algebra(args):
    import _gdn_cases as C
    for T in args.T:
        x, ro, rS = head_inputs(T, g_mode=args.g)
        o, S = P._forward(x["q"], x["k"], x["v"], x["g"], x["beta"], x["scale"], pair=False, rnd=True, S0=x["S0"])
        base = (C.rrmse(ro, o), C.rrmse(rS, S))
        print(f"T={T:5d} g {args.g}: chain  bf16-points: o {base[0]:.3e}  S {base[1]:.3e}")
        for n in args.segments:
            o64, S64 = segmented(**x, segments=n, rnd=False)
            assert (o64 - ro).abs().max() < 1e-9 and (S64 - rS).abs().max() < 1e-9, "segment algebra"
            o, S = segmented(**x, segments=n, rnd=True)
            eo, es = C.rrmse(ro, o), C.rrmse(rS, S)
            m = segment_transition_norm(x, n)
            print(f"T={T:5d} {n} segments (|M_1| {m:.2e})  bf16-points: o {eo:.3e}  S {es:.3e}  ({eo / base[0]:.3f}x, "
                  f"{es / base[1]:.3f}x the chain's); float64: exact to 1e-9")


def segment_transition_norm(x, segments):
    """The spectral norm of the second segment's transition M_1 (float64): how much of a segment's initial state
    reaches its end, i.e. how much phase B matters."""
    a, b = bounds(x["k"].shape[0], segments)[min(1, segments - 1)]
    K = x["k"].shape[1]
    _, M = P._forward(x["q"][a:b], x["k"][a:b], torch.zeros(b - a, K, dtype=torch.float64), x["g"][a:b],
                      x["beta"][a:b], x["scale"], pair=False, rnd=False, S0=torch.eye(K, dtype=torch.float64))
    return float(torch.linalg.matrix_norm(M, ord=2))


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=["algebra"])
    ap.add_argument("--T", type=int, nargs="+", default=[1000, 4096])
    ap.add_argument("--segments", type=int, nargs="+", default=[2, 4, 8])
    ap.add_argument("--g", default="tiny", choices=["tiny", "zero", "logsigmoid"], help="decays (target tests' modes)")
    args = ap.parse_args(argv)
    algebra(args)


if __name__ == "__main__":
    main()
