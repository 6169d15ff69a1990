"""Benchmark: ATREX SM90 chunked Gated-DeltaNet vs fla-core 0.6 ``chunk_gated_delta_rule``, one run.

    python -m atrex_nvidia.chunk_gdn.sm90.bench_gdn --out DIR [--sweep [--variants 'default,v2*']] [--no-ref]

Cases are PERFORMANCE.md's GDN rows (bf16, K = V = 128, q/k L2 norm in kernel, g fp32 negative
log decay, beta bf16 post-sigmoid, no initial state, final state returned). Each case is first
checked for correctness (ATREX and fla against a float64 token-by-token recurrence on a subset of
value heads, and ATREX against fla on all heads), then timed with ``triton.testing.do_bench``
medians in the order ATREX, fla, fla, ATREX. Writes ``gdn_bench.json`` and ``gdn_bench.md``.
"""

import argparse
import datetime
import json
import os
import platform
import sys

import torch
import triton
from triton.testing import do_bench, do_bench_cudagraph

from . import launch as L
from .launch import gdn_fwd

CASES = [
    # id, T or lens, H, HV
    ("T4096_H16_HV32", 4096, 16, 32),
    ("T8192_H16_HV32", 8192, 16, 32),
    ("T32768_H16_HV32", 32768, 16, 32),
    ("T8192_H32_HV32", 8192, 32, 32),
    ("varlen16x1024_H32_HV32", [1024] * 16, 32, 32),
    # round 17: varlen at the Qwen3-Next heads (GVA: two-head intra programs), not a PERFORMANCE.md row
    ("varlen16x1024_H16_HV32", [1024] * 16, 16, 32),
    # fp16 inputs (round 16: the bf16 kernels; before, the round-1 pair, which the "slow_path" variant forces)
    ("T8192_H16_HV32_fp16", 8192, 16, 32, torch.float16),
    ("varlen16x1024_H32_HV32_fp16", [1024] * 16, 32, 32, torch.float16),
    # round 33: serving shapes (the perf table's serve-* rows): Qwen3-Next at TP 4, one 8k prompt, fixed-length and as
    # vLLM passes it (cu_seqlens of one sequence); TP 2, a mixed-length batch
    ("T8192_H4_HV8", 8192, 4, 8),
    ("varlen1x8192_H4_HV8", [8192], 4, 8),
    ("varlen1x8192_H16_HV32", [8192], 16, 32),  # (the T=8192 goal shape as vLLM passes one prompt)
    ("mixed8_H8_HV16", [3500, 2048, 1000, 777, 513, 200, 63, 1], 8, 16),
    # ... and (r121) balanced batches at TP 2 with N x HV at and below the SM count, and the TP 1 mixed batch
    ("varlen8x1024_H8_HV16", [1024] * 8, 8, 16),
    ("varlen4x2048_H8_HV16", [2048] * 4, 8, 16),
    # round 34: the sequence-parallel plan's shapes: TP 4 prompts of 1k-32k tokens, TP 8 (H = 2, HV = 4)
    ("T1024_H4_HV8", 1024, 4, 8),
    ("T2048_H4_HV8", 2048, 4, 8),
    ("T4096_H4_HV8", 4096, 4, 8),
    ("T32768_H4_HV8", 32768, 4, 8),
    ("T8192_H2_HV4", 8192, 2, 4),
    # round 35: TP 8 below 8k, where the rule's 16-chunk floor decides (T = 2048 unsegmented, T = 4096 4 segments)
    ("T2048_H2_HV4", 2048, 2, 4),
    ("T4096_H2_HV4", 4096, 2, 4),
    ("mixed20_H16_HV32", [1, 7, 33, 64, 65, 100, 130, 255, 300, 480, 512, 640, 777, 900, 1024, 1100, 1500, 2048, 3000,
                          3500], 16, 32),
    # round 36: the two mixed batches in another sequence order, the same work. gl_rc / gl_rc2 hand out items (sequence
    # x value head [x V block]) round-robin over min(items, SMs) persistent CTAs, so the order sets the longest CTA's
    # chunk count: 64 -> 56 (mixed8) and 88 -> 70 (mixed20) chunk steps in these orders (a local search over orders;
    # longest-processing-time-first scheduling would reach 55 and 65)
    ("mixed8p_H8_HV16", [1, 200, 2048, 777, 3500, 513, 63, 1000], 8, 16),
    ("mixed20p_H16_HV32", [33, 300, 1, 255, 512, 7, 130, 480, 1024, 900, 640, 100, 1500, 2048, 3000, 3500, 1100, 777, 65,
                           64], 16, 32),
]
K = V = 128


def make(case, device="cuda", seed=0):
    cid, tl_, H, HV, *rest = case
    dt = rest[0] if rest else torch.bfloat16
    lens = tl_ if isinstance(tl_, list) else [tl_]
    T = sum(lens)
    gen = torch.Generator(device=device).manual_seed(seed)
    r = lambda *s: torch.randn(*s, device=device, generator=gen)
    q = r(1, T, H, K).to(dt)
    k = r(1, T, H, K).to(dt)
    v = r(1, T, HV, V).to(dt)
    g = torch.nn.functional.logsigmoid(r(1, T, HV)).float()
    beta = torch.sigmoid(r(1, T, HV)).to(dt)
    cu = None
    if isinstance(tl_, list):
        cu = torch.tensor([0] + list(torch.tensor(lens).cumsum(0).tolist()), dtype=torch.int32, device=device)
    return dict(q=q, k=k, v=v, g=g, beta=beta, cu=cu)


def with_h0(x):
    """``x`` with an fp32 initial state in the state_v_first layout ``[N, HV, V, K]`` (``--h0``: the ``atrex bench``
    perf varlen case's form), the ATREX call taking it and returning its final state in that layout."""
    n = 1 if x["cu"] is None else x["cu"].numel() - 1
    gen = torch.Generator(device=x["q"].device).manual_seed(1)
    h0 = torch.randn(n, x["v"].shape[2], V, K, device=x["q"].device, generator=gen) * 0.1
    return dict(x, h0=h0)


def atrex_call(x):
    h0 = x.get("h0")
    return lambda: gdn_fwd(x["q"], x["k"], x["v"], x["g"], x["beta"], scale=K ** -0.5, initial_state=h0,
                           output_final_state=True, use_qk_l2norm_in_kernel=True, state_v_first=h0 is not None,
                           cu_seqlens=x["cu"])


def fla_call(x):
    from fla.ops.gated_delta_rule import chunk_gated_delta_rule
    cu = None if x["cu"] is None else x["cu"].long()
    return lambda: chunk_gated_delta_rule(x["q"], x["k"], x["v"], x["g"], x["beta"], scale=K ** -0.5,
                                          initial_state=None, output_final_state=True, cu_seqlens=cu,
                                          use_qk_l2norm_in_kernel=True)


def ref_subset(x, heads, max_tokens=None):
    """float64 recurrence (C§2.3) on value heads ``heads`` only; returns (o [T, h, V], ht [N, h, K, V])."""
    q, k, v, g, beta, cu = x["q"][0], x["k"][0], x["v"][0], x["g"][0], x["beta"][0], x["cu"]
    T, H = q.shape[0], q.shape[1]
    HV = v.shape[1]
    G = HV // H

    def nrm(t):
        tf = t.float()
        return (tf * torch.rsqrt((tf * tf).sum(-1, keepdim=True) + 1e-6)).to(t.dtype).double()
    hq = torch.tensor([h // G for h in heads], device=q.device)
    hv = torch.tensor(heads, device=q.device)
    qn, kn = nrm(q)[:, hq], nrm(k)[:, hq]
    vv, gg, bb = v[:, hv].double(), g[:, hv].double(), beta[:, hv].double()
    bounds = [0, T] if cu is None else cu.tolist()
    o = torch.zeros(T, len(heads), V, dtype=torch.float64, device=q.device)
    hts = []
    for s, e in zip(bounds[:-1], bounds[1:]):
        S = torch.zeros(len(heads), K, V, dtype=torch.float64, device=q.device)
        for t in range(s, e):
            S = S * torch.exp(gg[t])[:, None, None]
            u = bb[t][:, None] * (vv[t] - torch.einsum("hkv,hk->hv", S, kn[t]))
            S = S + kn[t][:, :, None] * u[:, None, :]
            o[t] = (K ** -0.5) * torch.einsum("hkv,hk->hv", S, qn[t])
        hts.append(S)
    return o, torch.stack(hts)


def rrmse(ref, x):
    return ((ref.double() - x.double()).norm() / ref.double().norm()).item()


def check(case, x, have_fla, ref_heads):
    oa, ha = atrex_call(x)()
    res = {}
    if have_fla:
        of, hf = fla_call(x)()
        res["atrex_vs_fla_o"] = rrmse(of, oa)
        res["atrex_vs_fla_ht"] = rrmse(hf, ha)
    if ref_heads:
        ro, rh = ref_subset(x, ref_heads)
        res["atrex_vs_ref_o"] = rrmse(ro, oa[0][:, ref_heads])
        res["atrex_vs_ref_ht"] = rrmse(rh, ha[:, ref_heads])
        if have_fla:
            res["fla_vs_ref_o"] = rrmse(ro, of[0][:, ref_heads])
            res["fla_vs_ref_ht"] = rrmse(rh, hf[:, ref_heads])
    return res


def bench_pair(fa, fb, rep=200):
    ta1 = do_bench(fa, warmup=25, rep=rep, return_mode="median")
    tb1 = do_bench(fb, warmup=25, rep=rep, return_mode="median") if fb else None
    tb2 = do_bench(fb, warmup=25, rep=rep, return_mode="median") if fb else None
    ta2 = do_bench(fa, warmup=25, rep=rep, return_mode="median")
    return (ta1 + ta2) / 2, ((tb1 + tb2) / 2 if fb else None)


def kernel_breakdown(x):
    import torch.profiler as tp
    f = atrex_call(x)
    f()
    torch.cuda.synchronize()
    with tp.profile(activities=[tp.ProfilerActivity.CUDA]) as prof:
        for _ in range(5):
            f()
        torch.cuda.synchronize()
    out = {}
    for e in prof.key_averages():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            tot = getattr(e, "device_time_total", None)
            if tot is None:
                tot = getattr(e, "cuda_time_total", 0.0)
            out[e.key] = dict(ms_per_fwd=tot / 5 / 1000.0, launches_per_fwd=e.count / 5)
    return out


VARIANTS = [
    # name, launch overrides (state (BV, warps, stages), intra (warps, stages, product inverse), WY form)
    ("default", {}),  # intra v3 (Newton) + state v2 with prefetch since 2026-12-02 round 4
    ("v1_pair", dict(intra_impl="v1", state_impl="v1", prefetch=False)),  # the earlier default
    ("state16x4", dict(state=(16, 4, 2))),
    ("state32x4", dict(state=(32, 4, 2))),
    ("state64x4", dict(state=(64, 4, 2))),
    ("state32x8", dict(state=(32, 8, 2))),
    ("state64x8", dict(state=(64, 8, 2))),
    ("intra8w", dict(intra=(8, 2, True))),
    ("intra2w", dict(intra=(2, 2, True))),
    ("intra_subst", dict(intra=(4, 2, False))),
    ("wy_state16", dict(wy=True, state=(16, 4, 2))),
    ("wy_state32", dict(wy=True, state=(32, 4, 2))),
    ("wy_state64", dict(wy=True, state=(64, 4, 2))),
    ("state32x4s3", dict(state=(32, 4, 3))),
    ("state64x8s3", dict(state=(64, 8, 3))),
    ("state128x8", dict(state=(128, 8, 2))),
    ("intra8w_s3", dict(intra=(8, 3, True))),
    ("intra8w_state64x8", dict(intra=(8, 2, True), state=(64, 8, 2))),
    ("intra8w_wy_state32", dict(intra=(8, 2, True), wy=True, state=(32, 4, 2))),
    ("intra8w_wy_state64x8", dict(intra=(8, 2, True), wy=True, state=(64, 8, 2))),
    # intra v2: grid over (chunk, value head), one Q K^T dot, UT inverse by recursive doubling with batched
    # dots (fp32 dot precision ieee or tf32x3; plain tf32 is NOT offered: on correlated keys it gave 0.16-0.42
    # rrmse in the CPU emulation); state kernel unchanged (default config)
    ("intra_v2", dict(intra_impl="v2")),
    ("intra_v2_8w", dict(intra_impl="v2", intra=(8, 2, True))),
    ("intra_v2_2w", dict(intra_impl="v2", intra=(2, 2, True))),
    ("intra_v2_tf32x3", dict(intra_impl="v2", prec="tf32x3")),
    # state v2: per-row factors precomputed by the intra kernel (no strided beta load / exp / reduction in the
    # loop); _pf: v block and factors loaded one chunk ahead by hand instead of by Triton's pipeliner
    ("v2", dict(state_impl="v2")),
    ("v2_pf", dict(state_impl="v2", prefetch=True)),
    ("v2_state32x4s3", dict(state_impl="v2", state=(32, 4, 3))),
    ("v2_state16x4", dict(state_impl="v2", state=(16, 4, 2))),
    ("v2_pf_s3", dict(state_impl="v2", prefetch=True, state=(32, 4, 3))),
    ("v2_pf_64x4", dict(state_impl="v2", prefetch=True, state=(64, 4, 2))),
    ("i2_v2_pf", dict(intra_impl="v2", state_impl="v2", prefetch=True)),
    ("i2_8w_v2_pf", dict(intra_impl="v2", intra=(8, 2, True), state_impl="v2", prefetch=True)),
    ("i2_2w_v2_pf", dict(intra_impl="v2", intra=(2, 2, True), state_impl="v2", prefetch=True)),
    ("i2_s1_v2_pf", dict(intra_impl="v2", intra=(4, 1, True), state_impl="v2", prefetch=True)),
    ("i2tf_v2_pf", dict(intra_impl="v2", prec="tf32x3", state_impl="v2", prefetch=True)),
    # intra v3: whole-tile K K^T and recursive block merges (fp16 dots since round 9; _nn / i3_newton: bf16 dots
    # without / with the Newton refinement);
    # state v2 with prefetch (default configuration unless given)
    ("i3", dict(intra_impl="v3")),
    ("i3_nn", dict(intra_impl="v3", newton=False, inv_fp16=False)),
    ("i3_8w", dict(intra_impl="v3", intra=(8, 2, True))),
    ("i3_st32x8s3", dict(intra_impl="v3", state=(32, 8, 3))),
    ("i3_st16x4s2", dict(intra_impl="v3", state=(16, 4, 2))),
    ("i3_st64x8s2", dict(intra_impl="v3", state=(64, 8, 2))),
    ("i3_r168", dict(intra_impl="v3", maxnreg=168)),
    ("i3_r128", dict(intra_impl="v3", maxnreg=128)),
    ("i3nn_r168", dict(intra_impl="v3", newton=False, maxnreg=168, inv_fp16=False)),
    ("i3nn_r128", dict(intra_impl="v3", newton=False, maxnreg=128, inv_fp16=False)),
    # round 5: state v2's math with TMA operands (descriptors built in the kernel unless _hd: on the host)
    ("tma", dict(state_impl="tma")),
    ("tma_hd", dict(state_impl="tma", tma_device_desc=False)),
    ("tma_r168", dict(state_impl="tma", maxnreg=168)),
    ("tma_s2", dict(state_impl="tma", state=(32, 4, 2))),
    ("tma_s4", dict(state_impl="tma", state=(32, 4, 4))),
    # round 6: the persistent tma kernel (descriptors once per CTA; meant for many programs, e.g. varlen)
    ("tma_p", dict(state_impl="tma", persistent=True)),
    ("tma_p_s3", dict(state_impl="tma", persistent=True, state=(32, 4, 3))),
    # round 9: warp-specialised Gluon state pass (chain / output / TMA-loader partitions)
    ("gl_ws", dict(state_impl="gl_ws")),
    ("gl_ws_s2", dict(state_impl="gl_ws", state=(32, 4, 2))),
    ("gl_ws_o96", dict(state_impl="gl_ws", ws_out_regs=96)),
    # round 13: gl_ws with the row factors stored into the load slots by the loader (GL_WS_FAC_SMEM, default since r38)
    ("gl_ws_fac", dict(state_impl="gl_ws", ws_fac_smem=True)),
    ("ws_fac", dict(ws_fac_smem=True)),
    ("ws_nofac", dict(ws_fac_smem=False)),
    # round 10: register-chain Gluon state pass (transposed state, BV = 64; persistent unless _np; 3 load slots unless
    # _s2)
    ("gl_rc", dict(state_impl="gl_rc")),
    ("gl_rc_s2", dict(state_impl="gl_rc", rc_stages=2)),
    ("gl_ws_64", dict(state_impl="gl_ws", state=(64, 4, 2))),  # round 13 (r39): slower at both perf shapes
    # round 12: the Triton state kernels with X and U as bf16 hi + lo pairs (STATE_SPLIT_XU, the default for calls
    # without in-kernel L2 norm), forced on these L2-norm cases to measure its cost where those kernels run
    ("tma_split", dict(state_impl="tma", split_xu="always")),
    ("v2_split", dict(state_impl="v2", split_xu="always")),
    ("split8_rc", dict(split=True, pieces=8, split_min_t=128, state_impl="gl_rc")),
    ("split4_rc_prio0", dict(split=True, pieces=4, split_min_t=128, state_impl="gl_rc", prio=0)),
    # round 14: the varlen slot map (INTRA_SLOT_MAP, default); i3_r13 is round 13's intra pass (r45 also measured
    # INTRA_V3_EARLY_LOADS, since removed: launch.py)
    ("i3_r13", dict(slot_map=False)),
    ("i3_map", dict(slot_map=True)),
    # round 14: the v3 merges accumulating onto X (INTRA_V3_ACC_MERGE) or subtracting (round 13)
    ("i3_acc", dict(acc_merge=True)),
    ("i3_sub", dict(acc_merge=False)),
    ("i3_acc_gs2", dict(acc_merge="gs2")),
    # round 15 (r50): the accumulating merges with masked products in every intra program, one-head ones included
    # (round 14's Triton 3.6 SASS: no blow-up there); intra varlen 16x1024 0.253 vs 0.255 ms, two-head cases equal
    ("i3_acc_mo", dict(acc_merge=True, mask_out=True)),
    # the operand-scaled round-1 pair for every call: what fp16 inputs took by default until round 16
    ("slow_path", dict(fast=False)),
    # round 17: the gate rows from the separate gates kernel (INTRA_V3_GATES); _sub without the accumulating merges
    # (with them, the two-head Triton 3.6 binary grows from 4264 to 5528 instructions: register copies)
    ("i3_gates", dict(gates=True)),
    ("i3_gates_sub", dict(gates=True, acc_merge=False)),
    ("i3_nogates", dict(gates=False)),
    # round 19: the fp16 inverse's 16x16 diagonal blocks per warp (INTRA_V3_DIAG16); _gs1 / _gs2 for one kind of program
    ("i3_d16", dict(diag16=True)),
    ("i3_merges", dict(diag16=False)),  # the whole-tile merges: the default until round 22
    ("i3_d16_gs1", dict(diag16="gs1")),
    ("i3_d16_gs2", dict(diag16="gs2")),
    # ... with masked products everywhere and one-head programs at 128 registers (four CTAs per SM; Triton 3.6: 96 bytes
    # of stack against 600 without DIAG16), pairs at 168
    ("i3_d16_r128", dict(diag16=True, mask_out=True, maxnreg=128, gs2_maxnreg=168)),
    # round 19: the packed slot map (each varlen slot's token range: one load level before the tile loads), alone and
    # with the 128-register DIAG16 configuration
    ("i3_map_packed", dict(slot_map="packed")),
    # ... and one value head per program with GVA too (no q / k sharing, four CTAs per SM at 128 registers; Triton 3.6:
    # 112 bytes of stack for T=8192/16/32's programs; round 12 measured this form without DIAG16 at 0.523 ms for
    # T=32768/16/32 against 0.417 for the pairs)
    ("i3_d16_gs1_r128", dict(diag16=True, mask_out=True, maxnreg=128, gva_share=1)),
    ("i3_d16_r128_packed", dict(diag16=True, mask_out=True, maxnreg=128, gs2_maxnreg=168, slot_map="packed")),
    # round 20: the whole call as one persistent Gluon launch (FUSED_RC: gl_rc's chain and output partitions plus an
    # aux partition forming the intra operands in shared memory); _a200 / _a160: 200 / 160 registers per aux thread
    # (the chain gets 200 / 240 of the three warp groups' 3 x 168)
    ("fused", dict(fused=True)),
    ("fused_a200", dict(fused=True, fused_aux_regs=200)),
    ("fused_a160", dict(fused=True, fused_aux_regs=160)),
    # ... with the aux partition's diagonal 16x16 blocks per warp (FUSED_DIAG16: mma.sync, four staged dots of ten)
    ("fused_d16", dict(fused=True, fused_diag16=True)),
    # ... with 3 load slots (the aux partition up to two chunks ahead of the chain; at K = 128 they fit since the bf16
    # fallback's operands reuse the fp16 ones' shared memory)
    ("fused_s3", dict(fused=True, fused_stages=3)),
    ("fused_d16_s3", dict(fused=True, fused_diag16=True, fused_stages=3)),
    # round 24: gl_rc's output partition normalises q and forms Aqk (GL_RC_QSIDE); the intra kernel reads no q
    ("rc_qside", dict(rc_qside=True)),
    ("rc_noqside", dict(rc_qside=False)),  # the default until round 24
    # ... with 152 (the default since r83) / 104 registers per output-partition thread and with 2 load slots
    ("rc_qside_o152", dict(rc_qside=True, rc_out_regs=152)),
    ("rc_qside_o104", dict(rc_qside=True, rc_out_regs=104)),
    ("rc_qside_s2", dict(rc_qside=True, rc_stages=2)),
    ("rc_qside_o128", dict(rc_qside=True, rc_out_regs=128)),  # round 24's first form
    # round 25: q normalised into registers in gl_rc's QSIDE step; GL_RC_QSIDE for gl_ws (few programs)
    ("rc_qreg", dict(rc_qreg=True)),
    ("ws_qside", dict(ws_qside=True)),
    ("ws_qside_o128", dict(ws_qside=True, ws_qside_out_regs=128)),
    ("ws_qside_o184", dict(ws_qside=True, ws_qside_out_regs=184)),
    ("rc_qside_slot", dict(rc_qside=True, rc_qreg=False)),  # round 24's default (q normalised in its load slot)
    ("rc_qreg_o168", dict(rc_qreg=True, rc_out_regs=168)),
    ("rc_qreg_o184", dict(rc_qreg=True, rc_out_regs=184)),
    ("rc_qreg_o136", dict(rc_qreg=True, rc_out_regs=136)),
    ("rc_qreg_o152", dict(rc_qreg=True, rc_out_regs=152)),
    ("rc_qreg_o200", dict(rc_qreg=True, rc_out_regs=200)),
    ("rc_qreg_o216", dict(rc_qreg=True, rc_out_regs=216)),
    ("rc_qreg_o232", dict(rc_qreg=True, rc_out_regs=232)),
    ("rc_slot_o184", dict(rc_qside=True, rc_qreg=False, rc_out_regs=184)),
    # gl_ws's output partition at more registers (GL_WS_OUT_REGS - 16 with its factor rows in the slots: 112 by default)
    # round 25: the one-head intra programs with QSIDE (no q tile) at a 128-register cap: four CTAs per SM
    ("i3q_r128", dict(qside_maxnreg=128)),
    ("i3q_r128_mo", dict(qside_maxnreg=128, mask_out=True)),
    ("ws_o160", dict(ws_out_regs=160)),
    ("ws_o200", dict(ws_out_regs=200)),
    # round 26: gl_rc's output partition (one chain per CTA: GL_RC_TWO_CHAINS off) with GL_RC_QSCALE, GL_RC_EARLY_FREE,
    # GL_RC_OUT_TMA (the default since r91), without each, without all three (round 25's default), at other register
    # counts; gl_rc2 (two chains per CTA, the varlen default since r91) at other register counts
    ("rc1", dict(rc_two_chains=False)),
    ("rc_r25", dict(rc_two_chains=False, rc_qscale=False, rc_early_free=False, rc_out_tma=False)),
    ("rc_no_qscale", dict(rc_two_chains=False, rc_qscale=False)),
    ("rc_no_early", dict(rc_two_chains=False, rc_early_free=False)),
    ("rc_no_out_tma", dict(rc_two_chains=False, rc_out_tma=False)),
    ("rc_no_qside", dict(rc_qside=False)),  # (round 23's gl_rc: the intra kernel forms the normalised q and Aqk)
    ("rc_qnorm_mma", dict(rc_two_chains=False, rc_qnorm_mma=True)),
    ("ws_qscale", dict(ws_qside=True, ws_qscale=True)),  # (gl_ws: T=8192 and T=32768 at H = 16, HV = 32)
    ("ws_qscale_mma", dict(ws_qside=True, ws_qscale=True, ws_qnorm_mma=True)),
    ("ws_qscale_o128", dict(ws_qside=True, ws_qscale=True, ws_qside_out_regs=128)),
    ("rc26_late_fac", dict(rc_two_chains=False, rc_late_factors=True)),
    ("rc2", dict(rc_two_chains=True)),  # (gl_rc2: two chains per CTA)
    ("rc2_mma", dict(rc_two_chains=True, rc_qnorm_mma=True)),
    ("rc2_o136", dict(rc_two_chains=True, rc2_out_regs=136, rc2_chain_regs=176)),
    ("rc2_pf", dict(rc_two_chains=True, rc_l2_prefetch=True)),  # (round 27: the loaders' L2 prefetch)
    ("rc1_pf", dict(rc_two_chains=False, rc_l2_prefetch=True)),
    ("rc2_mma_pf", dict(rc_two_chains=True, rc_qnorm_mma=True, rc_l2_prefetch=True)),
    ("rc2_remat", dict(rc_two_chains=True, rc_ht_remat=True)),  # (round 27: final-state indices recomputed)
    ("rc2_pf_remat", dict(rc_two_chains=True, rc_l2_prefetch=True, rc_ht_remat=True)),
    # round 28: programmatic dependent launch between the call's kernels (launch.PDL)
    ("pdl", dict(pdl=True)),
    ("pdl_ws_qscale", dict(pdl=True, ws_qside=True, ws_qscale=True)),
    ("rc2_all", dict(pdl=True, rc_two_chains=True, rc_l2_prefetch=True, rc_ht_remat=True, rc_qnorm_mma=True)),
    ("book", dict(gates_book=True)),  # (round 28: the gates kernel forms the chunk offsets and the slot map)
    ("no_pdl", dict(pdl=False)),
    # round 29: the initial-state block prefetched into L2 before the chains load it (with --h0; see launch.py)
    ("h0pf0", dict(rc_h0_prefetch=0)),  # (round 30: mode 1 is the default)
    ("h0pf1", dict(rc_h0_prefetch=1)),
    ("h0pf2", dict(rc_h0_prefetch=2)),
    ("rc26_o168", dict(rc_two_chains=False, rc_out_regs=168)),
    ("rc26_o184", dict(rc_two_chains=False, rc_out_regs=184)),
    ("rc26_o216", dict(rc_two_chains=False, rc_out_regs=216)),
    # round 32: gl_ws with two output partitions (GL_WS_OUT2; T=8192 and T=32768 at H = 16, HV = 32), with the
    # QSIDE output partition's registers (152: the chain gets 160; 136: 192) and without the QSIDE form
    ("ws_out1", dict(ws_out2=False)),  # (round 31's gl_ws)
    ("ws_out2", dict(ws_out2=True)),  # (GL_WS_OUT2_REGS: 136 since r114)
    ("ws_out2_o152", dict(ws_out2=True, ws_out2_regs=152)),
    ("ws_out2_o128", dict(ws_out2=True, ws_out2_regs=128)),
    ("ws_out2_o120", dict(ws_out2=True, ws_out2_regs=120)),
    ("ws_out2_noqside", dict(ws_out2=True, ws_qside=False)),
    # round 33 (serving shapes: few (sequence, head) programs, most SMs idle in the state pass): the split state pass
    # (fixed length only: pieces pipelined over two streams, so that the next piece's intra kernel runs beside this
    # piece's state pass) with the default state kernel choice
    ("split4", dict(split=True, pieces=4, split_min_t=128)),
    ("split8", dict(split=True, pieces=8, split_min_t=128)),
    # ... and gl_rc2 for every many-program call whatever its (sequence, value head) item count (rounds 27-32)
    ("rc2_any_items", dict(rc2_items_per_sm=0)),
    # ... and a one-sequence varlen call on the varlen plan (ONE_SEQUENCE_FIXED off: rounds 1-32)
    ("one_seq_varlen", dict(one_seq_fixed=False)),
    # round 34: the single-chain state pass where the default takes the sequence-parallel one (SEQ_PARALLEL off), and
    # the sequence-parallel plan with at least 8 chunks a segment, or with the segment pass's column block at 64
    ("no_seqpar", dict(seq_parallel=False)),
    ("seqpar_c4", dict(seq_par_min_chunks=4)),  # (segments of 256 tokens and more: T >= 1024 at TP 4)
    ("seqpar_bv32", dict(seq_par_bv=32)),  # (r127's segment pass: 256 CTAs at TP 4, two per SM)
    ("scan_ieee", dict(seq_par_scan_prec="ieee")),
    ("scan_bv32", dict(seq_par_scan_bv=32)),
    ("scan_bv16", dict(seq_par_scan_bv=16)),  # (round 34's default; round 35: 8)
    ("seqpar_max8", dict(seq_par_max_segs=8)),
    # round 36: the persistent varlen state pass's items in the longest-first order (GL_RC_SCHEDULE, off)
    ("sched", dict(rc_schedule=True)),
    ("sched_snake", dict(rc_schedule="snake")),  # (the same sort, no per-round load sort)
    ("sched_cta", dict(rc_schedule="cta")),  # (round 37: the snake order formed in the state kernel's prologue)
]

# launch-module attributes a variant may set (key in VARIANTS -> attribute of launch.py)
_HOOKS = dict(state="STATE_CFG_OVERRIDE", intra="INTRA_CFG_OVERRIDE", wy="USE_WY", intra_impl="INTRA_IMPL",
              prec="INTRA_V2_PREC", state_impl="STATE_IMPL", prefetch="STATE_PREFETCH",
              newton="INTRA_V3_NEWTON", maxnreg="INTRA_V3_MAXNREG", tma_device_desc="TMA_DEVICE_DESC", split="SPLIT_STATE_PASS",
              pieces="SPLIT_PIECES", prio="SPLIT_SIDE_PRIORITY", split_min_t="SPLIT_MIN_T",
              persistent="STATE_TMA_PERSISTENT", ws_out_regs="GL_WS_OUT_REGS",
              inv_fp16="INTRA_V3_INV_FP16", fp16_fallback="INTRA_V3_FP16_FALLBACK", rc_stages="GL_RC_STAGES",
              rc_persistent="GL_RC_PERSISTENT", fold_qk_norm="FOLD_QK_NORM", gva_share="INTRA_V3_GVA_SHARE", diag16="INTRA_V3_DIAG16",
              fast_exp="INTRA_V3_FAST_EXP", gs2_maxnreg="INTRA_V3_GS2_MAXNREG", mask_out="INTRA_V3_MASK_OUT",
              split_xu="STATE_SPLIT_XU", ws_fac_smem="GL_WS_FAC_SMEM", slot_map="INTRA_SLOT_MAP",
              acc_merge="INTRA_V3_ACC_MERGE", fast="FAST_PATH", gates="INTRA_V3_GATES", fused="FUSED_RC",
              fused_stages="FUSED_STAGES", fused_aux_regs="FUSED_AUX_REGS", fused_out_regs="FUSED_OUT_REGS",
              fused_diag16="FUSED_DIAG16", rc_qside="GL_RC_QSIDE", rc_out_regs="GL_RC_OUT_REGS",
              rc_qreg="GL_RC_QREG", ws_qside="GL_WS_QSIDE", ws_qside_out_regs="GL_WS_QSIDE_OUT_REGS",
              qside_maxnreg="INTRA_V3_QSIDE_MAXNREG", rc_qscale="GL_RC_QSCALE", rc_early_free="GL_RC_EARLY_FREE",
              rc_out_tma="GL_RC_OUT_TMA", rc_qnorm_mma="GL_RC_QNORM_MMA", ws_qnorm_mma="GL_WS_QNORM_MMA", ws_qscale="GL_WS_QSCALE",
              rc_late_factors="GL_RC_LATE_FACTORS", rc_two_chains="GL_RC_TWO_CHAINS",
              rc2_out_regs="GL_RC2_OUT_REGS", rc2_chain_regs="GL_RC2_CHAIN_REGS", rc_l2_prefetch="GL_RC_L2_PREFETCH",
              rc_ht_remat="GL_RC_HT_REMAT", pdl="PDL", gates_book="INTRA_GATES_BOOK", ws_out2="GL_WS_OUT2",
              ws_out2_regs="GL_WS_OUT2_REGS", rc2_items_per_sm="GL_RC2_ITEMS_PER_SM",
              one_seq_fixed="ONE_SEQUENCE_FIXED", seq_parallel="SEQ_PARALLEL", seq_par_min_chunks="SEQ_PAR_MIN_CHUNKS", seq_par_max_segs="SEQ_PAR_MAX_SEGS",
              seq_par_bv="SEQ_PAR_BV", seq_par_scan_prec="SEQ_PAR_SCAN_PREC", seq_par_scan_bv="SEQ_PAR_SCAN_BV",
              rc_h0_prefetch="GL_RC_H0_PREFETCH", rc_schedule="GL_RC_SCHEDULE")


def _select_variants(spec):
    pats = [p for p in spec.split(",") if p]
    if not pats:
        return VARIANTS
    match = lambda n, p: n == p or (p.endswith("*") and n.startswith(p[:-1]))
    unknown = [p for p in pats if not any(match(n, p) for n, _ in VARIANTS)]
    if unknown:  # a renamed variant must not drop out of a sweep unnoticed (round 32's gdn-r114.sh)
        raise ValueError(f"--variants: {', '.join(unknown)} match no VARIANTS name "
                         f"(known: {', '.join(n for n, _ in VARIANTS)})")
    return [(n, ov) for n, ov in VARIANTS if any(match(n, p) for p in pats)]


class _Variant:
    def __init__(self, ov):
        self.ov = ov

    def __enter__(self):
        self.saved = {a: getattr(L, a) for a in _HOOKS.values()}
        for key, val in self.ov.items():
            setattr(L, _HOOKS[key], val)

    def __exit__(self, *exc):
        for a, val in self.saved.items():
            setattr(L, a, val)


def write_report(out, meta, rows, sweeps):
    with open(os.path.join(out, "gdn_bench.json"), "w") as f:
        json.dump(dict(meta=meta, rows=rows, sweeps=sweeps), f, indent=1)
    fmt = lambda v, p="%.3f": "-" if v is None else (p % v)
    lines = [f"# GDN prefill: ATREX sm90 vs fla {meta['fla']}", "",
             ", ".join(f"{k}: {v}" for k, v in meta.items()), "",
             "| case | ATREX ms (default) | fla ms | speedup | o rrmse vs fp64 (ATREX / fla) "
             "| ht rrmse vs fp64 (ATREX / fla) | ATREX vs fla o / ht |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['case']} | {fmt(r['atrex_ms'])} | {fmt(r['fla_ms'])} | {fmt(r['speedup'], '%.2fx')} | "
                     f"{fmt(r.get('atrex_vs_ref_o'), '%.1e')} / {fmt(r.get('fla_vs_ref_o'), '%.1e')} | "
                     f"{fmt(r.get('atrex_vs_ref_ht'), '%.1e')} / {fmt(r.get('fla_vs_ref_ht'), '%.1e')} | "
                     f"{fmt(r.get('atrex_vs_fla_o'), '%.1e')} / {fmt(r.get('atrex_vs_fla_ht'), '%.1e')} |")
    if sweeps:
        lines += ["", "Variant sweep (same run; ms, and rrmse of o vs fla; fla ms of the row above):", "",
                  "| case | variant | ms | speedup vs fla | o rrmse vs fla | ATREX kernels (ms per call) |",
                  "|---|---|---|---|---|---|"]
        for cid, sw in sweeps.items():
            for name, d in sw.items():
                km = d.get("kernels_ms")
                kern = "; ".join(f"{k.replace('atrex_sm90_gdn_', '')} {v['ms_per_fwd']:.3f}"
                                 for k, v in km.items() if "atrex" in k) if isinstance(km, dict) else ""
                lines.append(f"| {cid} | {name} | {fmt(d.get('ms'))} | {fmt(d.get('speedup'), '%.2fx')} | "
                             f"{fmt(d.get('o_vs_fla'), '%.1e')} {d.get('error', '')} | {kern} |")
    md = "\n".join(lines) + "\n"
    with open(os.path.join(out, "gdn_bench.md"), "w") as f:
        f.write(md)
    return md


def main(argv=None):
    import time
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--sweep", action="store_true", help="also time launch variants (see VARIANTS)")
    ap.add_argument("--sweep-cases", default="T8192_H16_HV32,varlen16x1024_H32_HV32")
    ap.add_argument("--ref-heads", default="0,5,31", help="value heads checked against the fp64 recurrence")
    ap.add_argument("--cases", default="", help="comma-separated case ids (default all)")
    ap.add_argument("--deadline", type=float, default=1e9, help="seconds; sweeps stop when exceeded")
    ap.add_argument("--variants", default="", help="comma-separated VARIANTS names or name prefixes ending in '*' "
                    "(default all), e.g. 'default,intra_v2*,v2*'")
    ap.add_argument("--graph", action="store_true", help="time the sweep's variants by CUDA-graph replay "
                    "(triton.testing.do_bench_cudagraph, median; no per-kernel breakdown)")
    ap.add_argument("--h0", action="store_true", help="ATREX calls take an fp32 initial state (state_v_first), as "
                    "the atrex bench varlen perf case does; timing only: requires --no-fla, no correctness check")
    ap.add_argument("--no-fla", action="store_true", help="time ATREX alone (timing-only diagnostics: no fla import, "
                    "autotune or speedup column)")
    a = ap.parse_args(argv)
    if a.h0 and not a.no_fla:
        ap.error("--h0 is timing only: pass --no-fla with it")
    try:
        _select_variants(a.variants)  # before any device work
    except ValueError as e:
        ap.error(str(e))
    t_start = time.time()
    os.makedirs(a.out, exist_ok=True)
    try:
        if a.no_fla:
            raise ImportError("--no-fla")
        import fla
        from fla.ops.gated_delta_rule import chunk_gated_delta_rule  # noqa: F401
        have_fla = True
        fla_version = getattr(fla, "__version__", "?")
    except Exception as e:
        have_fla, fla_version = False, f"unavailable ({type(e).__name__}: {e})"
    ref_heads = [int(h) for h in a.ref_heads.split(",") if h != ""]
    meta = dict(device=torch.cuda.get_device_name(0), capability=list(torch.cuda.get_device_capability(0)),
                torch=torch.__version__, cuda=torch.version.cuda, triton=triton.__version__, fla=fla_version,
                python=platform.python_version(), date=datetime.datetime.now().isoformat(timespec="seconds"),
                timing="triton.testing.do_bench median (ms), order ATREX fla fla ATREX, no L2 flush "
                       "(each case's inputs exceed the 50 MB L2)",
                default_cfg=dict(state_few=L._STATE_CFG_FEW, state_many=L._STATE_CFG_MANY, intra=L._INTRA_CFG,
                                 wy=L.USE_WY, intra_impl=L.INTRA_IMPL, state_impl=L.STATE_IMPL,
                                 intra_v2_prec=L.INTRA_V2_PREC, intra_v3_newton=L.INTRA_V3_NEWTON,
                                 state_prefetch=L.STATE_PREFETCH,
                                 state_v2_few=L._STATE_V2_FEW_CFG, state_auto_gl_ws=L.STATE_AUTO_GL_WS,
                                 gl_ws_out_regs=L.GL_WS_OUT_REGS, intra_v3_inv_fp16=L.INTRA_V3_INV_FP16,
                                 intra_v3_fp16_fallback=L.INTRA_V3_FP16_FALLBACK,
                                 split=dict(on=L.SPLIT_STATE_PASS, min_t=L.SPLIT_MIN_T, pieces=L.SPLIT_PIECES,
                                            side_priority=L.SPLIT_SIDE_PRIORITY)))
    cases = [c for c in CASES if not a.cases or c[0] in a.cases.split(",")]
    rows, sweeps = [], {}
    inputs = {}
    for case in cases:
        x = make(case)
        row = dict(case=case[0])
        if a.h0:
            x = with_h0(x)
            row["note"] = "--h0: timing only"
        else:
            row.update(check(case, x, have_fla, ref_heads))
        ta, tf = bench_pair(atrex_call(x), fla_call(x) if have_fla else None)
        row["atrex_ms"], row["fla_ms"] = ta, tf
        row["speedup"] = (tf / ta) if tf else None
        n_prog = x["v"].shape[2] * (1 if x["cu"] is None else x["cu"].numel() - 1)
        row["state_cfg"] = list(L._state_cfg(n_prog, V, v2=L.STATE_IMPL in ("v2", "tma")))
        try:
            row["kernels_ms"] = kernel_breakdown(x)
        except Exception as e:
            row["kernels_ms"] = f"{type(e).__name__}: {e}"
        rows.append(row)
        print(json.dumps(row), flush=True)
        write_report(a.out, meta, rows, sweeps)
        if case[0] in a.sweep_cases.split(","):
            inputs[case[0]] = (x, row)
        else:
            del x
    if a.sweep:  # in --sweep-cases order, so that a deadline drops the cases listed last
        for cid in [c for c in a.sweep_cases.split(",") if c in inputs]:
            x, row = inputs[cid]
            of = fla_call(x)()[0] if have_fla else None
            sw = sweeps.setdefault(cid, {})
            for name, ov in _select_variants(a.variants):
                if time.time() - t_start > a.deadline:
                    sw[name] = dict(error="skipped (deadline)")
                    continue
                try:
                    with _Variant(ov):
                        f = atrex_call(x)
                        oa = f()[0]
                        d = dict(o_vs_fla=rrmse(of, oa) if of is not None else None)
                        if a.graph:
                            d["ms"] = do_bench_cudagraph(f, rep=100, return_mode="median")
                            d["timing"] = "graph"
                        else:
                            d["ms"] = do_bench(f, warmup=25, rep=100, return_mode="median")
                        d["speedup"] = row["fla_ms"] / d["ms"] if row["fla_ms"] else None
                        d["kernels_ms"] = {} if a.graph else kernel_breakdown(x)
                except Exception as e:
                    d = dict(error=f"{type(e).__name__}: {str(e)[:300]}")
                sw[name] = d
                print(cid, name, json.dumps(d), flush=True)
                write_report(a.out, meta, rows, sweeps)
    md = write_report(a.out, meta, rows, sweeps)
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
