"""Host overhead of ATREX's validation + dispatch for ``atrex.flash_attn_varlen_func``.

Prints the per-call microseconds of each stage for a small vLLM-style bf16 call (the keywords vLLM's
FlashAttentionImpl passes, ``out`` included), non-paged and paged, on CPU tensors and, when a GPU is
visible, on CUDA tensors. Nothing is launched.

  fast       the memo's fast path (``atrex/api/_fa_fast.fast_call``: a keyword call of a class validated
             before, checked by torch's native TensorGuards plus the per-call rules)
  normalize  ``normalize`` (the full validator plus the ATREX_CHECK_VALUES gate; one ``*args, **kwargs``
             hop more than the operator itself pays)
  detailed   ``normalize_flash_attn_call`` (the full validation, what a call outside the memo pays)
  classify   ``classify_device`` (cached)
  select     ``Registry.select`` (each candidate's ``check`` until one accepts; what a call outside the memo pays)
  can_use    ``can_use_flash_attn_varlen_func``: the public wrapper, i.e. what the operator spends before
             ``impl.run``: the fast path and the implementation the memo entry chose (validation and selection
             in full on the class's first call)

CPU numbers include the value checks that always run on CPU tensors (in ``normalize`` and ``can_use``).
``--fake-sm90`` measures the accelerator's path on CPU tensors: they are classified as an H100 (so selection runs
the SM90 checks: FA4 hands the paged decode to ``nvidia.decode_splitkv``) and the value checks are off, as on an
accelerator without ``ATREX_CHECK_VALUES``; only the CUDA-specific costs (capture query, CUDA device objects) are
missing.

Timing: the stages run round-robin in batches (``--number`` calls) and each reports its best batch,
which keeps a noisy or shared host from inflating one stage more than another; ``--median`` reports
the median batch instead.

Usage: ``uv run python scripts/host_dispatch_bench.py [--inference-mode] [--cpu-only] [--fake-sm90]`` (on the GPU
host: ``STEPS=host bash scripts/gpu-session.sh``).
"""

from __future__ import annotations

import argparse
import statistics
import timeit

import torch

from atrex import env
from atrex.api import _fa_fast
from atrex.api import flash_attn as fa
from atrex.dispatch.registry import get_registry
from atrex.dispatch.target import classify_device
from atrex.inputs import attn_inputs

STAGES = ("fast", "normalize", "detailed", "classify", "select", "can_use")


def vllm_kwargs(device, paged: bool) -> dict:
    """A decode batch of 4 with the keyword set vLLM passes (bf16: the expanded descales are ignored)."""
    kw = attn_inputs([1, 1, 1, 1], [33, 70, 5, 128], num_heads_q=8, num_heads_k=2, head_dim=128,
                     dtype=torch.bfloat16, page_size=16 if paged else None, device=device, causal=True,
                     out=True, seed=0)
    descale = torch.ones(1, 1, dtype=torch.float32, device=device).expand(4, 2)
    kw.update(softmax_scale=128 ** -0.5, window_size=(-1, -1), softcap=0.0, alibi_slopes=None,
              scheduler_metadata=None, fa_version=3, q_descale=descale, k_descale=descale, v_descale=descale,
              num_splits=0, s_aux=None)
    return kw


def time_stages(fns: dict, number: int, rounds: int, median: bool) -> dict:
    timers = {name: timeit.Timer(fn) for name, fn in fns.items()}
    runs: dict = {name: [] for name in fns}
    for _ in range(rounds):
        for name, timer in timers.items():
            runs[name].append(timer.timeit(number) / number * 1e6)
    return {name: (statistics.median(r) if median else min(r)) for name, r in runs.items()}


def bench(device, args) -> None:
    reg = get_registry()
    print(f"\n== {device}, torch {torch.__version__}, grad mode {'on' if torch.is_grad_enabled() else 'off'}"
          f" ({'median' if args.median else 'best'} of {args.rounds} x {args.number} calls)")
    print(f"{'call':<10}" + "".join(f"{s:>11}" for s in STAGES))
    for paged in (False, True):
        kw = vllm_kwargs(device, paged)
        call = fa.normalize(**kw)
        assert call == fa.normalize_flash_attn_call(**kw)
        fa.can_use_flash_attn_varlen_func(**kw)  # (the class's first call: validated in full and remembered)
        hit = _fa_fast.fast_call(kw, reg, env.settings())
        if hit is None:
            print("   (!) this call does not take the memo's fast path")
        else:
            assert hit[0]._replace() == call
        dev = kw["q"].device
        fns = {
            "fast": lambda kw=kw: _fa_fast.fast_call(kw, reg, env.settings()),
            "normalize": lambda kw=kw: fa.normalize(**kw),
            "detailed": lambda kw=kw: fa.normalize_flash_attn_call(**kw),
            "classify": lambda dev=dev: classify_device(dev),
            "select": lambda call=call: reg.select(fa.OP, call),
            "can_use": lambda kw=kw: fa.can_use_flash_attn_varlen_func(**kw),
        }
        res = time_stages(fns, args.number, args.rounds, args.median)
        print(f"{'paged' if paged else 'non-paged':<10}" + "".join(f"{res[s]:>9.2f}us" for s in STAGES))
        print(f"{'':<10}selected {reg.select(fa.OP, call).id} on {call.target.id}")


def fake_sm90() -> None:
    """Classify CPU tensors as an H100 and switch the value checks off (the accelerator's default)."""
    from atrex.dispatch import target

    target._cache[torch.device("cpu")] = target.DeviceTarget("nvidia", "sm90", "NVIDIA H100 80GB HBM3 (fake)",
                                                               (9, 0), "cuda 13.0", 132, False, 0)
    fa.check_attention_values = lambda call: None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--number", type=int, default=500, help="calls per timed batch")
    ap.add_argument("--rounds", type=int, default=200, help="batches per stage (round-robin over the stages)")
    ap.add_argument("--median", action="store_true", help="report the median batch instead of the best")
    ap.add_argument("--cpu-only", action="store_true", help="skip CUDA even when available")
    ap.add_argument("--inference-mode", action="store_true", help="run under torch.inference_mode() (as vLLM)")
    ap.add_argument("--fake-sm90", action="store_true",
                    help="CPU tensors classified as an H100, value checks off (the accelerator's path, on a CPU)")
    args = ap.parse_args()
    if args.fake_sm90:
        fake_sm90()
    devices = [torch.device("cpu")]
    if torch.cuda.is_available() and not args.cpu_only:
        devices.append(torch.device("cuda", torch.cuda.current_device()))
    with torch.inference_mode(args.inference_mode):
        for device in devices:
            bench(device, args)


if __name__ == "__main__":
    main()
