"""First look at ``launch.FUSED_RC`` on a GPU (round 20): ``_gdn_cases.fused_check`` on a few cases, one at a time and
in both inverse forms, each row printed (and flushed) as soon as it exists, so that a hang or a fault still leaves the
rows before it in the log. Run it under ``timeout``: a lost mbarrier phase shows as a hang, not as an error.

Where the fused output departs from the two-kernel call's, it also prints where: the first wrong chunks of the output
(per sequence-local chunk, the worst 16-row group: a wrong warp's rows of a wgmma tile show as one group), the value
heads and V blocks they are in, and the final state's error per value head.

    timeout 90 python3 scripts/gdn_fused_smoke.py [CASE ...]
"""

import os
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path[:0] = [os.path.join(ROOT, "op_test", "nvidia", "chunk_gdn"), os.path.join(ROOT, "op_test")]

import _gdn_cases as C  # noqa: E402

from atrex_nvidia.chunk_gdn.sm90 import launch  # noqa: E402

DEFAULT_CASES = ["fu_B2_T63_K64", "fu_varlen_K64_gva", "g_pos", "qwen_varlen_mixed", "qwen3next_T1000_bf16h0"]
CASES = (sys.argv[1:] if __name__ == "__main__" else []) or DEFAULT_CASES


def where_wrong(cid, diag16, device="cuda"):
    """The two-kernel and fused outputs of one case, compared chunk by chunk (printed, at most 6 lines)."""
    kw = dict(C.FUSED_CASES)[cid]
    x, extra = C.fused_inputs(cid, kw, device)
    outs = []
    for fused in (False, True):
        launch.FUSED_RC, launch.FUSED_DIAG16 = fused, diag16
        outs.append(launch.gdn_fwd(x["q"], x["k"], x["v"], x["g"], x["beta"], scale=x["scale"],
                                   initial_state=x["initial_state"], output_final_state=True,
                                   use_qk_l2norm_in_kernel=True, state_v_first=x["state_v_first"],
                                   cu_seqlens=x["cu_seqlens"], **extra))
    launch.FUSED_RC = launch.FUSED_DIAG16 = False
    (o0, h0), (o1, h1) = outs
    B, T, HV, V = o0.shape
    cu = x["cu_seqlens"].tolist() if x["cu_seqlens"] is not None else None
    spans = [(b, s, e) for b in range(B) for s, e in (zip(cu[:-1], cu[1:]) if cu else [(0, T)])]
    shown = 0
    for b, s, e in spans:
        for l0 in range(s, e, 64):
            ref, got = o0[b, l0:min(e, l0 + 64)].float(), o1[b, l0:min(e, l0 + 64)].float()
            err = (got - ref).norm() / ref.norm().clamp_min(1e-30)
            if err <= 1e-2 or shown >= 6:
                continue
            shown += 1
            groups = [((got[r:r + 16] - ref[r:r + 16]).norm() / ref[r:r + 16].norm().clamp_min(1e-30)).item()
                      for r in range(0, got.shape[0], 16)]
            heads = ((got - ref).norm(dim=(0, 2)) / ref.norm(dim=(0, 2)).clamp_min(1e-30)).tolist()
            vblocks = [((got[..., j:j + 64] - ref[..., j:j + 64]).norm() / ref[..., j:j + 64].norm().clamp_min(1e-30)
                        ).item() for j in range(0, V, 64)]
            print(f"WHERE {cid} diag16={diag16} batch {b} seq [{s},{e}) chunk {(l0 - s) // 64}: rrmse {err:.2e}, "
                  f"16-row groups {[f'{v:.1e}' for v in groups]}, worst heads "
                  f"{sorted(range(HV), key=lambda i: -heads[i])[:4]}, V blocks {[f'{v:.1e}' for v in vblocks]}",
                  flush=True)
    hs = ((h1 - h0).flatten(2).norm(dim=2) / h0.flatten(2).norm(dim=2).clamp_min(1e-30)).max(dim=0).values
    print(f"WHERE {cid} diag16={diag16} final state rrmse per value head (worst over sequences): "
          f"{[f'{v:.1e}' for v in hs.tolist()[:8]]}{' ...' if HV > 8 else ''}", flush=True)


for diag16 in (False, True) if __name__ == "__main__" else ():
    for cid in CASES:
        print(f"SMOKE {cid} diag16={diag16} ...", flush=True)
        rows = C.fused_check(launch, "cuda", (cid,), diag16=diag16)
        for name, (err, _, bound) in rows.items():
            print(f"SMOKE {name} diag16={diag16} {err:.3e} <= {bound:.1e} {'ok' if err <= bound else 'FAIL'}",
                  flush=True)
        if rows[f"fused_{cid}_vs_two_kernels"][0] > 2e-3:
            where_wrong(cid, diag16)
