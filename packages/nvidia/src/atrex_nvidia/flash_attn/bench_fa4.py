"""ATREX (``nvidia.fa4``) vs FA4 direct, side by side in one run: prefill device time and host time per call.

    python -m atrex_nvidia.flash_attn.bench_fa4 --out DIR [--quick] [--skip prefill,host]

``atrex bench run flash_attn`` times the same prefill cases (and the paged-decode matrix) into the benchmark
history; this module adds what that does not: ATREX bitwise against FA4 direct and the host-time breakdown.

Device time: ``triton.testing.do_bench`` medians, order A B B A (ATREX, FA4, FA4, ATREX), several
input sets rotated so L2 does not serve repeated runs. FA4 direct is the public
``flash_attn.cute.flash_attn_varlen_func`` with ``num_splits=1`` (SM90 b19 has no split-KV).
Host time: eager tiny call (B=1, 64 keys), ``time.perf_counter`` over many calls without a sync
inside the loop, median of repeats; reported for FA4's public function, FA4's ``_flash_attn_fwd``,
ATREX end to end, ATREX's core (normalize + select) and ``nvidia.fa4``'s ``run()`` alone.
Every benchmarked configuration is checked first (ATREX bitwise equal to FA4 direct; against the
core reference where it fits: max_seqlen_q * max_seqlen_k * Hq <= 2**30). Paged decode shapes are not here: on
sm90 they go to ``nvidia.decode_splitkv`` (``decode_splitkv/bench_decode.py``).
Writes ``DIR/bench_fa4.json`` and ``DIR/bench_fa4.md``.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import statistics
import subprocess
import time
from importlib import metadata

import torch

ROTATE = 3


def _versions() -> dict:
    def v(name):
        try:
            return metadata.version(name)
        except Exception:
            return None

    try:
        driver = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                capture_output=True, text=True, timeout=20).stdout.strip().splitlines()[0]
    except Exception:
        driver = None
    import triton

    return {"device": torch.cuda.get_device_name(), "driver": driver, "torch": torch.__version__,
            "cuda": torch.version.cuda, "triton": triton.__version__, "flash-attn-4": v("flash-attn-4"),
            "nvidia-cutlass-dsl": v("nvidia-cutlass-dsl"), "date": _dt.date.today().isoformat()}


def _kw(q_lens, k_lens, *, hq, hk, d, page, causal, seed):
    """A vLLM-style call generated on the GPU (shuffled block ids when paged)."""
    g = torch.Generator(device="cuda").manual_seed(seed)
    dev, dt = "cuda", torch.bfloat16

    def rnd(*shape):
        return torch.randn(*shape, generator=g, device=dev, dtype=dt)

    def cu(lens):
        return torch.tensor([0, *torch.tensor(list(lens)).cumsum(0).tolist()], dtype=torch.int32, device=dev)

    kw = dict(q=rnd(sum(q_lens), hq, d), cu_seqlens_q=cu(q_lens), max_seqlen_q=max(q_lens),
              max_seqlen_k=max(k_lens), causal=causal)
    if page:
        pages = [-(-n // page) for n in k_lens]
        nb = sum(pages) + 1
        kw["k"], kw["v"] = rnd(nb, page, hk, d), rnd(nb, page, hk, d)
        ids = torch.randperm(nb, generator=g, device=dev).to(torch.int32)
        table = torch.full((len(k_lens), max(pages)), -1, dtype=torch.int32, device=dev)
        pos = 0
        for b, n in enumerate(pages):
            table[b, :n] = ids[pos:pos + n]
            pos += n
        kw["block_table"] = table
        kw["seqused_k"] = torch.tensor(list(k_lens), dtype=torch.int32, device=dev)
    else:
        kw["k"], kw["v"] = rnd(sum(k_lens), hk, d), rnd(sum(k_lens), hk, d)
        kw["cu_seqlens_k"] = cu(k_lens)
    kw["out"] = torch.empty_like(kw["q"])
    return kw


def _fa4_direct(kw):
    from flash_attn.cute import flash_attn_varlen_func as fa

    bt = kw.get("block_table")
    return lambda: fa(kw["q"], kw["k"], kw["v"], cu_seqlens_q=kw["cu_seqlens_q"],
                      cu_seqlens_k=kw.get("cu_seqlens_k"), seqused_k=kw.get("seqused_k"),
                      max_seqlen_q=kw["max_seqlen_q"], max_seqlen_k=kw["max_seqlen_k"], page_table=bt,
                      softmax_scale=kw["q"].shape[-1] ** -0.5, causal=kw["causal"], num_splits=1)


def _atrex(kw):
    import atrex

    return lambda: atrex.flash_attn_varlen_func(**kw)


def _rotating(fns):
    state = [0]

    def f():
        fn = fns[state[0] % len(fns)]
        state[0] += 1
        return fn()

    return f


def _check(kw) -> str:
    """ATREX == FA4 direct bitwise; vs the reference when small enough."""
    import atrex

    out = atrex.flash_attn_varlen_func(**kw)
    fa = _fa4_direct(kw)()
    fa_out = fa[0] if isinstance(fa, tuple) else fa
    status = "bitwise==FA4" if torch.equal(out, fa_out) else "DIFFERS from FA4"
    # the reference materialises [Hq, sq, sk] fp32 score blocks per sequence: skip the biggest ones
    if kw["max_seqlen_q"] * kw["max_seqlen_k"] * kw["q"].shape[1] <= 2 ** 30:
        from atrex.api.flash_attn import normalize_flash_attn_call
        from atrex.reference.flash_attn import run as ref_run

        call = normalize_flash_attn_call(**dict(kw, out=None))
        ref = torch.empty_like(out)
        ref_run(call, ref)
        try:
            torch.testing.assert_close(out.float(), ref.float(), atol=1.5e-2, rtol=1e-2)
            status += ", ref ok"
        except AssertionError as exc:
            status += f", REF FAIL: {str(exc).splitlines()[0]}"
    return status


def _time_pair(kws):
    from triton.testing import do_bench

    a = _rotating([_atrex(k) for k in kws])
    b = _rotating([_fa4_direct(k) for k in kws])
    ta1 = do_bench(a, warmup=25, rep=100, return_mode="median")
    tb1 = do_bench(b, warmup=25, rep=100, return_mode="median")
    tb2 = do_bench(b, warmup=25, rep=100, return_mode="median")
    ta2 = do_bench(a, warmup=25, rep=100, return_mode="median")
    return (ta1 + ta2) / 2, (tb1 + tb2) / 2


PREFILL = [
    ("causal GQA 32q/8kv d128, lens 1000/2000/3000/4096", (1000, 2000, 3000, 4096), 32, 8, 128, True),
    ("2 x 8192, MHA 32 d128, non-causal", (8192, 8192), 32, 32, 128, False),
    ("2 x 8192, MHA 32 d128, causal", (8192, 8192), 32, 32, 128, True),
    ("Qwen3-Next 16q/2kv d256 causal, 8 x 1024", (1024,) * 8, 16, 2, 256, True),
    ("Qwen3-Next 16q/2kv d256 causal, 4 x 4096", (4096,) * 4, 16, 2, 256, True),
    ("Qwen3-Next 16q/2kv d256 causal, 1 x 16384", (16384,), 16, 2, 256, True),
]


def bench_prefill(results, quick):
    for name, lens, hq, hk, d, causal in PREFILL[: 2 if quick else None]:
        kws = [_kw(lens, lens, hq=hq, hk=hk, d=d, page=None, causal=causal, seed=s) for s in range(ROTATE)]
        status = _check(kws[0])
        ta, tb = _time_pair(kws)
        flops = sum(4 * n * n * d * hq for n in lens) * (0.5 if causal else 1.0)
        results.append({"kind": "prefill", "case": name, "check": status, "atrex_ms": ta, "fa4_ms": tb,
                        "ratio_fa4_over_atrex": tb / ta, "atrex_tflops": flops / ta / 1e9})
        print(f"{name:55s} ATREX {ta:.3f} ms  FA4 {tb:.3f} ms  x{tb / ta:.3f}  {status}", flush=True)
        del kws
        torch.cuda.empty_cache()


def _host_us(fn, n=2000, repeats=7):
    for _ in range(50):
        fn()
    torch.cuda.synchronize()
    per = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        per.append((time.perf_counter() - t0) / n * 1e6)
        torch.cuda.synchronize()
    return statistics.median(per)


def bench_host(results):
    from flash_attn.cute.interface import _flash_attn_fwd

    from atrex.api import flash_attn as api
    from atrex.dispatch.registry import get_registry

    out = {}
    for paged in (False, True):
        # paged with 32 query tokens: on sm90 paged calls with max_seqlen_q <= 16 go to nvidia.decode_splitkv
        sq = 32 if paged else 1
        kw = _kw((sq,), (64,), hq=8, hk=2, d=128, page=16 if paged else None, causal=True, seed=0)
        label = f"paged p16 q{sq}" if paged else "non-paged"
        fa_pub = _fa4_direct(kw)
        fa_priv = lambda kw=kw, sq=sq: _flash_attn_fwd(
            q=kw["q"], k=kw["k"], v=kw["v"], cu_seqlens_q=kw["cu_seqlens_q"], cu_seqlens_k=kw.get("cu_seqlens_k"),
            seqused_k=kw.get("seqused_k"), max_seqlen_q=sq, max_seqlen_k=64, page_table=kw.get("block_table"),
            softmax_scale=kw["q"].shape[-1] ** -0.5, causal=True, num_splits=1, out=kw["out"])
        at = _atrex(kw)
        normalize = api.normalize
        reg = get_registry()

        def core_only(kw=kw, normalize=normalize, reg=reg):
            return reg.select("flash_attn_varlen", normalize(**kw))

        call = normalize(**kw)
        impl = reg.select("flash_attn_varlen", call)
        assert impl.id == "nvidia.fa4", impl.id
        run_only = lambda call=call, o=kw["out"], impl=impl: impl.run(call, o)
        check_only = lambda call=call, impl=impl: impl.check(call)
        at()  # warm the specialization
        row = {
            "FA4 public flash_attn_varlen_func": _host_us(fa_pub),
            "FA4 _flash_attn_fwd": _host_us(fa_priv),
            "ATREX flash_attn_varlen_func (total)": _host_us(at),
            "ATREX core normalize+select": _host_us(core_only),
            "nvidia.fa4 check()": _host_us(check_only),
            "nvidia.fa4 run()": _host_us(run_only),
        }
        out[label] = row
        for k, v in row.items():
            print(f"host {label:10s} {k:40s} {v:7.1f} us", flush=True)
    results.append({"kind": "host", "us_per_call": out})


def write(results, meta, out_dir):
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "bench_fa4.json"), "w") as f:
        json.dump({"meta": meta, "results": results}, f, indent=1)
    lines = [f"# nvidia.fa4 vs FA4 direct on {meta['device']}", "",
             ", ".join(f"{k} {v}" for k, v in meta.items()), "",
             "Device time: do_bench medians, order A B B A, 3 rotated input sets; FA4 direct = public "
             "`flash_attn.cute.flash_attn_varlen_func(num_splits=1)`. ratio = FA4 time / ATREX time.", "",
             "| case | ATREX | FA4 direct | ratio | throughput (ATREX) | check |", "|---|---|---|---|---|---|"]
    for r in results:
        if r["kind"] == "prefill":
            lines.append(f"| {r['case']} | {r['atrex_ms']:.3f} ms | {r['fa4_ms']:.3f} ms | "
                         f"{r['ratio_fa4_over_atrex']:.3f} | {r['atrex_tflops']:.0f} TFLOP/s | {r['check']} |")
    for r in results:
        if r["kind"] == "host":
            lines += ["", "Host time per eager call (B=1, 64 keys, 8q/2kv d128; perf_counter, 2000 calls, "
                      "median of 7), us:", "", "| path | " + " | ".join(r["us_per_call"]) + " |",
                      "|---|" + "---|" * len(r["us_per_call"])]
            keys = next(iter(r["us_per_call"].values())).keys()
            for k in keys:
                lines.append(f"| {k} | " + " | ".join(f"{r['us_per_call'][c][k]:.1f}" for c in r["us_per_call"])
                             + " |")
    text = "\n".join(lines) + "\n"
    with open(os.path.join(out_dir, "bench_fa4.md"), "w") as f:
        f.write(text)
    print(text)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True)
    p.add_argument("--quick", action="store_true", help="two prefill rows (smoke test)")
    p.add_argument("--skip", default="", help="comma list of prefill,host to skip")
    a = p.parse_args(argv)
    skip = set(filter(None, a.skip.split(",")))
    meta = _versions()
    results = []
    try:
        if "host" not in skip:
            bench_host(results)
        if "prefill" not in skip:
            bench_prefill(results, a.quick)
    finally:
        write(results, meta, a.out)


if __name__ == "__main__":
    main()
