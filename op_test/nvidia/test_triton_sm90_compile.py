"""CPU test: every Triton specialisation ATREX's SM90 launchers would launch compiles for sm90 and fits.

No GPU is needed: in a subprocess, Triton's active driver is replaced by a stand-in that reports an sm90
target, and ``knobs.runtime.jit_cache_hook`` records each specialisation the launchers
(``nvidia.gdn_sm90``, ``nvidia.decode_splitkv``) ask for and returns before any compile or launch. Each
recorded specialisation is then compiled to a cubin for ``GPUTarget("cuda", 90, 32)``, and its static
shared memory is compared with the H100/H200 limit per block (227 KiB).

This catches, on a CPU, the two failures first seen on the H200 on 2026-12-02: a kernel that did not
compile when Triton specialised an int argument equal to 1 into a constexpr (HV == 1), and a
configuration needing 260 KB of shared memory (K = 256 with a 3-stage state kernel). Triton versions
differ in their lowering; the GPU target tests remain the authority.
"""

import json
import os
import textwrap

import pytest

from testlib import run_result_script

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
PATHS = [os.path.join(ROOT, "packages", "core", "python"), os.path.join(ROOT, "packages", "nvidia", "src"),
         os.path.join(HERE, "chunk_gdn"), os.path.join(ROOT, "op_test")]

triton = pytest.importorskip("triton")

_SCRIPT = textwrap.dedent(r'''
    import json, sys
    sys.path[:0] = PATHS
    import torch
    import triton
    from triton import knobs
    from triton.compiler import ASTSource
    from sm90_standin import SM90, record_specialisations

    SMEM_LIMIT = 232448  # bytes of shared memory one block may use on H100 / H200 (227 KiB)
    specs = record_specialisations()

    # ---- nvidia.gdn_sm90: the target-test shapes, for the default kernels and each tested variant
    import _gdn_cases as C
    from atrex_nvidia.chunk_gdn.sm90 import launch as GL

    def gdn(kw, **hooks):
        saved = {a: getattr(GL, a) for a in hooks}
        for a, val in hooks.items():
            setattr(GL, a, val)
        try:
            inp = C.make_inputs(device="cpu", **kw)
            GL.gdn_fwd(inp["q"], inp["k"], inp["v"], inp["g"], inp["beta"], scale=inp["scale"],
                       initial_state=inp["initial_state"], output_final_state=True,
                       use_qk_l2norm_in_kernel=inp["use_qk_l2norm_in_kernel"],
                       state_v_first=inp["state_v_first"], cu_seqlens=inp["cu_seqlens"])
        finally:
            for a, val in saved.items():
                setattr(GL, a, val)

    # every gdn_fwd call below also checks that its call signature (the memo that lets a warm call skip its
    # launch keys) determines those keys: one signature must never map to two different key lists
    from atrex_nvidia.triton_warm import launch_key
    sig_keys, sig_clash = {}, []
    _launch_all = GL._launch_all

    # and FAST_LAUNCH's argument list (round 23) for each launch is the one Triton's own binder forms
    bound_checked, bound_wrong = [0], []

    def same(a, b):
        return a is b or (not isinstance(a, torch.Tensor) and not isinstance(b, torch.Tensor) and type(a) is type(b)
                          and a == b)

    def recording_launch_all(dev, launches, o, ht, sig=None, split=False):
        keys = [launch_key(kern, args, meta) for kern, _, args, meta in launches]
        if sig_keys.setdefault(sig, keys) != keys:
            sig_clash.append(repr(sig)[:300])
        for kern, _, args, meta in launches:
            binder = kern.device_caches[0][4]  # (the stand-in driver's device 0)
            want = tuple(binder(*args, **meta)[0].values())
            got = GL._bound_args(args, meta, GL._param_tail(kern, len(args)))
            bound_checked[0] += 1
            if len(want) != len(got) or not all(same(a, b) for a, b in zip(want, got)):
                bad = [i for i, (a, b) in enumerate(zip(want, got)) if not same(a, b)]
                bound_wrong.append(f"{kern.__name__}: {len(want)} vs {len(got)} arguments, differing at {bad[:5]}")
        return _launch_all(dev, launches, o, ht, sig, split=split)

    GL._launch_all = recording_launch_all
    gdn_cases = dict(C.GPU_CASES)
    for cid in ("T1", "T64", "varlen_0_1", "varlen_i64_noh0", "K60_V100_fp16", "T65_noL2", "hv48_T127",
                "K256_bf16", "K256_varlen", "T130_B2_gva_fp16", "varlen_fp16_noL2_vfirst"):
        gdn(gdn_cases[cid])
    # T = 1 with more batch rows, GVA, an initial state, varlen; T = 1 and 2 at the perf head shapes
    for kw in (dict(B=2, T=1, H=2, HV=4, K=64, h0=torch.float32),
               dict(B=3, T=1, H=16, HV=32, K=128, h0=torch.bfloat16, state_v_first=True),
               dict(T=1, H=2, K=32, cu_seqlens=[0, 1]), dict(T=1, H=16, HV=32, K=128), dict(T=2, H=16, HV=32, K=128)):
        gdn(kw)
        gdn(kw, STATE_IMPL="v2")
    # calls without in-kernel L2 norm: the Triton state kernels with SPLIT_XU (round 12), tma (K = 16) and v2 (T = 1)
    gdn(dict(T=64, H=1, HV=3, K=16, V=32, l2norm=False, h0=torch.bfloat16))
    gdn(dict(T=1, H=2, K=32, l2norm=False))
    # the perf shapes' configurations (few programs: 3-stage state kernel; many: 2 stages), small T
    gdn(dict(T=64, H=16, HV=32, K=128))
    gdn(dict(T=640, H=32, HV=32, K=128, cu_seqlens=[64 * i for i in range(11)]))
    # round 16: fp16 inputs on the fast path (intra v3 with fp16 tiles; gl_ws, gl_rc, tma and v2 with fp16 operands)
    gdn(dict(T=64, H=16, HV=32, K=128, dtype=torch.float16))
    gdn(dict(T=640, H=32, HV=32, K=128, cu_seqlens=[64 * i for i in range(11)], dtype=torch.float16))
    for hooks in (dict(STATE_IMPL="tma"), dict(STATE_IMPL="v2")):
        gdn(dict(T=64, H=16, HV=32, K=128, dtype=torch.float16), **hooks)
    for hooks in C.VARIANT_HOOKS.values():
        gdn(gdn_cases["T64"], **hooks)
    gdn(gdn_cases["varlen_0_1"], USE_WY=True)
    for hooks in (dict(STATE_IMPL="tma"), dict(STATE_IMPL="tma", TMA_DEVICE_DESC=False), dict(STATE_IMPL="gl_ws"),
                  dict(STATE_IMPL="gl_ws", STATE_CFG_OVERRIDE=(64, 4, 2)), dict(STATE_IMPL="gl_rc"),
                  dict(STATE_IMPL="gl_rc", GL_RC_STAGES=2)):
        gdn(dict(T=64, H=16, HV=32, K=128), **hooks)
        gdn(dict(T=640, H=32, HV=32, K=128, cu_seqlens=[64 * i for i in range(11)]), **hooks)
    gdn(dict(T=640, H=2, HV=8, K=128, cu_seqlens=[64 * i for i in range(11)], cu_dtype=torch.int64), STATE_IMPL="gl_rc")
    # round 32: gl_ws with two output partitions (GL_WS_OUT2), with and without the QSIDE output partition, both
    # configurations (32 and 64 columns)
    for hooks in (dict(STATE_IMPL="gl_ws", GL_WS_OUT2=True), dict(STATE_IMPL="gl_ws", GL_WS_OUT2=True, GL_WS_QSIDE=False),
                  dict(STATE_IMPL="gl_ws", GL_WS_OUT2=True, STATE_CFG_OVERRIDE=(64, 4, 2))):
        gdn(dict(T=64, H=16, HV=32, K=128), **hooks)
        gdn(dict(T=640, H=32, HV=32, K=128, cu_seqlens=[64 * i for i in range(11)], h0=torch.float32), **hooks)
    # round 13: gl_ws before its factor rows in the load slots (round 12's binary)
    gdn(dict(T=64, H=16, HV=32, K=128), GL_WS_FAC_SMEM=False)
    gdn(dict(T=640, H=32, HV=32, K=128, cu_seqlens=[64 * i for i in range(11)]), FOLD_QK_NORM=True)  # gl_rc, folded
    gdn(dict(T=256, H=16, HV=32, K=128), FOLD_QK_NORM=True)  # few programs: state v2, folded
    # round 24: the q side in gl_rc's output partition (GL_RC_QSIDE): one- and two-head intra programs, fp16, K = 64
    vl = [64 * i for i in range(11)]
    gdn(dict(T=640, H=32, HV=32, K=128, cu_seqlens=vl), GL_RC_QSIDE=True)
    gdn(dict(T=640, H=32, HV=32, K=128, cu_seqlens=vl, dtype=torch.float16), GL_RC_QSIDE=True)
    gdn(dict(T=256, H=16, HV=32, K=128), GL_RC_QSIDE=True, STATE_IMPL="gl_rc")
    gdn(dict(T=256, H=4, HV=8, K=64), GL_RC_QSIDE=True, STATE_IMPL="gl_rc")
    # round 25: q normalised into registers (GL_RC_QREG) is the default, so the entries above compile it; round 24's
    # slot form (QREG off) here; the q side in gl_ws's output partition (GL_WS_QSIDE) at 32 columns (the goal shapes'
    # few-program configuration), fp16, K = 64, and 64 columns (gl_ws forced, many programs)
    gdn(dict(T=640, H=32, HV=32, K=128, cu_seqlens=vl), GL_RC_QREG=False)
    gdn(dict(T=256, H=4, HV=8, K=64), GL_RC_QREG=False, STATE_IMPL="gl_rc")
    gdn(dict(T=256, H=16, HV=32, K=128), GL_WS_QSIDE=True)
    gdn(dict(T=256, H=16, HV=32, K=128, dtype=torch.float16), GL_WS_QSIDE=True)
    gdn(dict(T=256, H=4, HV=8, K=64), GL_WS_QSIDE=True, STATE_IMPL="gl_ws")
    gdn(dict(T=640, H=32, HV=32, K=128, cu_seqlens=vl), GL_WS_QSIDE=True, STATE_IMPL="gl_ws",
        STATE_CFG_OVERRIDE=(64, 4, 2))
    # round 26: gl_rc's output partition with GL_RC_QSCALE, GL_RC_EARLY_FREE and GL_RC_OUT_TMA (one- and two-head
    # programs, fp16, K = 64), the TMA output store with the normalised q (QSCALE off), and GL_RC_QNORM_MMA
    # (round 26's defaults since r91, with one chain per CTA: GL_RC_TWO_CHAINS off or gl_rc forced)
    r26 = dict(GL_RC_QSCALE=True, GL_RC_EARLY_FREE=True, GL_RC_OUT_TMA=True, STATE_IMPL="gl_rc")
    gdn(dict(T=640, H=32, HV=32, K=128, cu_seqlens=vl), **r26)
    gdn(dict(T=640, H=32, HV=32, K=128, cu_seqlens=vl, dtype=torch.float16), **r26)
    gdn(dict(T=256, H=16, HV=32, K=128), **r26)
    gdn(dict(T=256, H=4, HV=8, K=64), **r26)
    gdn(dict(T=640, H=32, HV=32, K=128, cu_seqlens=vl), GL_RC_QSCALE=False, STATE_IMPL="gl_rc")
    gdn(dict(T=640, H=32, HV=32, K=128, cu_seqlens=vl), GL_RC_QSCALE=False, GL_RC_EARLY_FREE=False,
        GL_RC_OUT_TMA=False, STATE_IMPL="gl_rc")  # (round 25's binary)
    gdn(dict(T=640, H=32, HV=32, K=128, cu_seqlens=vl), GL_RC_QNORM_MMA=True, **r26)
    gdn(dict(T=640, H=32, HV=32, K=128, cu_seqlens=vl), GL_RC_LATE_FACTORS=True, STATE_IMPL="gl_rc")
    # ... and gl_rc2 (GL_RC_TWO_CHAINS, "auto"'s choice at varlen): bf16 and fp16, with QNORM_MMA, K = 64 with V = 128,
    # fixed length (gl_rc2 forced)
    gdn(dict(T=640, H=32, HV=32, K=128, cu_seqlens=vl), GL_RC_TWO_CHAINS=True)
    gdn(dict(T=640, H=32, HV=32, K=128, cu_seqlens=vl, dtype=torch.float16), GL_RC_TWO_CHAINS=True)
    gdn(dict(T=640, H=32, HV=32, K=128, cu_seqlens=vl), GL_RC_TWO_CHAINS=True, GL_RC_QNORM_MMA=True)
    gdn(dict(T=256, H=4, HV=8, K=64, V=128), STATE_IMPL="gl_rc2")
    gdn(dict(B=2, T=256, H=16, HV=32, K=128, h0=torch.float32), STATE_IMPL="gl_rc2")
    gdn(dict(T=256, H=4, HV=8, K=64), GL_RC_LATE_FACTORS=True, **r26)
    # round 27: the loaders' L2 prefetch of the next chunk (GL_RC_L2_PREFETCH): gl_rc2, gl_rc with and without QSIDE
    gdn(dict(T=640, H=32, HV=32, K=128, cu_seqlens=vl), GL_RC_L2_PREFETCH=True)
    gdn(dict(T=640, H=32, HV=32, K=128, cu_seqlens=vl), GL_RC_L2_PREFETCH=True, **r26)
    gdn(dict(T=256, H=4, HV=8, K=64), GL_RC_L2_PREFETCH=True, GL_RC_QSIDE=False, STATE_IMPL="gl_rc")
    # ... and the chains' final-state indices recomputed after the chunk loop (GL_RC_HT_REMAT): gl_rc2 (both state
    # layouts), gl_rc
    gdn(dict(T=640, H=32, HV=32, K=128, cu_seqlens=vl), GL_RC_HT_REMAT=True)
    gdn(dict(T=640, H=32, HV=32, K=128, cu_seqlens=vl, h0=torch.float32, state_v_first=True), GL_RC_HT_REMAT=True)
    gdn(dict(T=640, H=32, HV=32, K=128, cu_seqlens=vl), GL_RC_HT_REMAT=True, **r26)
    # round 29: the initial-state prefetch (GL_RC_H0_PREFETCH, 1 since round 30): gl_rc2 off and in both modes and
    # both h0 layouts, gl_rc with a bf16 k-first state, K = 64 (V = 128)
    for m in (0, 1, 2):
        gdn(dict(T=640, H=32, HV=32, K=128, cu_seqlens=vl, h0=torch.float32, state_v_first=True), GL_RC_H0_PREFETCH=m)
    gdn(dict(T=640, H=32, HV=32, K=128, cu_seqlens=vl, h0=torch.float32), GL_RC_H0_PREFETCH=1)
    gdn(dict(T=256, H=16, HV=32, K=128, h0=torch.bfloat16), GL_RC_H0_PREFETCH=2, STATE_IMPL="gl_rc")
    gdn(dict(T=256, H=4, HV=8, K=64, V=128, h0=torch.float32), GL_RC_H0_PREFETCH=1, STATE_IMPL="gl_rc2")
    # round 33: the default's many-program state pass with fewer (sequence, value head) items than SMs
    # (GL_RC2_ITEMS_PER_SM): gl_rc with one chain per CTA and today's options, at Qwen3-Next's TP 2 heads, bf16 and fp16
    tp2 = dict(T=1612, H=8, HV=16, K=128, cu_seqlens=[0, 700, 1100, 1300, 1455, 1558, 1598, 1611, 1612],
               h0=torch.float32, state_v_first=True)
    gdn(tp2)
    gdn(dict(tp2, dtype=torch.float16))
    # round 36: the item order of the persistent varlen state pass (GL_RC_SCHEDULE, off): the schedule kernel, gl_rc
    # at TP 2 (8 x 16 x 2 items on 132 CTAs: 2 rounds), gl_rc2 at the varlen goal heads with both prefetch modes it takes
    gdn(tp2, GL_RC_SCHEDULE=True)
    gdn(tp2, GL_RC_SCHEDULE="snake")
    for m in (0, 1):
        gdn(dict(T=640, H=32, HV=32, K=128, cu_seqlens=vl, h0=torch.float32, state_v_first=True), GL_RC_SCHEDULE=True,
            GL_RC_H0_PREFETCH=m)
    # round 37: "cta", the snake order formed in the state kernel's prologue (SCHED 2), gl_rc and gl_rc2
    gdn(tp2, GL_RC_SCHEDULE="cta")
    gdn(dict(T=640, H=32, HV=32, K=128, cu_seqlens=vl, h0=torch.float32, state_v_first=True), GL_RC_SCHEDULE="cta")
    # ... and the same q side in gl_ws's QSIDE output partition (GL_WS_QSCALE): 32 columns, fp16, K = 64, 64 columns
    gdn(dict(T=256, H=16, HV=32, K=128), GL_WS_QSIDE=True, GL_WS_QSCALE=True)
    gdn(dict(T=256, H=16, HV=32, K=128), GL_WS_QSIDE=True, GL_WS_QSCALE=True, GL_WS_QNORM_MMA=True)
    gdn(dict(T=256, H=16, HV=32, K=128, dtype=torch.float16), GL_WS_QSIDE=True, GL_WS_QSCALE=True)
    gdn(dict(T=256, H=4, HV=8, K=64), GL_WS_QSIDE=True, GL_WS_QSCALE=True, GL_WS_QNORM_MMA=True, STATE_IMPL="gl_ws")
    gdn(dict(T=640, H=32, HV=32, K=128, cu_seqlens=vl), GL_WS_QSIDE=True, GL_WS_QSCALE=True, STATE_IMPL="gl_ws",
        STATE_CFG_OVERRIDE=(64, 4, 2))
    # intra v3 with masked products in the inverse (round 11, off), at the 128-register cap it is meant for
    gdn(dict(T=256, H=32, HV=32, K=128), INTRA_V3_MASK_OUT=True, INTRA_V3_MAXNREG=128)
    # round 14: the accumulating merges in one-head programs (the GPU checks force them there), round 13's merges in
    # two-head programs, and varlen without the slot map (round 13's search)
    gdn(dict(T=256, H=32, HV=32, K=128), INTRA_V3_ACC_MERGE=True)
    gdn(dict(T=256, H=16, HV=32, K=128), INTRA_V3_ACC_MERGE=False)
    # round 17: the gates kernel and the v3 GATES form (one- and two-head programs, varlen with the slot map, fp16)
    gdn(dict(T=256, H=16, HV=32, K=128), INTRA_V3_GATES=True)
    gdn(dict(T=640, H=32, HV=32, K=128, cu_seqlens=[64 * i for i in range(11)]), INTRA_V3_GATES=True)
    gdn(dict(T=256, H=16, HV=32, K=128, dtype=torch.float16), INTRA_V3_GATES=True, INTRA_V3_ACC_MERGE=False)
    gdn(dict(T=640, H=32, HV=32, K=128, cu_seqlens=[64 * i for i in range(11)]), INTRA_SLOT_MAP=False)
    # round 22: DIAG16 is the default; the whole-tile merges (its twins) at the perf shapes' one- and two-head programs
    gdn(dict(T=64, H=16, HV=32, K=128), INTRA_V3_DIAG16=False)
    gdn(dict(T=640, H=32, HV=32, K=128, cu_seqlens=[64 * i for i in range(11)]), INTRA_V3_DIAG16=False)

    # round 28: PDL (every kernel of launch._PDL_KERNELS: the varlen chain with gl_rc2 and with gl_rc, a fixed-length
    # chain with the gates kernel, two-head intra programs and gl_rc forced; the default's varlen plans take it too)
    gdn(dict(T=640, H=32, HV=32, K=128, cu_seqlens=[64 * i for i in range(11)]), PDL=True, STATE_IMPL="gl_rc")
    gdn(dict(T=256, H=16, HV=32, K=128), PDL=True, INTRA_V3_GATES=True, STATE_IMPL="gl_rc")
    gdn(dict(T=640, H=32, HV=32, K=128, cu_seqlens=[64 * i for i in range(11)]), PDL=False)
    # ... and INTRA_GATES_BOOK (the gates kernel forms the offsets and the slot map), with and without PDL
    gdn(dict(T=640, H=32, HV=32, K=128, cu_seqlens=[64 * i for i in range(11)]), INTRA_GATES_BOOK=True)
    gdn(dict(T=640, H=32, HV=32, K=128, cu_seqlens=[0, 0, 1, 65, 640], cu_dtype=torch.int64), INTRA_GATES_BOOK=True,
        PDL=False)

    # round 20: the fused kernel (FUSED_RC): varlen and fixed length, K = 128 and 64, GVA, both state layouts, fp16,
    # beta through the in-kernel sigmoid, 3 load slots (K = 128: 219.7 KB of shared memory)
    for kw in (dict(T=640, H=32, HV=32, K=128, cu_seqlens=[64 * i for i in range(11)]),
               dict(T=256, H=16, HV=32, K=128, h0=torch.float32, state_v_first=True),
               dict(B=2, T=130, H=1, HV=2, K=64, h0=torch.bfloat16),
               dict(T=300, H=2, HV=4, K=128, dtype=torch.float16, h0=torch.float32,
                    cu_seqlens=[0, 0, 1, 65, 300], cu_dtype=torch.int64)):
        gdn(kw, FUSED_RC=True)
    gdn(dict(T=640, H=2, HV=4, K=64, cu_seqlens=[0, 1, 640]), FUSED_RC=True, FUSED_STAGES=3)
    gdn(dict(T=640, H=32, HV=32, K=128, cu_seqlens=[64 * i for i in range(11)]), FUSED_RC=True, FUSED_STAGES=3)
    # ... with the aux partition's diagonal blocks per warp (FUSED_DIAG16), beside their twins above
    gdn(dict(T=640, H=32, HV=32, K=128, cu_seqlens=[64 * i for i in range(11)]), FUSED_RC=True, FUSED_DIAG16=True)
    gdn(dict(B=2, T=130, H=1, HV=2, K=64, h0=torch.bfloat16), FUSED_RC=True, FUSED_DIAG16=True)
    x = C.make_inputs(device="cpu", T=200, H=2, HV=4, K=64, h0=torch.float32)
    GL.FUSED_RC = True
    try:
        GL.gdn_fwd(x["q"], x["k"], x["v"], x["g"], x["beta"], scale=x["scale"], initial_state=x["initial_state"],
                   output_final_state=True, use_qk_l2norm_in_kernel=True, state_v_first=False, cu_seqlens=None,
                   use_beta_sigmoid_in_kernel=True, allow_neg_eigval=True)
    finally:
        GL.FUSED_RC = False
    # ---- nvidia.decode_splitkv: head dims, pages, split / no split, fp8, sinks and LSE
    from atrex.api.flash_attn import normalize_flash_attn_call
    from atrex.dispatch.target import DeviceTarget
    from atrex.inputs import attn_inputs
    from atrex_nvidia.flash_attn.sm90.decode_splitkv import launch as DL

    H200 = DeviceTarget("nvidia", "sm90", "NVIDIA H200", (9, 0), "cuda 13.0", 132, False, 0)
    for q_lens, k_lens, kw in (
        ((1,), (8192,), dict(head_dim=128, page_size=16, num_heads_q=32, num_heads_k=8)),
        ((4,) * 8, (8192,) * 8, dict(head_dim=128, page_size=128, num_heads_q=32, num_heads_k=8)),
        ((1,) * 64, (300,) * 64, dict(head_dim=128, page_size=16, num_heads_q=32, num_heads_k=8)),
        ((1, 2), (40, 70), dict(head_dim=256, page_size=64, num_heads_q=16, num_heads_k=2, sinks=True,
                                return_lse=True)),
        ((3,), (1000,), dict(head_dim=40, page_size=1, num_heads_q=4, num_heads_k=4, window_size=[32, 0])),
        ((1, 1), (600, 70), dict(head_dim=128, page_size=16, num_heads_q=8, num_heads_k=1,
                                 dtype=torch.float8_e4m3fn, softcap=30.0)),
    ):
        call = normalize_flash_attn_call(**attn_inputs(list(q_lens), list(k_lens), **kw))._replace(target=H200)
        out = torch.empty((call.total_q, call.num_heads_q, call.head_dim_v), dtype=call.out_dtype)
        DL.decode(call, out)

    # same shapes, different alignment / dtype / flags: different signatures, and the memo must see them
    base = C.make_inputs(device="cpu", T=64, H=2, K=32)
    for mutate in ({}, dict(q=torch.empty(64 * 64 + 1, dtype=torch.bfloat16)[1:].view(1, 64, 2, 32)),
                   dict(g=base["g"].to(torch.bfloat16))):
        x = dict(base, **{n: (t.copy_(base[n]) if t.dtype == base[n].dtype else t) for n, t in mutate.items()})
        for l2 in (True, False):
            GL.gdn_fwd(x["q"], x["k"], x["v"], x["g"], x["beta"], scale=0.1, initial_state=None,
                       output_final_state=True, use_qk_l2norm_in_kernel=l2, state_v_first=False, cu_seqlens=None)
    GL._launch_all = _launch_all
    results = {"signature_determines_keys": dict(ok=not sig_clash and len(sig_keys) > 20, clashes=sig_clash[:3],
                                                 signatures=len(sig_keys)),
               "fast_launch_bound_args": dict(ok=not bound_wrong and bound_checked[0] > 50, checked=bound_checked[0],
                                              wrong=bound_wrong[:3])}
    import os, re, subprocess, tempfile
    from sass_check import unwritten_uniform_reads
    try:
        nvdisasm = knobs.nvidia.nvdisasm.path
    except Exception:  # noqa: BLE001 - a Triton without the tool: the SASS check is reported as not run
        nvdisasm = None
    results["nvdisasm"] = dict(ok=True, path=nvdisasm, triton=triton.__version__)
    tmp = tempfile.mkdtemp()
    try:
        from triton.experimental.gluon._runtime import GluonASTSource
    except ImportError:
        GluonASTSource = None
    for name, (jit_fn, c) in specs.items():
        is_gluon = getattr(jit_fn, "is_gluon", lambda: False)()
        src = (GluonASTSource if is_gluon else ASTSource)(jit_fn, c["signature"], c["constants"], c["configs"][0])
        opts = dict(num_warps=c["num_warps"], num_stages=c["num_stages"])
        if c.get("maxnreg"):
            opts["maxnreg"] = c["maxnreg"]
        try:
            k = triton.compile(src, target=SM90, options=opts)
            smem = int(k.metadata.shared)
            results[name] = dict(ok=smem <= SMEM_LIMIT, shared=smem)
            cap = re.search(r"\.maxnreg\s+(\d+)", k.asm.get("ptx", ""))
            results[name]["ptx_maxnreg"] = int(cap.group(1)) if cap else None
            if "intra_chunk_v3" in name:  # the pair / masked-product constants, for the register-cap test
                names = [p.name for p in jit_fn.params]
                results[name]["gs"] = c["constants"].get((names.index("GS"),), 1)
                results[name]["mask_out"] = bool(c["constants"].get((names.index("MASK_OUT"),), False))
                # round 19: DIAG16, and what identifies the same specialisation without it (its twin)
                i_d = (names.index("DIAG16"),)
                results[name]["diag16"] = bool(c["constants"].get(i_d, False))
                results[name]["twin"] = repr((sorted((str(a), repr(b)) for a, b in c["constants"].items() if a != i_d),
                                              repr(c["signature"]), c.get("maxnreg")))
            if "fused_rc" in name:  # the warp groups' register split (setmaxnreg) and the launch's
                names = [p.name for p in jit_fn.params]
                results[name]["setmaxnreg"] = sorted({int(n) for n in re.findall(r"setmaxnreg\.\w+\.sync\.aligned"
                                                                                 r"\.u32\s+(\d+)", k.asm["ptx"])})
                results[name]["regs"] = [c["constants"].get((names.index(a),)) for a in ("AUX_REGS", "OUT_REGS")]
                i_d = (names.index("DIAG16"),)
                results[name]["diag16"] = bool(c["constants"].get(i_d, False))
                results[name]["twin"] = repr((sorted((str(a), repr(b)) for a, b in c["constants"].items() if a != i_d),
                                              repr(c["signature"])))
            if "state_output" in name:
                names = [p.name for p in jit_fn.params]
                results[name]["t_is_one"] = c["constants"].get((names.index("T"),)) == 1
                if "H0PF" in names:  # (gl_rc, gl_rc2: round 29's prefetch and what sizes it)
                    results[name]["h0pf"] = dict(
                        mode=c["constants"].get((names.index("H0PF"),), 0),
                        l2pf=bool(c["constants"].get((names.index("L2PF"),), False)),
                        bk=c["constants"].get((names.index("BK"),)), bv=c["constants"].get((names.index("BV"),)),
                        two=name.startswith("atrex_sm90_gdn_state_output_gl_rc2|"))
        except Exception as exc:  # the finding
            results[name] = dict(ok=False, error=f"{type(exc).__name__}: {str(exc)[:400]}")
            continue
        if nvdisasm:
            path = os.path.join(tmp, "k.cubin")
            with open(path, "wb") as f:
                f.write(k.asm["cubin"])
            sass = subprocess.run([nvdisasm, "-c", path], capture_output=True, text=True, check=True).stdout
            results[name]["insns"] = sass.count(";")
            results[name]["hmma"] = sass.count("HMMA.")
            results[name]["hgmma"] = sass.count("HGMMA.")
            results[name]["bars"] = sass.count("BAR.SYNC")
            if "h0pf" in results[name]:  # L2 prefetches: plain (PF2) and L2::evict_last (PML2)
                results[name]["h0pf"].update(pf2=sass.count("CCTL.E.PF2"), pml2=sass.count("CCTL.E.PML2"))
            results[name]["unwritten_ur"] = unwritten_uniform_reads(sass)[:4]
            # round 28 (launch.PDL): griddepcontrol.wait / .launch_dependents (ACQBULK / PREEXIT) and, in text order,
            # the first memory access (the Gluon kernels' worker partitions come first in the text, behind a barrier)
            names = [p.name for p in jit_fn.params]
            lines = sass.splitlines()
            first = lambda pat: next((i for i, ln in enumerate(lines) if re.search(pat, ln)), None)  # noqa: E731
            results[name]["pdl"] = dict(
                on=bool(c["constants"].get((names.index("PDL"),), False)) if "PDL" in names else None,
                gluon=bool(is_gluon), acq=sass.count("ACQBULK"), preexit=sass.count("PREEXIT"), acq_at=first(r"ACQBULK"),
                mem_at=first(r"\b(LDG|STG|LDS|STS|ATOM|ATOMG|RED|UTMALDG|UTMASTG|UBLKCP|LDGSTS)\b"),
                preexit_at=first(r"PREEXIT"), gmem_last=max((i for i, ln in enumerate(lines)
                                                             if re.search(r"\b(LDG|STG|ATOMG|RED)\b", ln)), default=None))
    print("RESULT " + json.dumps(results))
''').replace("PATHS", repr(PATHS))


@pytest.fixture(scope="module")
def compiled():
    try:
        from triton.backends.compiler import GPUTarget  # noqa: F401
        from triton.backends.nvidia.compiler import CUDABackend  # noqa: F401
    except Exception as exc:  # a Triton build without the NVIDIA backend cannot compile for sm90
        pytest.skip(f"Triton's NVIDIA backend is unavailable: {exc}")
    # the launchers must not touch a real GPU from this subprocess
    return run_result_script(_SCRIPT, set_env={"CUDA_VISIBLE_DEVICES": "", "TRITON_DEFAULT_FP_FUSION": "1"},
                             drop_env=("TRITON_INTERPRET",), timeout=1500, cwd=ROOT, what="compile subprocess")


def test_launchers_request_every_kernel(compiled):
    names = {name.split("|", 1)[0] for name in compiled}
    want = {"atrex_sm90_gdn_intra_chunk", "atrex_sm90_gdn_intra_chunk_v2", "atrex_sm90_gdn_intra_chunk_v3",
            "atrex_sm90_gdn_state_output",
            "atrex_sm90_gdn_state_output_v2", "atrex_sm90_gdn_chunk_offsets", "atrex_sm90_gdn_slot_seq",
            "atrex_sm90_gdn_state_output_tma", "atrex_sm90_gdn_state_output_gl_ws", "atrex_sm90_gdn_state_output_gl_rc",
            "atrex_sm90_gdn_state_output_gl_rc2",
            "atrex_sm90_gdn_fused_rc", "atrex_sm90_decode_splitkv", "atrex_sm90_decode_combine"}
    assert want <= names, f"not requested: {sorted(want - names)}"


def test_fast_launch_binds_arguments_as_triton_does(compiled):
    """``launch.FAST_LAUNCH`` (round 23) replays a warm call's launches through the compiled kernels with the argument
    list ``_bound_args`` forms from the launch's positional arguments, its ``meta`` and the kernel's parameters. For
    every launch of every call the gate plans (all kernels and variants above), that list is, element by element, the
    one Triton's own binder forms for ``kern[grid](*args, **meta)``."""
    r = compiled["fast_launch_bound_args"]
    assert r["ok"], r


def test_every_specialisation_compiles_for_sm90_within_shared_memory(compiled):
    bad = {name: r for name, r in compiled.items() if not r["ok"]}
    assert not bad, json.dumps(bad, indent=1)[:6000]


def test_no_specialisation_reads_a_uniform_register_nothing_writes(compiled):
    """The SASS of every specialisation (``nvdisasm``, ``op_test/sass_check.py``): no uniform register is read that
    no instruction writes. ptxas 12.8 (Triton 3.6) assembled the T = 1 specialisation of state kernel v2 that way
    (the H200's intermittent T = 1 illegal address); the launcher now never compiles the
    state kernels with T as the constant 1 (``kernels.NO_T1_SPECIALISATION``)."""
    if not compiled["nvdisasm"]["path"]:
        pytest.skip(f"Triton {compiled['nvdisasm']['triton']} ships no nvdisasm")
    kernels = {name: r for name, r in compiled.items() if "insns" in r}
    # (a sanity floor on each disassembly: the varlen bookkeeping kernels are small, the slot map at N = 1 has 64)
    small = ("atrex_sm90_gdn_chunk_offsets|", "atrex_sm90_gdn_slot_seq|")
    short = {n: r["insns"] for n, r in kernels.items() if r["insns"] <= (20 if n.startswith(small) else 100)}
    assert len(kernels) > 20 and not short, (len(kernels), short)
    bad = {name: r["unwritten_ur"] for name, r in kernels.items() if r["unwritten_ur"]}
    assert not bad, json.dumps(bad, indent=1)[:6000]


def test_t1_calls_compile_the_state_kernels_without_t_as_a_constant(compiled):
    """Every state-kernel specialisation requested (T = 1 shapes included) keeps T a runtime argument or a constant
    other than 1: Triton records an int argument equal to 1 as a constexpr, which is what ptxas 12.8 miscompiled."""
    t1 = [name for name, r in compiled.items() if r.get("t_is_one")]
    assert not t1, t1


def test_intra_kernels_compile_with_the_launch_register_cap(compiled):
    """The gate compiles each specialisation with the options of its launch, register cap included (Triton keeps
    ``maxnreg`` in the cache key, not in the compile options; before round 11 the gate missed it and checked uncapped
    intra binaries): every intra v3 specialisation's PTX carries the cap the launcher sets: 168 by default, for one
    value head per program and for two (GS = 2, round 12: with MASK_OUT), 128 for the one-head MASK_OUT variant, 232
    for round 11's pairs (a variant case); and the default pair kind was requested."""
    import re
    pairs = []
    for name, r in compiled.items():
        if name.startswith("atrex_sm90_gdn_intra_chunk_v3|"):
            want = re.search(r"'maxnreg': (\d+)", name)
            pairs.append((int(want.group(1)) if want else None, r.get("ptx_maxnreg")))
    assert pairs and all(want == got for want, got in pairs), pairs
    assert {want for want, _ in pairs} >= {168, 128, 232}, pairs
    kinds = {(r.get("gs"), r.get("mask_out"), r.get("ptx_maxnreg")) for name, r in compiled.items()
             if name.startswith("atrex_sm90_gdn_intra_chunk_v3|")}
    assert {(2, True, 168), (1, False, 168)} <= kinds, kinds


def test_pdl_kernels_wait_for_their_predecessor_before_any_memory_access(compiled):
    """``launch.PDL`` (round 28) in the SASS: every specialisation compiled with its PDL constexpr has exactly one
    griddepcontrol.wait (ACQBULK) and one launch_dependents (PREEXIT), and in a Triton kernel (straight-line
    prologue) the wait comes before the first load or store (the item schedule: the reverse, below); no
    specialisation without it has either. The PDL
    specialisations cover every kernel of ``launch._PDL_KERNELS``."""
    if not compiled["nvdisasm"]["path"]:
        pytest.skip(f"Triton {compiled['nvdisasm']['triton']} ships no nvdisasm")
    from atrex_nvidia.chunk_gdn.sm90 import launch as GL
    pdl = {n: r["pdl"] for n, r in compiled.items() if "pdl" in r}
    on = {n: p for n, p in pdl.items() if p["on"]}
    assert {n.split("|", 1)[0] for n in on} == set(GL._PDL_KERNELS), sorted(on)
    # the item schedule (round 36) reads only the call's cu_seqlens and writes only its own buffer, so it lets its
    # dependent launch first and waits last: launch_dependents before its first memory access, the wait after its
    # last global access (it still completes after its predecessor)
    late = "atrex_sm90_gdn_item_schedule"
    bad = {n: p for n, p in on.items() if p["acq"] != 1 or p["preexit"] != 1
           or (not p["gluon"] and not n.startswith(late) and (p["mem_at"] is None or p["acq_at"] > p["mem_at"]))
           or (n.startswith(late) and (p["mem_at"] is None or p["preexit_at"] > p["mem_at"]
                                       or p["gmem_last"] is None or p["acq_at"] < p["gmem_last"]))}
    assert not bad, json.dumps(bad, indent=1)[:4000]
    off = {n: p for n, p in pdl.items() if not p["on"] and (p["acq"] or p["preexit"])}
    assert not off, json.dumps(off, indent=1)[:4000]


def test_h0_prefetch_issues_one_l2_prefetch_per_line(compiled):
    """``GL_RC_H0_PREFETCH`` (round 29) in the SASS of gl_rc and gl_rc2: an item's initial-state block is BW x BK
    values (BW = 128 for gl_rc2's two V blocks, 64 for gl_rc), ``n`` = BW * BK / 32 prefetch addresses. The kernel's
    start prefetches the CTA's first item over its 4 warps (n / 128 prefetches per thread), the one-warp loader each
    later item (n / 32): mode 1 both plain (CCTL.E.PF2), mode 2 the loader's with L2::evict_last (CCTL.E.PML2). The
    specialisations without either prefetch knob have none."""
    if not compiled["nvdisasm"]["path"]:
        pytest.skip(f"Triton {compiled['nvdisasm']['triton']} ships no nvdisasm")
    rc = {n: r["h0pf"] for n, r in compiled.items() if "pf2" in r.get("h0pf", {})}
    assert {p["mode"] for p in rc.values()} == {0, 1, 2} and any(p["two"] for p in rc.values() if p["mode"]), rc
    bad = {}
    for name, p in rc.items():
        lines = (2 if p["two"] else 1) * p["bv"] * p["bk"] // 32
        want = {0: (0, 0), 1: (lines // 128 + lines // 32, 0), 2: (lines // 128, lines // 32)}[p["mode"]]
        if (p["pf2"], p["pml2"]) != want and not (p["mode"] == 0 and p["l2pf"]):
            bad[name] = (p, want)
    assert not bad, json.dumps(bad, indent=1)[:4000]


def _diag16_twins(compiled, prefix, every=True):
    """(name, result, twin's result) for each specialisation of the kernel ``prefix`` compiled with DIAG16 and each
    compiled without it under the same constants and signature otherwise (skips without nvdisasm). Asserts that some
    have DIAG16, that no specialisation without it has an HMMA, and (``every``) that each with it has a twin."""
    if not compiled["nvdisasm"]["path"]:
        pytest.skip(f"Triton {compiled['nvdisasm']['triton']} ships no nvdisasm")
    kern = {n: r for n, r in compiled.items() if n.startswith(prefix) and "bars" in r}
    on = {n: r for n, r in kern.items() if r["diag16"]}
    assert on and all(r["hmma"] == 0 for r in kern.values() if not r["diag16"]), kern
    found = [(n, r, t) for n, r in on.items() for t in kern.values() if not t["diag16"] and t["twin"] == r["twin"]]
    if every:
        assert {n for n, _, _ in found} == set(on), (sorted(on), len(found))
    return found


def test_intra_diag16_runs_its_diagonal_blocks_as_warp_mma_without_barriers(compiled):
    """``INTRA_V3_DIAG16`` (round 19) in the SASS of each intra v3 specialisation compiled with it, against its twin
    (the same constants and signature without it): the batched 16x16 dots lowered to mma.sync (HMMA.16816: 2 per dot,
    6 dots per value head, in the fp16 path and again in the positive-g fallback), and at least 12 fewer CTA barriers
    per value head than the twin (the three whole-tile merge levels it replaces are six staged dots per path, each
    with a barrier or two). The T64 two-head program: 48 HMMA, barriers 121 -> 73 (Triton 3.6), 119 -> 71 (3.9). No
    specialisation without it has an HMMA. Since round 22 DIAG16 is the default, so most specialisations have it and
    only some have a twin: every one with it has its HMMA count, and the twins cover one- and two-head programs."""
    intra = "atrex_sm90_gdn_intra_chunk_v3|"
    for n, r in compiled.items():
        if n.startswith(intra) and r.get("diag16") and "hmma" in r:
            assert r["hmma"] >= 24 * (r["gs"] or 1), (n, r["hmma"])
    pairs = []
    for n, r, twin in _diag16_twins(compiled, intra, every=False):
        heads = r["gs"] or 1
        assert r["hmma"] >= 24 * heads, (n, r["hmma"])
        pairs.append((heads, r["hmma"], twin["bars"], r["bars"]))
        assert twin["bars"] - r["bars"] >= 12 * heads, (n, twin["bars"], r["bars"])
    print("DIAG16 (heads, HMMA, barriers without, with):", pairs)
    assert {heads for heads, *_ in pairs} == {1, 2}, pairs


def test_fused_kernel_splits_registers_as_launched(compiled):
    """``FUSED_RC`` (round 20): every fused specialisation compiled (the shared-memory test above covers its fit: 168.5
    KB at K = 128 with 2 load slots, 219.7 KB with 3), and its PTX hands the aux and output partitions the registers the launcher asked
    for, the chain the rest of the three warp groups' 3 x 168 (setmaxnreg; 224 with the defaults)."""
    fused = {n: r for n, r in compiled.items() if n.startswith("atrex_sm90_gdn_fused_rc|")}
    assert len(fused) >= 6, sorted(fused)
    for n, r in fused.items():
        assert r["ok"], (n, r)
        aux, out = r["regs"]
        assert {aux, out, 3 * 168 - aux - out} <= set(r["setmaxnreg"]), (n, r["setmaxnreg"], aux, out)


def test_fused_diag16_runs_its_diagonal_blocks_as_warp_mma(compiled):
    """``FUSED_DIAG16`` (round 20) in the SASS of each fused specialisation compiled with it, against its twin: the aux
    partition's merges b = 2, 4, 8 lowered to mma.sync (HMMA.16816: 2 per dot, 6 dots, in the fp16 path and in the
    bf16 fallback), and at least 12 fewer CTA barriers and 48 fewer wgmma instructions (HGMMA) than the twin (the six
    staged 64-deep dots it replaces in each path). No fused specialisation without it has an HMMA."""
    pairs = []
    for n, r, twin in _diag16_twins(compiled, "atrex_sm90_gdn_fused_rc|"):
        assert r["hmma"] == 24, (n, r["hmma"])
        pairs.append((twin["bars"], r["bars"], twin["hgmma"], r["hgmma"]))
        assert twin["bars"] - r["bars"] >= 12 and twin["hgmma"] - r["hgmma"] >= 48, (n, pairs[-1])
    print("FUSED_DIAG16 (barriers without, with; HGMMA without, with):", pairs)
