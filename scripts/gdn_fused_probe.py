"""DIAGNOSTIC for a fused kernel (``launch.FUSED_RC``) that hangs or computes wrong values on the H200: run one
``_gdn_cases.FUSED_CASES`` case with ``scripts/diag/fused_probe.patch`` applied (never on a product tree), which makes
the kernel

* write each partition's progress (chunk counter, step) through to a pinned, host-mapped buffer as it goes. If the
  launch has not finished after ``--timeout`` seconds, this script prints where every CTA's chain, output and aux
  partitions stopped (grouped), which names the mbarrier wait that never completes, and exits with status 3 (after a
  device fault: the same, status 4);
* dump each chunk's intermediate tiles (aux partition: A = (I + L)^-1, the normalised k, the factor rows and gamma;
  output partition: the normalised q, Aqk, U_c) to fp32 buffers (NaN where never written). This script compares
  them, and the output, with a float64 chunked forward of its own, chunk by chunk, and prints for each quantity the
  worst chunks (sequence, value head, V block, chunk, 16-row groups). The first quantity that is wrong locates the
  fault: the aux partition's (A, k, the factor rows), the output partition's (q, Aqk), the chain's (U) or the output
  store (o only).

    patch -p1 < scripts/diag/fused_probe.patch
    timeout 120 python3 scripts/gdn_fused_probe.py CASE [--diag16] [--stages 3]   # or --from-smoke smoke.log
    patch -R -p1 < scripts/diag/fused_probe.patch

Rows are the kernel's global rows (b * T + t, or the varlen token index), as the dump writes them.
"""

import argparse
import os
import re
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path[:0] = [os.path.join(ROOT, "op_test", "nvidia", "chunk_gdn"), os.path.join(ROOT, "op_test")]

import torch  # noqa: E402

MAX_CTAS = 1024
CHAIN_STEPS = {1: "waits iready (aux)", 2: "waits ready (TMA)", 3: "waits su_empty (output, chunk - 2)",
               4: "in its dots / su_ready arrive", 5: "chunk done (empty arrived)"}
OUT_STEPS = {1: "waits iready (aux)", 2: "waits ready (TMA)", 3: "q norm / Q K^T", 4: "waits su_ready (chain)",
             5: "Q S, Aqk U", 6: "waits empty (chain)", 7: "issues loads", 8: "chunk done"}
AUX_STEPS = {1: "waits ready (TMA)", 2: "k norm / K K^T / inverse", 3: "chunk done (iready arrived)"}


def buffers(x, device):
    """The patched kernel's probe buffers for inputs ``x``: fp32 dumps filled with NaN, the progress words with -1
    (pinned host memory on a GPU: the kernel writes them through while it runs)."""
    B, T, H, K = x["q"].shape
    HV, V = x["v"].shape[2], x["v"].shape[3]
    NV, R = V // 64, B * T

    def nan(*shape):
        return torch.full(shape, float("nan"), dtype=torch.float32, device=device)
    prog = torch.full((MAX_CTAS * 4,), -1, dtype=torch.int32)
    if device != "cpu":
        prog = prog.pin_memory()
    return dict(prog=prog, A=nan(NV, HV, R, 64), K=nan(NV, HV, R, K), F=nan(NV, HV, 6, R), Q=nan(NV, HV, R, K),
                AQK=nan(NV, HV, R, 64), U=nan(HV, R, V))


def spans(x):
    """(b, first global row, length, sequence index) of every sequence of the call."""
    B, T = x["q"].shape[:2]
    if x["cu_seqlens"] is None:
        return [(b, b * T, T, b) for b in range(B)]
    cu = x["cu_seqlens"].tolist()
    return [(0, s, e - s, n) for n, (s, e) in enumerate(zip(cu[:-1], cu[1:]))]


def reference(x, extra):
    """The dumped quantities and the output, in the dump's layout (no V-block dimension), by a float64 chunked forward
    written out here: per chunk, L = tril(beta e^(gamma_i - gamma_j) k_i.k_j, -1), A = (I + L)^-1, Aqk = tril(q_i.k_j
    e^(gamma_i - gamma_j)), X = beta V - beta e^gamma (K S), U = A X, O = scale (e^gamma Q S + Aqk U),
    S = e^gamma_last S + K^T (e^(gamma_last - gamma) U)."""
    f64 = torch.float64
    def l2n(t):  # in fp32, rounded back to the input dtype (the contract's and the kernel's normalisation)
        tf = t.detach().cpu().float()
        return (tf * torch.rsqrt((tf * tf).sum(-1, keepdim=True) + 1e-6)).to(t.dtype).to(f64)
    qn, kn, v = l2n(x["q"]), l2n(x["k"]), x["v"].detach().cpu().to(f64)
    g, beta = x["g"].detach().cpu().to(f64), x["beta"].detach().cpu().to(f64)
    if extra.get("use_beta_sigmoid_in_kernel"):
        beta = torch.sigmoid(beta) * (2.0 if extra.get("allow_neg_eigval") else 1.0)
    B, T, H, K = qn.shape
    HV, V = v.shape[2], v.shape[3]
    G, R = HV // H, B * T
    flat = [t.reshape(R, *t.shape[2:]) for t in (qn, kn, v, g, beta)]
    qf, kf, vf, gf, bf = flat
    z = torch.zeros
    ref = dict(A=z(HV, R, 64, dtype=f64), K=z(HV, R, K, dtype=f64), F=z(HV, 6, R, dtype=f64),
               Q=z(HV, R, K, dtype=f64), AQK=z(HV, R, 64, dtype=f64), U=z(HV, R, V, dtype=f64),
               o=z(R, HV, V, dtype=f64))
    h0 = x["initial_state"]
    for _b, t0, L, n in spans(x):
        for hv in range(HV):
            h = hv // G
            if h0 is None:
                S = z(K, V, dtype=f64)
            else:
                S = h0[n, hv].detach().cpu().to(f64)
                S = S.transpose(0, 1) if x["state_v_first"] else S
            for l0 in range(0, L, 64):
                rows = slice(t0 + l0, t0 + min(L, l0 + 64))
                nv = rows.stop - rows.start
                kc, qc, vc = kf[rows, h], qf[rows, h], vf[rows, hv]
                gam = torch.cumsum(gf[rows, hv], 0)
                bc = bf[rows, hv]
                dec = torch.exp(gam[:, None] - gam[None, :])
                Lm = torch.tril(bc[:, None] * dec * (kc @ kc.T), -1)
                A = torch.linalg.inv(torch.eye(nv, dtype=f64) + Lm)
                aqk = torch.tril((qc @ kc.T) * dec)
                X = bc[:, None] * vc - (bc * torch.exp(gam))[:, None] * (kc @ S)
                U = A @ X
                ref["o"][rows, hv] = x["scale"] * (torch.exp(gam)[:, None] * (qc @ S) + aqk @ U)
                glast = gam[-1]
                S = torch.exp(glast) * S + (kc * torch.exp(glast - gam)[:, None]).T @ U
                ref["A"][hv, rows, :nv] = A
                ref["AQK"][hv, rows, :nv] = aqk
                ref["K"][hv, rows], ref["Q"][hv, rows], ref["U"][hv, rows] = kc, qc, U
                for p, val in enumerate((bc, bc * torch.exp(gam), torch.exp(gam), torch.exp(glast - gam),
                                         torch.exp(glast).expand(nv), gam)):
                    ref["F"][hv, p, rows] = val
    return ref


def _rr(d, r):
    return ((d - r).norm() / r.norm().clamp_min(1e-30)).item() if torch.isfinite(d).all() else float("nan")


def compare(x, dump, o, ref, bad=5e-2, show=4):
    """Per quantity: the worst chunks of the dump (or of the output ``o``) against ``ref``; printed lines, and the
    names of the quantities with a chunk above ``bad`` (or never written)."""
    HV, V = x["v"].shape[2], x["v"].shape[3]
    NV = V // 64
    lines, wrong = [], []
    views = {n: (lambda iv, hv, rows, n=n: dump[n][iv, hv, rows]) for n in ("A", "K", "Q", "AQK")}
    views["F"] = lambda iv, hv, rows: dump["F"][iv, hv, :, rows].T
    views["U"] = lambda iv, hv, rows: dump["U"][hv, rows, iv * 64:(iv + 1) * 64]
    views["o"] = lambda iv, hv, rows: o.reshape(-1, HV, V)[rows, hv, iv * 64:(iv + 1) * 64].float()
    rviews = {n: (lambda hv, rows, n=n: ref[n][hv, rows]) for n in ("A", "K", "Q", "AQK")}
    rviews["F"] = lambda hv, rows: ref["F"][hv, :, rows].T
    rviews["U"] = lambda iv, hv, rows: ref["U"][hv, rows, iv * 64:(iv + 1) * 64]
    rviews["o"] = lambda iv, hv, rows: ref["o"][rows, hv, iv * 64:(iv + 1) * 64]
    for name in ("F", "K", "A", "Q", "AQK", "U", "o"):
        errs, unwritten = [], 0
        for _b, t0, L, n in spans(x):
            for hv in range(HV):
                for iv in range(NV):
                    for l0 in range(0, L, 64):
                        rows = slice(t0 + l0, t0 + min(L, l0 + 64))
                        d = views[name](iv, hv, rows).double().cpu()
                        r = rviews[name](iv, hv, rows) if name in ("U", "o") else rviews[name](hv, rows)
                        if not torch.isfinite(d).all():
                            unwritten += 1
                        groups = [_rr(d[j:j + 16], r[j:j + 16]) for j in range(0, d.shape[0], 16)]
                        errs.append((_rr(d, r), n, hv, iv, l0 // 64, groups))
        errs.sort(key=lambda e: -e[0] if e[0] == e[0] else -float("inf"))  # (non-finite chunks first)
        worst = max((e[0] for e in errs if e[0] == e[0]), default=0.0)
        top = errs[:show]
        flag = "BAD" if unwritten or worst > bad else "ok"
        if flag == "BAD":
            wrong.append(name)
        lines.append(f"PROBE {name:>3} {flag}: worst chunk rrmse {worst:.2e} over {len(errs)} chunks, "
                     f"{unwritten} with non-finite values (never written or NaN)")
        for e, n, hv, iv, c, groups in top if flag == "BAD" else ():
            lines.append(f"PROBE {name:>3}   seq {n} value head {hv} V block {iv} chunk {c}: {e:.2e}, 16-row groups "
                         f"{[f'{v:.1e}' for v in groups]}")
    return lines, wrong


def trace_lines(prog, n_ctas):
    """Each CTA's (chain, output, aux) progress words decoded, CTAs in the same state grouped."""
    words = prog[:n_ctas * 4].view(n_ctas, 4).tolist()

    def dec(w, steps):
        return "not started" if w < 0 else f"chunk {w // 16}: {steps.get(w % 16, w % 16)}"
    groups = {}
    for cta, (c, o, a, _) in enumerate(words):
        key = (dec(c, CHAIN_STEPS), dec(o, OUT_STEPS), dec(a, AUX_STEPS))
        groups.setdefault(key, []).append(cta)
    out = []
    for (c, o, a), ctas in sorted(groups.items(), key=lambda kv: kv[1][0]):
        out.append(f"PROBE trace CTAs {ctas[:6]}{' ...' if len(ctas) > 6 else ''} ({len(ctas)}): chain {c} | "
                   f"output {o} | aux {a}")
    return out


def case_from_smoke(path):
    """(case, diag16) the smoke log points at: the case that never finished (a hang), else the first failing one."""
    started, failed = None, None
    for line in open(path):
        m = re.match(r"SMOKE (\S+) diag16=(\w+) \.\.\.", line)
        if m:
            started = (m.group(1), m.group(2) == "True")
            continue
        if started and re.match(r"SMOKE fused_\S+_(vs_|finite|ran|inputs)", line):
            if "FAIL" in line and failed is None:
                failed = started
            if line.startswith(f"SMOKE fused_{started[0]}_vs_float64"):
                started = None
    return started or failed


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("case", nargs="?", help="a _gdn_cases.FUSED_CASES id")
    ap.add_argument("--from-smoke", help="take the case and inverse form from scripts/gdn_fused_smoke.py's log")
    ap.add_argument("--diag16", action="store_true")
    ap.add_argument("--stages", type=int, default=None)
    ap.add_argument("--sm-count", type=int, default=None)
    ap.add_argument("--timeout", type=float, default=10.0, help="seconds before the launch counts as hung")
    a = ap.parse_args(argv)
    import _gdn_cases as C

    from atrex_nvidia.chunk_gdn.sm90 import launch
    if not hasattr(launch, "FUSED_PROBE"):
        raise SystemExit("scripts/diag/fused_probe.patch is not applied")
    case, diag16 = a.case, a.diag16
    if a.from_smoke:
        found = case_from_smoke(a.from_smoke)
        if found is None:
            print("PROBE: the smoke log shows no failing or unfinished case", flush=True)
            return 0
        case, diag16 = found
    kw = dict(C.FUSED_CASES)[case]
    x, extra = C.fused_inputs(case, kw, "cuda")
    launch.FUSED_PROBE = bufs = buffers(x, "cuda")
    launch.FUSED_RC, launch.FUSED_DIAG16 = True, diag16
    if a.stages:
        launch.FUSED_STAGES = a.stages
    HV, V = x["v"].shape[2], x["v"].shape[3]
    N = len(spans(x))
    sm = a.sm_count or torch.cuda.get_device_properties(0).multi_processor_count
    n_ctas = min(N * HV * (V // 64), sm, MAX_CTAS)
    print(f"PROBE case {case} diag16={diag16} stages={launch.FUSED_STAGES} CTAs {n_ctas}", flush=True)
    torch.cuda.synchronize()
    o, _ = launch.gdn_fwd(x["q"], x["k"], x["v"], x["g"], x["beta"], scale=x["scale"],
                          initial_state=x["initial_state"], output_final_state=True, use_qk_l2norm_in_kernel=True,
                          state_v_first=x["state_v_first"], cu_seqlens=x["cu_seqlens"], sm_count=a.sm_count,
                          **extra)
    ev = torch.cuda.Event()
    ev.record()
    t0 = time.time()
    try:
        while not ev.query():
            if time.time() - t0 > a.timeout:
                print(f"PROBE HANG: the launch has not finished after {a.timeout:.0f} s", flush=True)
                for line in trace_lines(bufs["prog"], n_ctas):
                    print(line, flush=True)
                os._exit(3)
            time.sleep(0.05)
    except RuntimeError as e:  # a device fault: the pinned progress words are still readable
        print(f"PROBE FAULT: {str(e).splitlines()[0][:200]}", flush=True)
        for line in trace_lines(bufs["prog"], n_ctas):
            print(line, flush=True)
        os._exit(4)
    print(f"PROBE finished in < {time.time() - t0:.2f} s; final progress:", flush=True)
    for line in trace_lines(bufs["prog"], n_ctas)[:4]:
        print(line, flush=True)
    lines, wrong = compare(x, bufs, o, reference(x, extra))
    for line in lines:
        print(line, flush=True)
    print(f"PROBE first wrong quantity: {wrong[0] if wrong else 'none'} (order: F, K, A | Q, AQK | U | o)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
