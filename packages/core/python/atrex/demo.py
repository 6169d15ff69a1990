"""``atrex demo``: every operator on a realistic small shape, checked against float64 oracles."""

from __future__ import annotations

import timeit

import click
import torch

import atrex
from atrex.dispatch.registry import get_registry
from atrex.inputs import attn_inputs, gdn_decode_inputs, gdn_inputs
from atrex.reference.oracle import attention_oracle, gdn_decode_oracle, gdn_oracle, rel_rmse

# Tolerances of the operator contracts (docs/<operator>.md, "Accuracy"): properties of dtype and algorithm.
ATTN_ATOL, ATTN_RTOL, LSE_ATOL = 1.5e-2, 1e-2, 2e-3
GDN_RMSE = 5e-3


def _time_us(fn, device: torch.device) -> float:
    """Median wall time per call over a few autoranged repeats (synchronizing on a GPU)."""

    def call():
        fn()
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    timer = timeit.Timer(call)
    number, _ = timer.autorange()
    runs = sorted(timer.repeat(repeat=5, number=number))
    return runs[len(runs) // 2] / number * 1e6


def _attention(device: torch.device) -> bool:
    # A vLLM mixed batch: two decodes, a chunked-prefill continuation and a fresh prefill.
    # Qwen-like GQA 16q/4kv, d128, page 16 with shuffled block ids, causal, sinks, LSE.
    q_lens, k_lens = [1, 1, 37, 128], [300, 1024, 237, 128]
    kw = attn_inputs(q_lens, k_lens, num_heads_q=16, num_heads_k=4, head_dim=128, dtype=torch.bfloat16,
                     page_size=16, device=device, causal=True, sinks=True, return_lse=True, out=True, seed=1)
    click.echo(f"\n== flash_attn_varlen_func: bf16, B=4 (q {q_lens}, kv {k_lens}), 16q/4kv heads, d128, "
               f"page 16, causal, sinks, LSE on {device}")
    click.echo(str(atrex.explain_flash_attn_varlen_func(**kw)))
    out, lse = atrex.flash_attn_varlen_func(**kw)
    assert out is kw["out"]
    ref_out, ref_lse = attention_oracle(
        kw["q"], kw["k"], kw["v"], kw["cu_seqlens_q"], seqused_k=kw["seqused_k"], block_table=kw["block_table"],
        causal=True, s_aux=kw["s_aux"])
    err = (out.double().cpu() - ref_out).abs()
    tol = ATTN_ATOL + ATTN_RTOL * ref_out.abs()
    lse_err = (lse.double().cpu() - ref_lse).abs().max().item()
    ok = bool((err <= tol).all()) and lse_err <= LSE_ATOL
    t = _time_us(lambda: atrex.flash_attn_varlen_func(**kw), device)
    click.echo(f"max |out - oracle| = {err.max().item():.3e} (bound {ATTN_ATOL} + {ATTN_RTOL}*|ref|), "
               f"max |lse - oracle| = {lse_err:.3e} (bound {LSE_ATOL})")
    click.echo(f"time per call: {t:.1f} us   => {'MATCHES the float64 oracle' if ok else 'MISMATCH'}")
    return ok


def _gdn(device: torch.device) -> bool:
    # Qwen3-Next-like GVA (1 q/k head per 2 value heads), varlen with a length-1 sequence and
    # lengths not divisible by 64, V-first fp32 initial state as vLLM stores it, L2 norm in kernel.
    lens = [100, 1, 257, 154]
    kw = gdn_inputs(lens, num_heads=4, num_v_heads=8, head_k_dim=64, head_v_dim=64, dtype=torch.bfloat16,
                    initial_state="fp32", state_v_first=True, l2norm=True, device=device, seed=2)
    click.echo(f"\n== chunk_gated_delta_rule: bf16, varlen {lens}, H=4, HV=8, K=V=64, l2norm, "
               f"V-first fp32 initial state on {device}")
    click.echo(str(atrex.explain_chunk_gated_delta_rule(**kw)))
    o, final = atrex.chunk_gated_delta_rule(**kw)
    ref_o, ref_s = gdn_oracle(kw["q"], kw["k"], kw["v"], kw["g"], kw["beta"], initial_state=kw["initial_state"],
                              state_v_first=True, cu_seqlens=kw["cu_seqlens"], use_qk_l2norm_in_kernel=True)
    e_o, e_s = rel_rmse(ref_o, o), rel_rmse(ref_s, final)
    ok = e_o <= GDN_RMSE and e_s <= GDN_RMSE
    t = _time_us(lambda: atrex.chunk_gated_delta_rule(**kw), device)
    click.echo(f"relative RMSE vs float64 recurrence: o {e_o:.2e}, final state {e_s:.2e} (bound {GDN_RMSE})")
    click.echo(f"time per call: {t:.1f} us   => {'MATCHES the float64 oracle' if ok else 'MISMATCH'}")
    return ok


def _gdn_decode(device: torch.device) -> bool:
    # vLLM's decode / MTP step: packed sequences of 1-3 tokens, slots in a fp32 [P, HV, V, K] pool updated in
    # place, accepted-token offsets, one padded sequence (slot -1).
    lens = [1, 3, 2, 1]
    kw = gdn_decode_inputs(lens, num_heads=4, num_v_heads=8, head_k_dim=64, head_v_dim=64, dtype=torch.bfloat16,
                           mtp=True, padded=1, device=device, seed=3)
    click.echo(f"\n== fused_recurrent_gated_delta_rule: bf16, MTP tokens {lens} (last padded), H=4, HV=8, K=V=64, "
               f"fp32 state pool in place on {device}")
    click.echo(str(atrex.explain_fused_recurrent_gated_delta_rule(**kw)))
    pool0 = kw["initial_state"].clone()
    ref_o, ref_s = gdn_decode_oracle(**dict(kw, initial_state=pool0))
    o, pool = atrex.fused_recurrent_gated_delta_rule(**kw)
    e_o, e_s = rel_rmse(ref_o, o), rel_rmse(ref_s, pool)
    ok = e_o <= GDN_RMSE and e_s <= GDN_RMSE
    kw["initial_state"] = pool0.clone()  # the timed calls update this copy, not the checked one
    t = _time_us(lambda: atrex.fused_recurrent_gated_delta_rule(**kw), device)
    click.echo(f"relative RMSE vs float64 recurrence: o {e_o:.2e}, pool {e_s:.2e} (bound {GDN_RMSE})")
    click.echo(f"time per call: {t:.1f} us   => {'MATCHES the float64 oracle' if ok else 'MISMATCH'}")
    return ok


def _guarded(step, dev) -> bool:
    """Run one operator's demo; an ATREX refusal is shown as such (with its reasons), not as a traceback."""
    try:
        return step(dev)
    except atrex.AtrexNotSupportedError as exc:
        click.echo(f"NOT SUPPORTED on {dev}:\n{exc}")
        if dev.type != "cpu":
            click.echo("(ATREX_ALLOW_REFERENCE=1 lets the torch reference run on this device, slowly)")
        return False


def default_device() -> torch.device:
    """The current GPU when an installed plugin has an implementation for its target, else the CPU (with
    a line saying why), so that the plain command shows the vendor kernels wherever there are some."""
    if not torch.cuda.is_available():
        return torch.device("cpu")
    from atrex.dispatch.target import classify_device

    dev = torch.device("cuda", torch.cuda.current_device())
    target = classify_device(dev)
    reg = get_registry()
    if any(not impl.is_reference for op in ("flash_attn_varlen", "chunk_gated_delta_rule",
                                             "fused_recurrent_gated_delta_rule")
           for impl in reg.candidates(op, target.id)):
        return dev
    click.echo(f"no installed ATREX implementation targets {dev} ({target.id}, {target.name!r}): "
               "running on the CPU (see `atrex env`)")
    return torch.device("cpu")


def run_demo(device) -> bool:
    dev = torch.device(device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise click.UsageError("--device cuda: no CUDA device is visible")
    reg = get_registry()
    click.echo(f"atrex {atrex.__version__}, torch {torch.__version__}; plugins: "
               + (", ".join(f"{p.name}[{p.state}]" for p in reg.plugins) or "none"))
    ok_a = _guarded(_attention, dev)
    ok_g = _guarded(_gdn, dev)
    ok_d = _guarded(_gdn_decode, dev)
    click.echo(f"\nsummary: flash_attn_varlen_func {'OK' if ok_a else 'FAILED'}, "
               f"chunk_gated_delta_rule {'OK' if ok_g else 'FAILED'}, "
               f"fused_recurrent_gated_delta_rule {'OK' if ok_d else 'FAILED'}")
    return ok_a and ok_g and ok_d
