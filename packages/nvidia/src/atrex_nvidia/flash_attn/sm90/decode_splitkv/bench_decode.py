"""``nvidia.decode_splitkv`` vs FA4 direct (``num_splits=1``) on the paged-decode matrix (CUDA only).

    python -m atrex_nvidia.flash_attn.sm90.decode_splitkv.bench_decode --out DIR [--sweep] [--quick]

bf16, Hq 32, Hk 8, D 128, causal, ``seqused_k = Lk`` for every sequence; pages 16 and 128; q 1 and 4.
Times: ``triton.testing.do_bench`` (eager, L2 flushed) and ``do_bench_cudagraph`` (graph replay), medians
in us, with input sets rotated so repeated runs do not hit L2; TB/s counts the K and V bytes read
(``2 * B * Lk * Hk * D * 2``). ATREX runs through the public API forced to ``nvidia.decode_splitkv``.
Each configuration is checked against the core reference first. ``--sweep`` also times a few
(BLOCK_N, num_warps, num_stages) x split choices per shape, passed to ``launch.decode``: this is the tool
for retuning ``launch.tile_config`` / ``CTAS_PER_SM``; ``atrex bench run flash_attn --match decode/ --graph``
records the default launch's numbers in the benchmark history (without B = 1, Lk = 131072).
Writes ``DIR/bench_decode.json`` and ``DIR/bench_decode.md``.
"""

import argparse
import json
import os

import torch

MATRIX = ((1, 8192), (1, 32768), (1, 131072), (8, 8192), (8, 32768), (32, 4096), (64, 4096), (64, 16384),
          (128, 2048), (256, 1024))
PAGES = (16, 128)
QS = (1, 4)
HQ, HK, D = 32, 8, 128
SWEEP_CFGS = ((64, 4, 2), (64, 4, 3), (128, 4, 2), (128, 8, 2), (32, 4, 3))
L2_BYTES = 64 << 20


def _sets(b, lk, page, q):
    from atrex_nvidia.flash_attn.bench_fa4 import _kw

    kv_bytes = 2 * b * lk * HK * D * 2
    n = max(1, min(4, -(-3 * L2_BYTES // kv_bytes)))
    return [_kw([q] * b, [lk] * b, hq=HQ, hk=HK, d=D, page=page, causal=True, seed=s) for s in range(n)], kv_bytes


def _time(fn):
    import triton.testing as tt

    fn()
    torch.cuda.synchronize()
    return tt.do_bench(fn, return_mode="median") * 1e3, tt.do_bench_cudagraph(fn, return_mode="median") * 1e3


def _launcher(kw, cfg, splits):
    """The launcher called directly with a tile configuration and split count (the sweep's alternatives)."""
    from atrex.api.flash_attn import normalize_flash_attn_call

    from . import launch

    call = normalize_flash_attn_call(**dict(kw, out=None))
    out = torch.empty((call.total_q, call.num_heads_q, call.head_dim_v), dtype=call.out_dtype, device=call.device)
    return lambda: launch.decode(call, out, cfg, splits)


def _ref_ok(kw, out) -> str:
    from atrex.api.flash_attn import normalize_flash_attn_call
    from atrex.reference.flash_attn import run as ref_run

    call = normalize_flash_attn_call(**dict(kw, out=None))
    ref = torch.empty_like(out)
    ref_run(call, ref)
    err = (out.float() - ref.float()).abs().max().item()
    return f"ok ({err:.1e})" if err <= 1.5e-2 + 1e-2 * ref.float().abs().max().item() else f"FAIL ({err:.2e})"


def _write(out_dir, rows, meta) -> str:
    """Writes bench_decode.json / .md (after every row, so a timed-out run keeps what it measured)."""
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "bench_decode.json"), "w") as f:
        json.dump(dict(meta=meta, rows=rows), f, indent=1)
    md = [f"# nvidia.decode_splitkv vs FA4 direct (num_splits=1): {meta}", "",
          "bf16, Hq 32 / Hk 8, D 128, causal; us are CUDA-graph replay medians; TB/s = K+V bytes / time", "",
          "| B | Lk | page | q | splits | ATREX us | ATREX TB/s | FA4 us | FA4 TB/s | FA4/ATREX | check | best sweep |",
          "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        fa = (f"{r['fa4_graph_us']:.1f} | {r['fa4_tbps']:.2f} | {r['fa4_graph_us'] / r['atrex_graph_us']:.2f}x"
              if "fa4_graph_us" in r else "- | - | -")
        best = r.get("sweep", [{}])[0]
        best = f"{best['cfg']} s={best['splits']}: {best['graph_us']:.1f}" if best else "-"
        md.append(f"| {r['B']} | {r['Lk']} | {r['page']} | {r['q']} | {r['plan']['splits']} | "
                  f"{r['atrex_graph_us']:.1f} | {r['atrex_tbps']:.2f} | {fa} | {r['check']} | {best} |")
    with open(os.path.join(out_dir, "bench_decode.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    return "\n".join(md)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--sweep", action="store_true", help="also try a few tile/split configurations per shape")
    ap.add_argument("--quick", action="store_true", help="first three shapes only")
    ap.add_argument("--shapes", default="", help="comma list of BxLk (e.g. 1x8192,32x4096); default all")
    a = ap.parse_args(argv)
    if not torch.cuda.is_available():
        raise SystemExit("bench_decode needs a CUDA device")
    os.environ["ATREX_IMPL_FLASH_ATTN_VARLEN"] = "nvidia.decode_splitkv"
    import atrex
    from atrex import env
    from atrex.api.flash_attn import normalize_flash_attn_call
    from atrex_nvidia.flash_attn.bench_fa4 import _fa4_direct, _rotating, _versions

    from . import launch

    env.reload()
    try:
        import flash_attn.cute  # noqa: F401
        have_fa4 = True
    except Exception:
        have_fa4 = False
    rows = []
    meta = _versions()
    matrix = MATRIX[:3] if a.quick else MATRIX
    if a.shapes:
        matrix = [tuple(int(x) for x in sh.split("x")) for sh in a.shapes.split(",")]
    for b, lk in matrix:
        for page in PAGES:
            for q in QS:
                sets, nbytes = _sets(b, lk, page, q)
                call = normalize_flash_attn_call(**sets[0])
                row = dict(B=b, Lk=lk, page=page, q=q, plan=launch.plan(call))
                out = atrex.flash_attn_varlen_func(**sets[0])
                row["check"] = _ref_ok(sets[0], out)
                t, tg = _time(_rotating([lambda kw=kw: atrex.flash_attn_varlen_func(**kw) for kw in sets]))
                row.update(atrex_us=t, atrex_graph_us=tg, atrex_tbps=nbytes / tg / 1e6)
                if have_fa4:
                    t, tg = _time(_rotating([_fa4_direct(kw) for kw in sets]))
                    row.update(fa4_us=t, fa4_graph_us=tg, fa4_tbps=nbytes / tg / 1e6)
                if a.sweep:
                    sweep = []
                    base = row["plan"]["splits"]
                    for cfg in SWEEP_CFGS:
                        for splits in sorted({None, max(1, base // 2), base * 2}, key=lambda s: s or 0):
                            _, tg = _time(_rotating([_launcher(kw, cfg, splits) for kw in sets]))
                            sweep.append(dict(cfg=cfg, splits=splits or base, graph_us=tg))
                    row["sweep"] = sorted(sweep, key=lambda r: r["graph_us"])[:5]
                print(json.dumps(row), flush=True)
                rows.append(row)
                _write(a.out, rows, meta)
                del sets
                torch.cuda.empty_cache()
    print(_write(a.out, rows, meta))


if __name__ == "__main__":
    main()
