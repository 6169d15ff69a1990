"""Round 32 probe: would a state chain that steps two 64-token chunks at once (a 128-row step) shorten gl_ws's chain?

gl_ws's chain (T=32768/16/32: 512 dependent steps of ~1.07 us on the H200, 0.547 ms) is bound by the latency of each
step's three dependent dots and hand-offs, which hardly depends on the tile width (round 12, gl_ws2). A chain over
pairs of chunks runs half the steps, each a 128-row step, if the state pass gets the pair's inverse
``Abig = [[A1, 0], [A21, A2]]`` with ``A21 = -A2 L21 A1`` and ``L21 = diag(beta2) (K2 K1^T * e^(G2_i - G1_j))``
(G cumulative from the pair's start), and the pair-relative row factors. The intra kernel keeps chunk 64.

``algebra`` (CPU): (1) the pair step equals two chunk steps in float64, outputs included (the second chunk's output
takes ``Aqk21 = tril-free Q2 K1^T * e^(G2_i - G1_j)`` on the first chunk's U); (2) an emulation of the kernels'
bf16 rounding points, chunk steps against pair steps, each against the float64 recurrence (CONTRACTS §2.3).

``bench`` (GPU): the chain alone (tiles resident in shared memory, no loads, no output partition), a 64-row step
against a 128-row step (``TRI``: the U dot without the zero block), on 128 CTAs (T=32768/16/32's grid) and on 1;
first checked against a torch emulation; the plain 64-row step also on 264 CTAs (two per SM of an H100 or H200).
Prints microseconds per 64 tokens. The projection for a whole kernel is
gl_ws's measured step plus the difference per step.

    python scripts/gdn_pair_step.py algebra
    python scripts/gdn_pair_step.py bench
"""

import argparse
import math
import os
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path[:0] = [os.path.join(ROOT, "op_test", "nvidia", "chunk_gdn")]

import torch  # noqa: E402

BF = torch.bfloat16


def _r(x, on):
    """x rounded to bf16 (and back to the working dtype) where ``on``, else unchanged."""
    return x.to(BF).to(x.dtype) if on else x


def _chunk_ops(kn, g, beta, rnd, dt):
    """The intra kernel's per-chunk products of one head: A (rounded), factors. kn [L, K], g [L] cumulative."""
    L = kn.shape[0]
    d = g[:, None] - g[None, :]
    gam = torch.exp(torch.where(torch.ones(L, L, dtype=torch.bool).tril(-1), d, torch.full_like(d, -math.inf)))
    Lm = torch.eye(L, dtype=dt) + beta[:, None] * (kn @ kn.T) * gam
    A = _r(torch.linalg.inv(Lm), rnd)
    return A


def _forward(q, k, v, g, beta, scale, pair, rnd, S0=None):
    """One head, one sequence. q, k [T, K] (already normalised and rounded as the contract says), v [T, V], g [T] log
    decays, beta [T]. ``pair``: 128-row chain steps from chunk-64 products. ``rnd``: the kernels' bf16 rounding
    points (S, X, U, A, A21, Aqk), fp32 work; else float64 throughout. ``S0``: the initial state [K, V] (zeros if
    None). Returns (o [T, V], final S [K, V])."""
    dt = torch.float32 if rnd else torch.float64
    q, k, v, g, beta = (x.to(dt) for x in (q, k, v, g, beta))
    T, K = k.shape
    V = v.shape[1]
    S = torch.zeros(K, V, dtype=dt) if S0 is None else S0.to(dt).clone()
    o = torch.zeros(T, V, dtype=dt)
    C = 64
    starts = list(range(0, T, C))
    groups = [starts[i:i + 2] for i in range(0, len(starts), 2)] if pair else [[s] for s in starts]
    for grp in groups:
        t0 = grp[0]
        t1 = min(T, grp[-1] + C)
        G = torch.cumsum(g[t0:t1], 0)  # cumulative from the step's start
        kn, qn, vv, bt = k[t0:t1], q[t0:t1], v[t0:t1], beta[t0:t1]
        n = t1 - t0
        # Abig from the chunk-64 inverses (chunk-local gates: the diagonal blocks depend only on differences)
        Ab = torch.zeros(n, n, dtype=dt)
        blocks = [(s - t0, min(n, s - t0 + C)) for s in grp]
        for a, b in blocks:
            Ab[a:b, a:b] = _chunk_ops(kn[a:b], G[a:b], bt[a:b], rnd, dt)
        if len(blocks) == 2:
            (a1, b1), (a2, b2) = blocks
            L21 = bt[a2:b2, None] * (kn[a2:b2] @ kn[a1:b1].T) * torch.exp(G[a2:b2, None] - G[None, a1:b1])
            Ab[a2:b2, a1:b1] = _r(-(Ab[a2:b2, a2:b2] @ L21) @ Ab[a1:b1, a1:b1], rnd)
        eg = torch.exp(G)
        gl_ = G[-1]
        sb = _r(S, rnd)
        X = _r(bt[:, None] * vv - (bt * eg)[:, None] * (kn @ sb), rnd)
        U = Ab @ X
        Ub = _r(U, rnd)
        ud = _r(U * torch.exp(gl_ - G)[:, None], rnd)
        # output: e^G (Q S) + (causal Q K^T e^(G_i - G_j)) U over the whole step (the pair's Aqk has the Aqk21 block)
        d = G[:, None] - G[None, :]
        causal = torch.ones(n, n, dtype=torch.bool).tril()
        Aqk = torch.where(causal, (qn @ kn.T) * torch.exp(torch.where(causal, d, torch.zeros_like(d))),
                          torch.zeros_like(d))
        Aqk = _r(Aqk, rnd)
        o[t0:t1] = scale * (eg[:, None] * (qn @ sb) + Aqk @ Ub)
        S = S * torch.exp(gl_) + kn.T @ ud
    return o, S


def head_inputs(T, K=128, seed=1, g_mode="logsigmoid", h0=None):
    """One head of the target tests' random inputs (``make_inputs``), q and k L2-normalised and rounded as the
    contract says, and the float64 token-by-token recurrence on them: (dict of q, k, v, g, beta, scale and S0, the
    initial state [K, V] or None; reference output [T, V]; reference final state [K, V])."""
    import _gdn_cases as C
    x = C.make_inputs(T=T, H=1, HV=1, K=K, seed=seed, h0=h0, g_mode=g_mode)

    def nrm(t):
        tf = t.float()
        return (tf * torch.rsqrt((tf * tf).sum(-1, keepdim=True) + 1e-6)).to(t.dtype)
    ro, rS = C.ref_recurrence(x["q"], x["k"], x["v"], x["g"], x["beta"], scale=x["scale"],
                              initial_state=x["initial_state"], use_qk_l2norm_in_kernel=True)
    S0 = None if x["initial_state"] is None else x["initial_state"][0, 0]
    return (dict(q=nrm(x["q"])[0, :, 0], k=nrm(x["k"])[0, :, 0], v=x["v"][0, :, 0], g=x["g"][0, :, 0],
                 beta=x["beta"][0, :, 0], scale=x["scale"], S0=S0), ro[0, :, 0], rS[0, 0])


def algebra(args):
    import _gdn_cases as C
    for T in args.T:
        x, ro, rS = head_inputs(T)
        res = {}
        for name, pair, rnd in (("chunk64 f64", False, False), ("pair f64", True, False),
                                ("chunk64 bf16-points", False, True), ("pair bf16-points", True, True)):
            o, S = _forward(x["q"], x["k"], x["v"], x["g"], x["beta"], x["scale"], pair, rnd)
            res[name] = (C.rrmse(ro, o), C.rrmse(rS, S))
        for name, (eo, es) in res.items():
            print(f"T={T:5d} {name:20s} o rrmse {eo:.3e}  S rrmse {es:.3e}")
        assert res["pair f64"][0] < 1e-9 and res["pair f64"][1] < 1e-9, "pair algebra"


def bench(args):
    import triton
    from triton.experimental import gluon
    from triton.experimental.gluon import language as gl
    from triton.experimental.gluon.language.nvidia.hopper import (
        fence_async_shared,
        warpgroup_mma,
        warpgroup_mma_wait,
    )
    _cta_barrier = getattr(gl, "thread_barrier", None) or gl.barrier

    @gluon.jit
    def _tile(ptr, R: gl.constexpr, Cn: gl.constexpr, BL: gl.constexpr):
        r = gl.arange(0, R, layout=gl.SliceLayout(1, BL))
        c = gl.arange(0, Cn, layout=gl.SliceLayout(0, BL))
        return gl.load(ptr + gl.expand_dims(r, 1) * Cn + gl.expand_dims(c, 0))

    @gluon.jit
    def atrex_diag_gdn_chain_step(k_ptr, a_ptr, v_ptr, f_ptr, s_ptr, u_ptr, NT, M: gl.constexpr, BK: gl.constexpr,
                                  BV: gl.constexpr, TRI: gl.constexpr, KSPLIT: gl.constexpr = False,
                                  LATE_U: gl.constexpr = False):
        """gl_ws's chain step (``kernels_gluon._ws_chain``) on M rows with the same tiles every step. ``KSPLIT``: K S
        as two independent 64-deep accumulations, summed (a shorter dependent wgmma sequence). ``LATE_U``: the U tile
        for the output partition stored after the update is issued (only ``ud`` before it)."""
        MMA: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, BV, 16])
        ROW: gl.constexpr = gl.SliceLayout(1, MMA)
        BL: gl.constexpr = gl.BlockedLayout([1, 8], [4, 8], [4, 1], [1, 0])
        dt: gl.constexpr = gl.bfloat16
        k_s = gl.allocate_shared_memory(dt, [M, BK], gl.NVMMASharedLayout.get_default_for([M, BK], dt))
        a_s = gl.allocate_shared_memory(dt, [M, M], gl.NVMMASharedLayout.get_default_for([M, M], dt))
        v_s = gl.allocate_shared_memory(dt, [M, BV], gl.NVMMASharedLayout.get_default_for([M, BV], dt))
        sb = gl.allocate_shared_memory(dt, [BK, BV], gl.NVMMASharedLayout.get_default_for([BK, BV], dt))
        x_s = gl.allocate_shared_memory(dt, [M, BV], gl.NVMMASharedLayout.get_default_for([M, BV], dt))
        u_s = gl.allocate_shared_memory(dt, [M, BV], gl.NVMMASharedLayout.get_default_for([M, BV], dt))
        ud_s = gl.allocate_shared_memory(dt, [M, BV], gl.NVMMASharedLayout.get_default_for([M, BV], dt))
        k_s.store(_tile(k_ptr, M, BK, BL))
        a_s.store(_tile(a_ptr, M, M, BL))
        v_s.store(_tile(v_ptr, M, BV, BL))
        ro = gl.arange(0, M, layout=ROW)
        c_bt = gl.load(f_ptr + ro)
        c_be = gl.load(f_ptr + M + ro)
        c_dk = gl.load(f_ptr + 2 * M + ro)
        c_egl = gl.load(f_ptr + 3 * M)
        zero = gl.zeros([M, BV], gl.float32, MMA)
        S = gl.zeros([BK, BV], gl.float32, MMA)
        fence_async_shared()
        _cta_barrier()
        for _ in range(NT):
            sb.store(S.to(dt))
            fence_async_shared()
            _cta_barrier()
            if KSPLIT:
                hk: gl.constexpr = BK // 2
                ka = warpgroup_mma(k_s.slice(0, hk, dim=1), sb.slice(0, hk, dim=0), zero, use_acc=False,
                                   is_async=True)
                kb = warpgroup_mma(k_s.slice(hk, hk, dim=1), sb.slice(hk, hk, dim=0), zero, use_acc=False,
                                   is_async=True)
                vt = v_s.load(MMA).to(gl.float32)
                ka, kb = warpgroup_mma_wait(0, deps=[ka, kb])
                ks = ka + kb
            else:
                ks = warpgroup_mma(k_s, sb, zero, use_acc=False, is_async=True)
                vt = v_s.load(MMA).to(gl.float32)
                ks = warpgroup_mma_wait(0, deps=[ks])
            X = gl.expand_dims(c_bt, 1) * vt - gl.expand_dims(c_be, 1) * ks
            x_s.store(X.to(dt))
            fence_async_shared()
            _cta_barrier()
            if TRI:  # rows 0..63: A11 X1; rows 64..127: [A21 A22] X (the zero block skipped)
                h: gl.constexpr = M // 2
                z2 = gl.zeros([h, BV], gl.float32, MMA)
                u1 = warpgroup_mma(a_s.slice(0, h, dim=0).slice(0, h, dim=1), x_s.slice(0, h, dim=0), z2,
                                   use_acc=False, is_async=True)
                u2 = warpgroup_mma(a_s.slice(h, h, dim=0), x_s, z2, use_acc=False, is_async=True)
                u1, u2 = warpgroup_mma_wait(0, deps=[u1, u2])
                dk1 = gl.load(f_ptr + 2 * M + gl.arange(0, h, layout=ROW))
                dk2 = gl.load(f_ptr + 2 * M + h + gl.arange(0, h, layout=ROW))
                u_s.slice(0, h, dim=0).store(u1.to(dt))
                u_s.slice(h, h, dim=0).store(u2.to(dt))
                ud_s.slice(0, h, dim=0).store((u1 * gl.expand_dims(dk1, 1)).to(dt))
                ud_s.slice(h, h, dim=0).store((u2 * gl.expand_dims(dk2, 1)).to(dt))
            else:
                u = warpgroup_mma(a_s, x_s, zero, use_acc=False, is_async=True)
                u = warpgroup_mma_wait(0, deps=[u])
                if not LATE_U:
                    u_s.store(u.to(dt))
                ud_s.store((u * gl.expand_dims(c_dk, 1)).to(dt))
            fence_async_shared()
            _cta_barrier()
            st = warpgroup_mma(k_s.permute((1, 0)), ud_s, S * c_egl, is_async=True)
            if LATE_U:
                u_s.store(u.to(dt))
            S = warpgroup_mma_wait(0, deps=[st])
        SL: gl.constexpr = gl.SliceLayout(0, MMA)
        rs = gl.arange(0, BK, layout=ROW)
        cs = gl.arange(0, BV, layout=SL)
        base = gl.program_id(0).to(gl.int64) * BK * BV
        gl.store(s_ptr + base + gl.expand_dims(rs, 1) * BV + gl.expand_dims(cs, 0), S)
        ub = u_s.load(MMA)
        ru = gl.arange(0, M, layout=ROW)
        gl.store(u_ptr + gl.program_id(0).to(gl.int64) * M * BV + gl.expand_dims(ru, 1) * BV + gl.expand_dims(cs, 0),
                 ub.to(gl.float32))

    dev = "cpu" if args.compile_only else "cuda"
    if args.compile_only:  # the stand-in sm90 driver (op_test/sm90_standin.py): record, then compile each launch
        sys.path.insert(0, os.path.join(ROOT, "op_test"))
        from sm90_standin import SM90, record_specialisations
        from triton.experimental.gluon._runtime import GluonASTSource
        specs = record_specialisations()
    BK, BV = 128, 32
    gen = torch.Generator().manual_seed(0)
    rows = []
    for M, tri, ksplit, late_u in ((64, False, False, False), (64, False, True, False), (64, False, False, True),
                                   (128, False, False, False), (128, True, False, False)):
        k = (torch.randn(M, BK, generator=gen) / math.sqrt(BK)).to(BF)
        a = (torch.eye(M) + 0.05 * torch.randn(M, M, generator=gen).tril(-1))
        if tri:
            a[: M // 2, M // 2:] = 0
        a = a.to(BF)
        v = torch.randn(M, BV, generator=gen).to(BF)
        f = torch.cat([torch.rand(M, generator=gen) * 0.5 + 0.25, torch.rand(M, generator=gen) * 0.5,
                       torch.rand(M, generator=gen) * 0.5 + 0.5, torch.tensor([0.9])]).float()
        kd, ad, vd, fd = (t.to(dev).contiguous() for t in (k, a, v, f))

        def launch(grid, nt, kd=kd, ad=ad, vd=vd, fd=fd, M=M, tri=tri, ksplit=ksplit, late_u=late_u):
            s = torch.empty(grid, BK, BV, device=dev)
            u = torch.empty(grid, M, BV, device=dev)
            atrex_diag_gdn_chain_step[(grid,)](kd, ad, vd, fd, s, u, nt, M, BK, BV, tri, ksplit, late_u, num_warps=4)
            return s, u

        if args.compile_only:
            launch(128, 8)
            continue
        # check: 3 steps against a torch emulation of the same rounding points
        S = torch.zeros(BK, BV)
        kf, af, vf = k.float(), a.float(), v.float()
        for _ in range(3):
            sbf = S.to(BF).float()
            X = (f[:M, None] * vf - f[M:2 * M, None] * (kf @ sbf)).to(BF).float()
            U = af @ X
            ud = (U * f[2 * M:3 * M, None]).to(BF).float()
            S = S * f[3 * M] + kf.T @ ud
        s, u = launch(1, 3)
        torch.cuda.synchronize()
        err = ((s[0].cpu() - S).norm() / S.norm()).item()
        print(f"M={M} TRI={tri} KSPLIT={ksplit} LATE_U={late_u}: check against torch, S rrmse {err:.2e}", flush=True)
        assert err < 1e-2, err
        steps = 512 * 64 // M
        for grid in ((128, 264, 1) if M == 64 and not (ksplit or late_u) else (128, 1)):
            ms = triton.testing.do_bench(lambda grid=grid, steps=steps: launch(grid, steps), warmup=5, rep=200)
            rows.append((M, tri, ksplit, late_u, grid, steps, ms))
    if args.compile_only:
        for name, (jit_fn, c) in specs.items():
            src = GluonASTSource(jit_fn, c["signature"], c["constants"], c["configs"][0])
            kern = triton.compile(src, target=SM90, options=dict(num_warps=c["num_warps"]))
            print(name.split("|")[0], c["constants"], "shared", kern.metadata.shared)
        return
    print("| rows per step | TRI | KSPLIT | LATE_U | CTAs | steps | ms | us per 64 tokens | us per step |")
    print("|---|---|---|---|---|---|---|---|---|")
    for M, tri, ksplit, late_u, grid, steps, ms in rows:
        print(f"| {M} | {tri} | {ksplit} | {late_u} | {grid} | {steps} | {ms:.4f} | {ms * 1e3 / 512:.3f} | "
              f"{ms * 1e3 / steps:.3f} |")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    al = sub.add_parser("algebra")
    al.add_argument("--T", type=int, nargs="+", default=[256, 1000])
    be = sub.add_parser("bench")
    be.add_argument("--compile-only", action="store_true", help="compile for sm90 on the CPU (no GPU), no run")
    a = ap.parse_args(argv)
    {"algebra": algebra, "bench": bench}[a.cmd](a)


if __name__ == "__main__":
    main()
