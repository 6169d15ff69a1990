"""Launcher of ATREX's SM90 chunked Gated-DeltaNet forward (Triton).

``gdn_fwd`` is a pure function: it allocates its outputs and an invocation-local workspace
(``A``, ``Aqk`` in the input dtype, ``[HV, B*T, 64]`` each, and fp32 ``gamma`` ``[HV, B*T]``), never
mutates its inputs and never reads device values on the host (``cu_seqlens`` is consumed on the
device only), so it is CUDA-graph capture-safe once its Triton specialisations are compiled.
Validation belongs to ``impl.check``; this module trusts its caller.
"""

import functools
import math
import os

import torch
import triton

from atrex.errors import AtrexCaptureError
from atrex_nvidia.triton_warm import WarmRecord, launch_key

from . import kernels as _k

# Launch keys of this process (atrex_nvidia.triton_warm): lets a CUDA-graph capture refuse, before any
# launch, a call whose Triton kernels would compile inside it.
WARM = WarmRecord()


def _cdiv(a, b):
    """``triton.cdiv`` as plain Python (Triton 3.6's is a constexpr function, ~3x the host time per call)."""
    return -(-a // b)


def _next_pow2(n):
    """``triton.next_power_of_2`` as plain Python (the same values for n >= 0)."""
    return 1 << (n - 1).bit_length() if n > 0 else 0


def warmed_count() -> int:
    return len(WARM)

# Tuned on H200 for K = V = 128 (see bench_gdn.py); (BV, num_warps, num_stages) of the
# sequential state/output kernel, chosen from the number of (sequence, value head) programs.
_STATE_CFG_FEW = (32, 4, 2)   # few sequences x heads: more V-blocks for more CTAs
_STATE_CFG_MANY = (64, 4, 2)  # plenty of (sequence, head) programs already
_INTRA_CFG = (4, 2, True)     # (num_warps, num_stages, product-form 16x16 inverse) of the intra kernel
# WY form: the intra kernel also forms W = A (beta e^g K) and U = A (beta V) (as fla does), which takes
# one dependent dot off the sequential state kernel's per-chunk chain at the cost of more HBM traffic.
USE_WY = False
# Fast path (q/k normalised once by the intra kernel, diagonal scalings on [64, BV] results, product-form
# inverse, optional WY). Measured on the H200 (2026-12-02) for bf16 K = V = 128 and passing the first 7
# small cases (K 32/64, V 16-64, bf16); one run with K = 60, V = 100, fp16 hit an illegal memory access
# that was not diagnosed (K and V not multiples of 16: outside what "auto" takes). "auto" takes it for bf16 and
# (since round 16) fp16 inputs with K % 16 == V % 16 == 0, and the operand-scaled path (H200-verified on every
# test case) otherwise. Until round 16 fp16 inputs always took the operand-scaled path (the round-1 kernels):
# every kernel after round 1 reads its element type from its operands, and fp16 calls at K, V multiples of 16
# now run the same kernels as bf16 ones (GPU cases in _gdn_cases: fp16 with and without L2 norm, GVA, varlen,
# both state layouts, the Gluon state kernels; r57: 13 passed). Measured (H200, r58, bench_gdn, eager, fp16 against
# the round-1 pair): T=8192/16/32 0.258 vs 1.026 ms, varlen 16x1024 0.490 vs 1.468 ms; under CUDA graphs (r57)
# T=8192/16/32 fp16 0.2508 ms, bf16 0.2506. True / False force it.
FAST_PATH = "auto"
_FAST_DTYPES = (torch.bfloat16, torch.float16)


def _use_fast(q, K, V):
    if FAST_PATH == "auto":
        return q.dtype in _FAST_DTYPES and K % 16 == 0 and V % 16 == 0
    return bool(FAST_PATH)

# Override hooks for the benchmark sweep only: None or a tuple like the defaults above.
STATE_CFG_OVERRIDE = None
# STATE_IMPL "tma": build the TMA descriptors in the kernel (True) or on the host (False: Triton encodes five
# descriptors per launch on the host, which made the T=8192 call host-bound on the H200, round 5)
TMA_DEVICE_DESC = True
INTRA_CFG_OVERRIDE = None
# Alternative kernels (fast path only, not with USE_WY; bench_gdn.VARIANTS sweeps them):
# INTRA_IMPL "v2": ``atrex_sm90_gdn_intra_chunk_v2``, grid over (chunk slot, value head), UT inverse by
#   recursive doubling with batched dots (fp32 dots at INTRA_V2_PREC: "ieee" or "tf32x3"; plain "tf32" runs
#   but is inaccurate for correlated keys: rrmse 0.16-0.42 in a CPU emulation where ieee/tf32x3 give 6e-3).
# STATE_IMPL "v2": ``atrex_sm90_gdn_state_output_v2`` (per-row factors precomputed by the intra kernel, v1 or
#   v2: no strided beta load, exp or reduction in the loop; STATE_PREFETCH: small operands loaded a chunk
#   ahead by hand).
# (A transposed state kernel "v3", register-operand chain, was slower in every configuration measured on the
#   H200 and was removed: BENCH_H200.md, round 2.)
# Round 3 (H200, BENCH_H200.md): intra v2 with tf32x3 dots beat v1 (varlen 16x1024: 0.540 vs 0.706 ms) and state v2
# with the hand prefetch beat v1 (T=8192: 0.275 vs 0.337 ms).
# Since round 4 (H200, commit cd17437, bench_gdn sweep, BENCH_H200.md) the default intra kernel is v3 with the Newton
# step: T=8192/16/32 0.162 vs 0.247 ms (v2), T=32768 0.624 vs 0.965 ms, varlen 16x1024 0.341 vs 0.540 ms.
INTRA_IMPL = "v3"
INTRA_V2_PREC = "tf32x3"
# INTRA_IMPL "v3": ``atrex_sm90_gdn_intra_chunk_v3``, same grid and outputs as v2; one 64x64 K K^T dot and the UT
#   inverse by recursive block merges on the whole 64x64 tile with bf16 dots, plus (INTRA_V3_NEWTON) one
#   hi/lo-split Newton refinement step.
INTRA_V3_NEWTON = True
# INTRA_V3_INV_FP16 (round 9): the v3 merges with fp16 dots and no Newton step, for calls with in-kernel L2 norm only
# (there every operand of the merges is bounded: see kernels._ut_inverse). CPU float64 emulation on clustered keys
# (the hard case), over 300 tiles: A's error 1.55x median / 1.72x worst (beta <= 1) and 2.67x / 3.17x (beta <= 2) of the
# error of rounding the exact inverse to bf16, against 1.0x / 1.08x with the Newton step and 9x / 20x for the bf16
# merges alone; on random keys 1.02x. End-to-end output and state errors on the contract cases within 3% of the Newton
# path's (BENCH_H200.md, round 9). A tile with a positive g takes INTRA_V3_FP16_FALLBACK instead (the kernel decides).
# On since round 9 (H200, r17 and r19, same process): intra T=8192/16/32 0.129-0.132 vs 0.145-0.147 ms, T=32768
# 0.493-0.503 vs 0.562, varlen 16x1024 0.253-0.261 vs 0.296-0.297. Calls without in-kernel L2 norm keep bf16 merges +
# Newton.
INTRA_V3_INV_FP16 = True
# What a tile with a positive g (decay factors above 1: fp16's range no longer suffices) takes instead, decided per tile
# in the kernel: 2 bf16 merges + Newton (the accurate path), 1 bf16 merges alone, 0 nothing (unguarded: fp16 overflows
# there; for tests and timing only).
INTRA_V3_FP16_FALLBACK = 2
# ptxas register cap of the v3 intra kernel (Triton's ``maxnreg``): None leaves it to ptxas (255 with spills at K = 128,
# two CTAs per SM); 168 / 128 allow three / four CTAs per SM at the cost of more spills.
# Round 5 (H200, third sweep to agree): 168 is the default, intra T=8192/16/32 0.146 vs 0.162 ms, T=32768 0.561 vs
# 0.618 ms, varlen 16x1024 0.296 vs 0.335 ms.
INTRA_V3_MAXNREG = 168
# INTRA_V3_GVA_SHARE (round 11): with GVA (G = HV / H even), one v3 program handles GS = 2 value heads of one q/k
# head, so that the q / k tiles are loaded, L2-normalised and stored, and Q K^T, K K^T formed, once per pair (the SASS
# of the v3 kernel spends ~45% of a value head's instructions there); 2 or 1 (off). INTRA_V3_GS2_MAXNREG is the
# register cap of those programs (None: INTRA_V3_MAXNREG).
# Round 11 (H200, bench_gdn sweeps r28 and r29, same process as fla): at the 168-register cap GS = 2 was no faster
# (intra T=8192/16/32 0.132 vs 0.127 ms with GS = 1, T=32768 0.492 / 0.489 vs 0.490 / 0.487) although it executes
# 15-22% fewer instructions per value head (scripts/gdn_gluon_sass.py --intra): the kernel is latency-bound
# (dependent dots, shared-memory staging), not issue-bound. With a 232-register cap (two CTAs per SM) T=8192
# 0.124 / 0.125 and T=32768 0.468 / 0.466 ms (4-5% below GS = 1); 200 registers (r28): 0.127 / 0.483.
# Tried in r29 and removed: the two heads' fp16 inverses interleaved level by level in one basic block (two
# independent dependency chains for the scheduler): slower (T=8192 0.142 / 0.196 / 0.131 ms at 232 / 200 / 255
# registers, T=32768 0.542 / 0.750 / 0.492); and pairing value heads without GVA (G = 1, each head its own q/k
# tiles): varlen 16x1024 intra 0.315 (inverses in turn) / 0.367 (interleaved) against 0.260 with one head per program.
# Round 12 (r31): with MASK_OUT (below) the pairs fit the 168 cap again, and there they win; the cap is now None.
INTRA_V3_GVA_SHARE = 2
INTRA_V3_GS2_MAXNREG = None
# INTRA_V3_QSIDE_MAXNREG (round 25): the register cap of one-head v3 programs with QSIDE (no q tile, no Q K^T; the
# varlen goal shape's programs), None: INTRA_V3_MAXNREG. 128 allows four CTAs per SM (168: three).
# r87 (H100, bench_gdn sweep, varlen 16x1024): slower. Intra 0.148 ms at 168 against 0.164 at 128 (0.159 with masked
# products): the 128-register build spills more (stack 152-184 bytes against 136). None.
INTRA_V3_QSIDE_MAXNREG = None
# INTRA_V3_MASK_OUT (round 11 built it, round 12 measured it): the v3 inverse's merges mask the product L X_b instead
# of L (kernels._merge_level_mask_out: the same bits), so that one fp16 / bf16 copy of L serves all five levels and
# the fp32 L is dead during the merges. True: every v3 program; "gs2": the two-head programs only; False: none.
# Round 12 (H200, bench_gdn sweep r31, intra ms, T=8192/16/32 | T=32768/16/32 | varlen 16x1024 H=HV=32):
#   round-11 default (pairs at 232, no mask-out)       0.124 | 0.465 | 0.259
#   mask-out everywhere, pairs at 232 / one head at 168 0.123 | 0.461 | 0.264
#   pairs with mask-out at 168 (three CTAs per SM)      0.112 | 0.417 | (no pairs: 0.265 with mask-out)
#   one head per program everywhere, mask-out at 128 (four CTAs per SM)  0.138 | 0.523 | 0.264
#   one-head programs with mask-out at 144 (pairs as in row 2): varlen 0.262; without mask-out a 128 cap spills:
#   varlen 0.399.
# So "gs2": the pairs at 168 with mask-out (whole call T=32768 1.009 vs 1.054 ms in the same process), one-head
# programs as before (mask-out there measured 0.264 / 0.262 against 0.259: no gain).
INTRA_V3_MASK_OUT = "gs2"
# INTRA_V3_FAST_EXP (round 11): the v3 decay tile with ex2.approx.ftz (not under the interpreter). H200 r28-r29
# (GS = 1 both): intra T=8192/16/32 0.127 vs 0.135 ms (tl.exp), T=32768 0.490 vs 0.506; varlen 16x1024 0.261 vs 0.262.
INTRA_V3_FAST_EXP = True
# Round 14, built, measured on the H200 and removed: "INTRA_V3_EARLY_LOADS", the v3 program issuing all of its global
# loads (g and beta of each value head, q, k) before using any. Nsight Compute (r44) had the program waiting on the g
# load (the cumsum's first shuffle) in 1.8% / 4.2% of its stall samples and on the q / k loads in ~5.7% / ~3.3%
# (T=32768/16/32 / varlen 16x1024), one after the other. Reordered, ptxas held the raw tiles longer and spilled more
# (GS = 2 programs: 304 bytes of stack against 176): intra (r45, bench_gdn sweep, ms) T=8192/16/32 0.137 vs 0.110,
# T=32768 0.498 vs 0.413, varlen 16x1024 0.273 vs 0.260.
# INTRA_SLOT_MAP (round 14; varlen, intra v3): a small kernel (``atrex_sm90_gdn_slot_seq``) writes each chunk slot's
# sequence once, after the chunk offsets; a v3 program reads it with one load. Without it every v3 program (HV per
# slot) binary-searches the chunk offsets, log2(N) + 1 dependent loads before its first tile load: 7.5% of the
# intra kernel's stall samples at varlen 16x1024 (r44). r45 (bench_gdn sweep, same process): varlen 16x1024 intra
# 0.252 vs 0.260 ms, plus 0.003 ms for the map kernel; whole call 0.489 vs 0.492 ms.
INTRA_SLOT_MAP = True
# INTRA_SLOT_MAP = "packed" (round 19, not measured: no device was lent): the map holds each slot's token range (t0,
# eos) instead of its sequence, so a varlen v3 / gates program reads its chunk with one level of loads instead of two
# (the sequence, then its chunk offset and bounds) before its tile loads can issue. Round 17's profile put the slot
# decode at ~7% of a varlen v3 program's stall samples.
# INTRA_V3_ACC_MERGE (round 14): each merge of the v3 fp16 inverse (L2-norm calls, tiles with g <= 0) accumulates
# X_B + X_B (-M_B X_B) onto X_B in its second dot (on -L, negated once) instead of subtracting the dot's result from X_B
# afterwards: no 32 subtractions per thread per level, and the sum is rounded once in the tensor cores instead of twice.
# The bf16 merges (+ Newton) keep round 13's form. Triton 3.6 SASS of the fp16-only build (INTRA_V3_FP16_FALLBACK=0):
# 2672 -> 2568 instructions (one head per program), 4448 -> 4264 (two heads; stack 136 -> 248 bytes).
# True: every v3 program; "gs2": the two-head programs only; False: none.
# Measured (H200, bench_gdn sweeps, intra kernel ms, round 13's merges -> accumulating):
#   two-head programs (GVA): T=8192/16/32 0.113 -> 0.107 (r47, r48), T=32768/16/32 0.420 -> 0.400 (r47);
#   one-head programs: varlen 16x1024 (H = HV = 32) 0.255 -> 0.250 (r47, r48), but fixed-length T=8192/32/32
#   0.128 -> 0.158 (r48; r47's graph bench 0.273 -> 0.301 ms for the whole call): that Triton 3.6 binary grew from
#   3968 to 5560 instructions (IMAD +987, MOV +477, WARPGROUP +166: register copies and fences around the accumulator;
#   an fp16-only build is shorter). Hence "gs2"; the one-head binaries are round 13's.
INTRA_V3_ACC_MERGE = "gs2"
# INTRA_V3_GATES (round 17): the gate rows (factor planes 0-4: chunk-local gamma, beta, beta e^gamma, e^gamma,
# e^(gamma_last - gamma)) are written by a separate small kernel (``atrex_sm90_gdn_gates``, one program per chunk slot
# and block of value heads) before the v3 kernel, which then loads gamma and beta beside q and k instead of loading g,
# scanning it across its warps and storing the planes before its q / k loads. That part was about a sixth of a varlen
# v3 program's stall samples, ahead of the q / k load latency (r44, round 14's profile). Calls that store the planes
# (the state kernels v2 / tma / gl_ws / gl_rc) without FOLD_QK_NORM. True: every v3 program; "varlen1": varlen calls
# with one-head programs only; False: none. Measured (H200, bench_gdn sweeps, intra kernel ms, without -> with, plus
# the gates kernel):
#   varlen one-head programs: varlen 16x1024 (H = HV = 32) 0.255 -> 0.240, gates 0.006 (r62 and r64; whole call
#   0.491 -> 0.483 and 0.492 -> 0.484);
#   fixed-length one-head programs: T=8192/32/32 0.128 -> 0.149, gates 0.004 (r64; graph bench 0.276 -> 0.298 ms);
#   two-head programs (GVA): T=8192/16/32 0.108 -> 0.134, T=32768/16/32 0.401 -> 0.488 (r62); without the accumulating
#   merges 0.120 / 0.440 (with them the Triton 3.6 binary grows from 4264 to 5528 instructions: register copies).
# A fixed-length program decodes its chunk without a load, so its g load is not behind a chain of dependent loads as
# a varlen program's is (slot map -> offsets -> g); there the form only adds the plane loads.
INTRA_V3_GATES = "varlen1"
# INTRA_GATES_BOOK (round 28): where a varlen call launches the gates kernel with the sequence map (INTRA_SLOT_MAP
#   True), that kernel also forms the chunk offsets and the slot map (kernels._book_slot: each program from cu, the
#   programs of head block 0 storing the map, program (0, 0) the offsets), and the chunk-offsets and slot-map kernels
#   are not launched: two kernels and two kernel boundaries fewer per call (profiled at 0.001 and 0.002 ms at varlen
#   16x1024, r95). Bit for bit the same offsets, map and planes under the interpreter (test_gates_book_same_bookkeeping);
#   built on the CPU only in round 28. r101 (one H100, commit 40b9fa3): its GPU case passed, but the graph sweep at
#   varlen 16x1024 timed it at 0.395 ms against the default's 0.394: no gain, so it stays off.
INTRA_GATES_BOOK = False
# INTRA_V3_DIAG16 (round 19): the v3 inverse of L2-norm calls (the fp16 merges, and the bf16 merges + Newton step that
# tiles with a positive g fall back to) forms the inverses of its four 16x16 diagonal blocks (merges b = 2, 4, 8) per
# warp, as batched [4, 16, 16] dots on the warp's own rows (kernels._diag16_inverse: mma.sync and shuffles, no
# shared memory), and only the merges b = 16, 32 on the whole tile: four whole-tile dots, each behind a shared-memory
# staging step and a CTA barrier, instead of ten. True: every v3 program; "gs1" / "gs2": the one- / two-head programs
# only; False: none. True since round 22, measured on an H100 (no H200 would start; BENCH_H200.md round 22, r76: the
# intra kernel 0.135 -> 0.105 ms at T=8192/16/32, 0.494 -> 0.390 at T=32768/16/32, 0.275 -> 0.249 at varlen 16x1024,
# o rrmse vs fla 9.8e-4 -> 9.9e-4; r77: the whole sm90 target file, 332 passed, and `atrex verify`, 22 passed, with it).
# Triton 3.6 SASS (CPU, scripts/gdn_gluon_sass.py --intra; instructions / bytes of stack per thread, without -> with):
#   one-head programs at 168 registers 3976 / 112 -> 3600 / 56 (fp16 path alone: 2632 -> 2424, BAR.SYNC 25 -> 13);
#   two-head programs at 168: 7304 / 368 -> 6256 / 120;
#   one-head programs at 128 registers with masked products (four CTAs per SM): 4552 / 600 -> 3912 / 96.
INTRA_V3_DIAG16 = True
# Since round 5 (H200, BENCH_H200.md) "auto": the tma kernel when the state pass has at most ~2 programs per SM (the
# 3-stage configuration: T=8192/16/32 0.194 vs 0.209 ms, T=32768 0.746 vs 0.809 ms) and v2 otherwise (varlen
# 16x1024, 1024 programs: tma 0.370 vs v2 0.340 ms, the in-kernel descriptor set-up is paid per program).
STATE_IMPL = "auto"
# STATE_IMPL "tma" (forced) / "auto" (few programs): ``atrex_sm90_gdn_state_output_tma``, v2's math with k, q, A, Aqk
#   and the v block loaded by TMA (no per-element address arithmetic or masks for them; descriptors per
#   TMA_DEVICE_DESC). Taken when ``_tma_operands`` can describe the tensors (K a power of two equal to BK, heads
#   contiguous, batch and time mergeable into one row index, 16-byte aligned bases and row strides, B*T >= 64);
#   otherwise that call runs v2. "v2" forces v2.
# STATE_TMA_PERSISTENT (round 6): the tma kernel with a 1-D grid of at most (CTAs per SM) x (SMs) CTAs, each looping
#   over programs, so that the five in-kernel descriptors are built once per CTA (the non-persistent tma kernel lost to
#   v2 for varlen 16x1024, 1024+ programs: 0.370 vs 0.340 ms). Measured in round 7 (H200): varlen 16x1024 0.341 ms,
#   the same as v2 (0.411 with 3 stages); T=8192/16/32 0.197 vs 0.194 ms. So the descriptor set-up was not what cost tma
#   the varlen case. Off; forced through bench_gdn's variants.
STATE_TMA_PERSISTENT = False
# Removed in round 9 (measured, slower than the Triton tma kernel; BENCH_H200.md rounds 7-8): STATE_IMPL "gl"
#   (Gluon, one warp group, asynchronous wgmma pairs, cp.async ring: T=8192/16/32 state 0.237 ms against 0.194 for
#   tma) and "gl_tma" (the same step fed by TMA: 0.215 against 0.198; varlen 16x1024 0.514 against 0.346 for v2).
# STATE_IMPL "gl_ws" (round 9): ``kernels_gluon.atrex_sm90_gdn_state_output_gl_ws``, the tma kernel's step split over
#   warp partitions: 4 chain warps (K S, U = A X, the state update), 4 output warps (Q S, Aqk U, epilogue) fed S_c and
#   U_c through a double-buffered shared-memory hand-off, and a 1-warp TMA loader; GL_WS_OUT_REGS registers per output
#   thread. BK in {64, 128}, BV in {32, 64}, sm90 only; where it or TMA does not apply, as "tma" does.
GL_WS_OUT_REGS = 128
# GL_WS_FAC_SMEM (round 13, default): gl_ws's loader warp also stores each chunk's row factors (beta, beta e^gamma,
# e^gamma, e^(gamma_last - gamma), e^gamma_last) into the load slot before the slot's ready arrive, loading them one
# chunk ahead; the chain and output partitions read them from shared memory where they use them. Without it each
# chain step issues seven global loads (the next chunk's factors) at its top; in the Nsight profile of r37
# (T=8192/16/32) the chain then waits on the e^gamma_last load in 22% of its stall samples (ptxas moves the
# loop-carried value into place right after the current one's last use, early in the step), and the proxy fence
# after the S store waits on the others. The loader holds the next chunk's factors in 40 registers instead of 24,
# taken from the output partition (GL_WS_OUT_REGS - 16: r15 ran it at 96 no slower).
# Measured (r38, bench_gdn sweep, state kernel ms): T=8192/16/32 0.155 -> 0.145, T=32768/16/32 0.589 -> 0.546 (whole
# call 1.010 -> 0.968). A first version that fetched the factors with cp.async, tracked by the ready barrier, was
# slower (r36: 0.161 against 0.156, 0.611 against 0.588).
GL_WS_FAC_SMEM = True
# Round 13, built, measured on the H200 and removed (each passed its GPU cases, output and final state equal to the
# unchanged kernel's bit for bit; state kernel ms, bench_gdn sweeps):
#   "GL_WS_LATE_U": gl_ws's chain stored U_c for the output partition (store, fence, barrier, arrive) after issuing the
#     state update instead of before it. r36 without FAC_SMEM: T=8192 0.154 vs 0.156, T=32768 0.583 vs 0.588 (within
#     the spread); r38 with FAC_SMEM: 0.154 vs 0.145, 0.575 vs 0.546.
#   "GL_WS_SPLIT_RING": the chain's tiles (k, A, v) and the output partition's (q, Aqk) in two rings with their own
#     barriers and loader warps, so a chain slot is refilled once the chain is done with it. r40: T=8192 0.146-0.149
#     vs 0.143, T=32768 0.561-0.572 vs 0.549 at (chain, output) slots (4, 3), (3, 3), (4, 2).
#   "GL_RC_FAC_LOADS": gl_rc's loader prefetching the factor rows into registers (as FAC_SMEM) instead of cp.async.
#     r39: varlen 16x1024 0.231 vs 0.227.
# Also measured (r39, a configuration of the kept kernel): gl_ws at BV = 64 (2 slots, 64 CTAs), state T=8192 0.227 vs
# 0.146, T=32768 0.877 vs 0.547.
# Round 15, built, measured on the H200 and removed (commit 711cdd2; its 14 GPU cases passed against gl_ws and float64):
#   "GL_WS_LOOKAHEAD": gl_ws's chain formed the next chunk's K S product as e^gamma_last (K_{c+1} S_c) + (K_{c+1}
#     K_c^T) D_c (D_c = e^(gamma_last - gamma) U_c, the update's operand), so that per chunk it waited on two dependent
#     dots (U = A X, then that 64-deep product) and two shared-memory hand-offs instead of three; K_{c+1} S_c ran
#     beside U_c, and the state-free K_c K_{c-1}^T came from a small Triton kernel (atrex_sm90_gdn_kk_prev, [H, B*T,
#     64]) through a sixth TMA tile per load slot (222 KB of shared memory at 3 slots). r51 (bench_gdn
#     sweep, ms): state kernel T=4096 0.092 vs 0.078, T=8192 0.169 vs 0.146, T=32768 0.631 vs 0.547, plus the key
#     products 0.013 / 0.022 / 0.068 (that kernel reads k and writes 67 MB at T=32768: memory-bound). The tensor pipe
#     runs a warp group's wgmmas in issue order, so K_{c+1} S_c (128 deep) still sits between U_c and the next P on
#     the critical path, and the chain now needs chunk c + 1's tiles a step earlier. An order that issued U_c before
#     waiting for the update (to take the update off the path) made ptxas serialise every wgmma of the kernel (C7514:
#     accumulator registers read inside a pipeline stage) and was not run.
#   Where gl_ws's chain step goes (r53, timing-only patches in scripts/diag, state kernel ms at T=8192 / T=32768/16/32):
#     as is 0.145 / 0.551; without the output partition's two dots 0.126 / 0.472; without the chain's three proxy
#     fences 0.139 / 0.524; without the chain's U = A X round trip (store, fence, barrier, dot, wait) 0.133 / 0.496;
#     without output dots and fences 0.119 / 0.432. Two schedule changes aimed at the output dots' share, both the same
#     bits as the default (GPU cases passed), neither faster:
#   "GL_WS_OUT_SPLIT": the output dots as three waited groups of four wgmma steps (a chain wgmma then queues behind
#     at most four). r54: 0.080 / 0.150 / 0.567 against 0.078 / 0.145 / 0.546 (T=4096 / 8192 / 32768).
#   "GL_WS_SU_BUFS" = 3: the S_c / U_c hand-off ring three deep instead of two (the chain may run one more chunk
#     ahead of the output partition). r55: 0.079 / 0.147 / 0.550 against 0.078 / 0.146 / 0.547.
#   So the output dots cost the chain through the SM's shared tensor pipe and shared-memory reads, not through the
#   hand-off or the order in which groups are queued.
# Round 16 (r60, timing-only patch scripts/diag/gl_ws_no_output_loads.patch): without the q and Aqk TMA loads (36% of
#   a step's ~52 KB per CTA) the state kernel took 0.141 / 0.537 ms against 0.146 / 0.551 (T=8192 / T=32768/16/32):
#   the L2 load traffic is not what sets the step, so TMA multicast of the tiles the four V-block CTAs of a head share
#   (a cluster of four) is worth at most a few percent.
# STATE_SPLIT_XU (round 12): the Triton state kernels (v2, tma) pass X (into U = A X) and U (into Aqk U and the state
# update) to their dots as bf16 high + low pairs instead of one bf16 rounding each: three more dots per chunk step.
# "small" (default since round 13): every call with BK <= 32; "small_no_l2norm" (round 12's default): those without
# in-kernel L2 norm (key norms, so U, unbounded) only; "no_l2norm": every call without it; "always"; "never".
# Why: `atrex verify`'s decay-0 probe on case small/no-l2norm-bf16-state (K = 16, no L2 norm, g = 0) was 1% over the
# contract's 5e-3 on the H200 (5.05e-3; 4.57e-3 in the interpreter); with the split 3.79e-3 (r34; interpreter 3.37e-3,
# final state 3.90e-3 -> 1.58e-3). In the interpreter the same probe at K = 64 / 128 is 3.6e-3 / 3.4e-3 without the
# split (2.6e-3 / 2.4e-3 with it), within the bound, and those calls run the Gluon kernels on sm90, which have no
# split; so the default leaves K >= 64 unsplit, the same numerics on every arch.
# Cost (H200, r35, state kernel forced on the L2-norm perf cases, ms): tma T=8192/16/32 0.200 -> 0.258, varlen
# 16x1024 0.373 -> 0.767; v2 0.198 -> 0.327 and 0.341 -> 0.491.
# Round 13 extended the default to BK <= 32 with L2 norm ("small"): the decay-0 probe of case small/varlen-gva-vfirst
# (K = 32, L2 norm, GVA, varlen) was the thinnest margin left, 4.28e-3 on the H200 (r34, r41); split, 3.07e-3 on the
# H200 (r42; final state 3.16e-3 -> 1.12e-3) and 2.76e-3 in the interpreter (0.71 of the unsplit call). Such calls are
# small-K ones; the perf shapes (K = 128) are unaffected.
STATE_SPLIT_XU = "small"
# Round 12, built, measured on the H200 and removed (both correct: their target cases passed against float64 and gl_ws):
#   "gl_ws2": a program's 32 columns as two chains of 16 (each with its own output partition) on one copy of the k, q,
#     A, Aqk tiles, i.e. two chains per SM. Slower: state T=32768/16/32 0.674 ms against gl_ws's 0.587 (r32), T=8192
#     0.175 vs 0.155; 2 slots no better. Each 16-column chain stepped in ~1.32 us against ~1.15 us for gl_ws's one
#     32-column chain, so the step is the chain's sync sequence and shared-memory traffic, not tensor-core work.
#   "gl_z": a two-dot chain, U = Y - Z S with Z = A diag(beta e^gamma) K and Y = A diag(beta) V formed by a fourth
#     (producer) partition one chunk ahead. Slower: state T=32768 0.820-1.248 ms by producer registers (200 / 168 /
#     136) against 0.587, T=8192 0.213-0.321 vs 0.156 (r33): the producer (two dots per chunk with register-scaled
#     left operands, the Z tile through shared memory, repeated for each of a head's four V blocks) became the
#     bottleneck. (Its output differed from fla's by 3.3e-3 rrmse against 9.8e-4 for gl_ws; that is about fla's own
#     distance from the float64 recurrence, 3.3e-3 in round 1, so it shows different rounding points, not a measured
#     loss of accuracy: the kernel's float64 cases passed.)
# Since round 9 (H200, r15, bench_gdn sweep in one process): STATE_IMPL "auto" takes gl_ws where it took tma (few
# programs, TMA-describable tensors, BK in {64, 128}): T=8192/16/32 state kernel 0.157 ms against 0.197 (tma), whole
# call 0.307 against 0.348 ms; outputs equal to tma's to 5e-6 rrmse, final state identical. Not where Gluon cannot
# run: under the Triton interpreter (no Gluon interpreter) or with a Triton older than 3.6 (the versions it was
# compiled with: 3.6, run on the H200; 3.9, compiled on CPU); those calls take tma. Varlen 16x1024 keeps v2 (gl_ws
# 0.394 vs 0.343 ms: one 140 KB CTA per SM against two).
STATE_AUTO_GL_WS = True
# STATE_IMPL "gl_rc" (round 10): ``kernels_gluon.atrex_sm90_gdn_state_output_gl_rc``, gl_ws's partitions with the state
#   carried transposed (S^T, BV = 64 = the wgmma M) so that each of the chain's three dependent dots takes its left
#   operand from registers: no shared-memory store, fence or barrier between them. Persistent (GL_RC_PERSISTENT): a 1-D
#   grid of at most one CTA per SM loops over the (V block, sequence x value head) items. GL_RC_STAGES load slots
#   (3: 216 KB of shared memory at K = 128). BK in {64, 128}, V a multiple of 64 (whole V blocks: the kernel masks a
#   partial block, but no GPU case has run one), sm90 only; elsewhere as "tma".
GL_RC_STAGES = 3
GL_RC_PERSISTENT = True
# GL_RC_QSIDE (round 24): where the state pass is gl_rc and the call L2-normalises q, k in the kernel, the q side of
#   the intra work moves into gl_rc's output partition, which otherwise waits on the chain: it normalises the raw q
#   tile in its load slot and forms Aqk = tril(Q K^T e^(gamma_r - gamma_c)) in registers (the intra kernel's arithmetic
#   and rounding points; the fused kernel's output partition, round 20). The intra kernel (QSIDE) then reads no q and
#   writes neither the normalised q copy nor Aqk. At varlen 16x1024 (H = HV = 32) that is 335 MB of the two kernels'
#   ~1.36 GB of HBM traffic (round 13: the state pass there runs at 63% of DRAM bandwidth, the intra kernel is bound
#   by its instructions, a third of which are the q side), for one more 64x64x128 dot per chunk in the output
#   partition of each of the head's two V blocks.
# r81 (one H100, bench_gdn sweep, fla-core 0.6 in the process): varlen 16x1024 intra 0.249 -> 0.150 ms, gl_rc 0.265 ->
# 0.318, whole call 0.536 -> 0.487 ms (2.43x -> 2.68x fla); graph bench 0.4853 ms against fla 1.2891 (2.66x; the
# default of r80, 0.5346, 2.42x); its 14 GPU cases passed. On by default since round 24.
GL_RC_QSIDE = True
# Built, measured and removed (round 24, r82-r83; commit 54ff45d): a "scale" form that left q unnormalised in its slot
# and scaled the dots' rows by the fp32 inverse norms (no store, fence or barrier before Q K^T). r82: gl_rc 0.298
# against 0.318 ms, whole call 0.467 against 0.487; but its normalised q is never rounded to the input dtype, and in
# r83 one case (K = 64, strong decay, initial state) was further from float64 than the call without QSIDE (output
# rrmse 3.37e-3 against 2.87e-3), outside the 1.1x + 2e-4 the check allows: not taken.
# registers per thread of gl_rc's output partition (GL_WS_OUT_REGS until round 24: 128). r82 (H100, varlen 16x1024,
# QSIDE, bench_gdn sweep): 152 -> state pass 0.306 ms, whole call 0.479; 128 -> 0.318, 0.487; 104 -> 0.383, 0.546.
# r83: test_rc_qside's inplace cases passed at 152; graph bench 0.4844 ms against fla 1.2926 (2.67x).
# r85 (H100, commit 6ce9b42, QREG, bench_gdn sweep, one process): 136 -> gl_rc 0.320 ms, whole call 0.519; 152 -> 0.303,
# 0.472; 168 -> 0.292, 0.460; 184 -> 0.275, 0.446 (2.93x fla's 1.307). The chain partition keeps its 256 registers up
# to 216 output registers (the CTA's pool is 12 warps x 168: 128 x 256 + 128 x 216 + 128 x 24 of its 64,512); above
# that Triton takes them from the chain (232: 248). r86 / r87 (same kind of sweep, commits 53986fd / 8773df3): 184 ->
# 0.281 / 0.279, 200 -> 0.276 / 0.275, 216 -> 0.282 (r86). r88: the whole sm90 target file passed at 200 (386 of 386);
# graph bench 0.4577 ms against fla 1.2719 (2.78x). 200 by default since round 25. (The slot form at 184: 0.311, r86:
# the registers pay only with GL_RC_QREG.)
# r89 on an H200 (commit e44a23e, graph bench): varlen 16x1024 0.4545 ms against fla 1.0538 (2.32x; the H200's fla is
# ~20% faster than the H100's, ATREX's call ~1%: these kernels are not bound by HBM bandwidth).
GL_RC_OUT_REGS = 200
# GL_RC_QREG (round 25): gl_rc's QSIDE output partition normalises q into registers (kernels_gluon._q_regs, the wgmma
#   left-operand layout) instead of in its load slot: the same arithmetic and rounding to the input dtype, with no
#   slot store, fence or partition barrier before Q K^T, and Q S_c takes the same registers. The load is 8 ldmatrix.x4
#   per thread, the row sums 4 shuffles (Triton 3.6 SASS).
# r84 (one H100, bench_gdn sweep, fla-core 0.6 in the process, commit 534ad19): varlen 16x1024 gl_rc 0.311 -> 0.300 ms,
# whole call 0.481 -> 0.469 (2.71x -> 2.78x fla); its variant hook passed the 7 variant cases against float64. On by
# default since round 25.
GL_RC_QREG = True
# Round 26: gl_rc's output partition was the step's bound. r90 (one H100, commit fdc8344, varlen 16x1024, timing-only
# patches, scripts/calls/gdn-r90.sh): gl_rc 0.274 ms; without the output tile store 0.244; without Q K^T and the decay
# tile 0.247; without any output dot 0.242; without dots and store (the chain alone) 0.191. Nsight Compute (same call): the
# output partition issues ~816 instructions a chunk against the chain's ~450 and never waits for the chain (its
# su_ready wait: 2 of 10,023 samples); its loop's back edge waits 12% of its samples for its 16 global stores to
# drain, and the chain waits a quarter of its samples for load slots the output partition has not yet released.
# GL_RC_QSCALE: with GL_RC_QREG, the raw q feeds Q K^T and Q S_c; 1 / ||q_r|| and scale become row factors (in the
#   decay tile's exponent and in e^gamma), so q is neither scaled nor rounded per element and the output is not
#   scaled (the dots see the exact input q: at least as accurate as the normalised, rounded copy).
# GL_RC_EARLY_FREE: with GL_RC_QREG, the output partition releases a load slot as soon as Aqk is formed.
# GL_RC_OUT_TMA: whole chunks' output tiles leave by TMA store from shared memory (the Aqk ring, never loaded with
#   QSIDE, is not allocated); a sequence's last, partial chunk keeps the masked store. Needs the output describable as
#   [B*T, HV*V] (the launcher's own output always is).
# Built in round 26 (the output partition's loop in static SASS: 806 -> 608 instructions). r91 (one H200, commit
# 6387c74 with the three on, bench_gdn sweep without fla, varlen 16x1024, gl_rc with one chain): gl_rc 0.225 ms, whole
# call 0.383; without QSCALE 0.245 / 0.405, without OUT_TMA 0.255 / 0.413, without EARLY_FREE 0.220 / 0.379 (noise
# level); round 25's form 0.281. EARLY_FREE and OUT_TMA changed no bit in their GPU cases.
# QSCALE's accuracy: its q is the exact L2-normalised input (never rounded to the input dtype), where the contract's
# recurrence (CONTRACTS 2.3, as fla does) rounds the normalised q to the input dtype first. Against that recurrence the
# output is within the contract bound but further than round 25's, whose q is the contract's bit for bit (r91: 3.54e-3
# against 3.13e-3, 3.37e-3 against 2.87e-3 at K = 64 with strong decay, 0.44e-3 against 0.39e-3 in fp16; the state
# is bit for bit round 25's). Round 24 measured the same departure in its "scale" form and did not take it for 6% of
# the call; round 26 takes it with gl_rc2, which is built on this q side and is what brings the varlen call to ~3x.
# test_rc_qscale checks both sides of this: within the bound of the contract's recurrence, and at least as close as
# round 25 to the recurrence with the normalised q unrounded. On by default since r91.
GL_RC_QSCALE = True
GL_RC_EARLY_FREE = True
GL_RC_OUT_TMA = True
# GL_RC_QNORM_MMA: with GL_RC_QSCALE and bf16 inputs, the q rows' squared norms by a 64x8xK wgmma of the bf16-rounded
#   squares against a ones tile (kernels_gluon._q_raw_regs_mma) instead of 64 unpacks and 64 FMAs per thread.
# r91: wrong at K = 128 (output rrmse 0.41, and an illegal address) with round 26's N-major ones tile, right at K = 64;
# its speed there: gl_rc 0.219 against 0.225 ms, gl_rc2 0.196 against 0.198. Round 27 made the tile K-major (the k
# tile's operand form); r95 (H200, commit f011143): its 28 GPU cases passed (test_rc_qscale, test_ws_qscale and
# test_rc_two_chains_same_bits_as_gl_rc with it, its variant hook against float64), gl_rc2 0.196 against 0.198 ms
# (bench_gdn sweep, varlen 16x1024). r98 (one H100, commit 7e03d9a): the whole target file with it on (and round 28's
# other candidates): none of the 41 failures involved it (below, GL_WS_QSCALE); by CUDA-graph replay, varlen 16x1024
# whole call 0.410 ms against 0.413. On since r98.
GL_RC_QNORM_MMA = True
# GL_RC_LATE_FACTORS (round 26): gl_rc's chain loads its v tile and X factors after the P^T wait (kernels_gluon
#   ._rc_chain's LATE_FAC): the same bits, ~32 fewer registers at the step's peak (CPU-compiled: spill stores 11 -> 2
#   at its 256 registers; none reloaded inside the step loop at 168). Its cost, the loads' latency on the chain's path,
#   is unmeasured (no device after r90): off until swept (r91's rc26_late_fac).
GL_RC_LATE_FACTORS = False
# GL_RC_TWO_CHAINS (round 26): where gl_rc runs with QSIDE and V = 128, kernels_gluon.atrex_sm90_gdn_state_output_gl_rc2
#   instead: a whole value head per work item, its two 64-column V blocks stepped by two chain partitions side by side
#   on k, q, A tiles loaded once, one output partition forming Q K^T and Aqk once per chunk for both (its block comment).
#   2 load stages; GL_RC2_CHAIN_REGS for the second chain (the first keeps the rest of the 512 x 128 pool: 168 with
#   the defaults), GL_RC2_OUT_REGS for the output partition. Its q side is GL_RC_QSCALE's (whatever that knob says).
#   The knob is "auto"'s choice; STATE_IMPL "gl_rc" forces the one-chain kernel, "gl_rc2" this one (where it applies,
#   else gl_rc).
# r91 (one H200, bench_gdn sweep without fla, varlen 16x1024): gl_rc2 0.198 ms against gl_rc's 0.225 (same round-26
# output options), whole call 0.356 against 0.383; at 136 output registers (176 chain) 0.246. Its 7 GPU cases were bit
# for bit gl_rc's (QSCALE), its variant hook passed 7 cases against float64. On by default since r91.
GL_RC_TWO_CHAINS = True
GL_RC2_CHAIN_REGS = 168
# GL_RC2_ITEMS_PER_SM (round 33): "auto" takes gl_rc2 only where the call has more (sequence, value head) items than
#   this many per SM (``N * HV > GL_RC2_ITEMS_PER_SM * SMs``); with fewer, gl_rc2 leaves SMs idle while gl_rc's
#   one-chain items, twice as many, spread each long sequence's heads over more SMs. 0: gl_rc2 wherever
#   GL_RC_TWO_CHAINS applies (rounds 27-32). r120 / r121 (one H100, bench_gdn graph sweeps without fla, fp32 initial
#   states, two processes each; gl_rc2 -> gl_rc, ms):
#   - 8 sequences of 1 to 3500 tokens at H = 8, HV = 16 (Qwen3-Next at TP 2; 128 items): 0.199 / 0.198 -> 0.160 / 0.159;
#   - 4 x 2048 at HV = 16 (64 items): 0.136 / 0.135 -> 0.107 / 0.106;
#   - 8 x 1024 at HV = 16 (128 items, all of one length, the one loss): 0.106 / 0.105 -> 0.109 / 0.109;
#   - unchanged, since they keep gl_rc2: 16 x 1024 at HV = 32 (512 items; gl_rc 0.421 / 0.420 against 0.411 / 0.411),
#     20 sequences of 1 to 3500 tokens at HV = 32 (640 items; 0.423 / 0.421 against 0.419 / 0.419).
#   gl_rc2 gains ~3% where every item has the same length and the items just fill the SMs; it loses 20% where one long
#   sequence sets the time (the usual chunked-prefill batch). The host does not know the lengths (cu_seqlens stays on
#   the device), so the rule goes by the item count alone.
GL_RC2_ITEMS_PER_SM = 1
# GL_RC_SCHEDULE (round 36): the persistent varlen state pass (gl_rc / gl_rc2) hands its items (sequence x value head
#   [x V block]) round-robin to min(items, SMs) CTAs in sequence order, so the order of the caller's sequences sets the
#   longest CTA's chunk steps: in the serving rows' mixed batches 64 (TP 2, 8 sequences) and 88 (TP 1, 20 sequences),
#   where longest-first scheduling reaches 55 and 65. With the knob a one-program kernel
#   (kernels.atrex_sm90_gdn_item_schedule, on the device from cu_seqlens: no host work, capture-safe) writes a
#   longest-first order a round of CTAs at a time (56 and 74), which the state kernel's partitions read per item
#   (kernels_gluon._sched_item). Under PDL it runs beside the call's first kernel (round 37). Items and arithmetic are
#   unchanged, so the outputs are the same bits. Rule (``_item_schedule``): at least 2 and at most
#   GL_RC_SCHED_MAX_ROUNDS rounds of items, at most GL_RC_SCHED_MAX_SEQS sequences.
#   r136 (one H100, bench_gdn graph sweep with fp32 initial states, two processes): mixed8 0.159 -> 0.149 ms, mixed20
#   0.422 -> 0.387, but the equal-length varlen 16x1024 goal batch (identity order) 0.409 -> 0.423: off. "snake": the
#   same sort of sequences, then the rounds of sorted items in alternating direction with no per-round load sort (300
#   random batches: 56.6 chunk steps against 54.6 by load, 73.3 round-robin; mixed20 81 against 74).
#   Round 37, in the order tried:
#   - the schedule kernel moved from right before the state kernel to second in the call (after the chunk offsets),
#     so that the state kernel's first-item initial-state prefetch (H0PF 1) reads the order before its PDL wait again;
#     r137 (H100): varlen 0.411 -> 0.425 (by load) / 0.419 (snake), no better;
#   - "cta": no schedule kernel; each state-kernel CTA ranks the sequences (an N x N comparison, N <= 64) and forms
#     the snake order's items of its own slots in its prologue (kernels_gluon._cta_slots). r137c: varlen 0.410 ->
#     0.418, mixed8 0.159 -> 0.146, mixed20 0.418 -> 0.406 (by load 0.396), mixed20p (the caller's order already
#     better) 0.375 -> 0.396-0.408. Nsight Compute (r138): the cost is inside the state kernel (226 -> 232-235 us;
#     its SASS spills 39 / 37 STL / LDL against 20 / 28);
#   - the CTA's items in a shared-memory table (kernels_gluon._sched_table; spills 17 / 23). r139: varlen 0.415 ->
#     0.420 (cta), mixed8 0.160 -> 0.149, mixed20 0.421 -> 0.398 (cta) / 0.391 (by load), mixed20p 0.380 ->
#     0.392-0.400: off;
#   - the schedule kernel keeps the caller's order where neither sort shortens round-robin's longest CTA (mixed20p:
#     70 steps against 74 / 81). r141 (H100, round 38): mixed20p 0.377 -> 0.383 (snake; r139 0.400) / 0.389 (by
#     load), varlen 0.409 -> 0.411 (cta) / 0.413 (snake), mixed8 0.160 -> 0.149 (cta), mixed20 0.421 -> 0.390 (by
#     load): still no mode without a loss; off.
GL_RC_SCHEDULE = False
GL_RC_SCHED_MAX_ROUNDS = 16
GL_RC_SCHED_MAX_SEQS = 1024
# ONE_SEQUENCE_FIXED (round 33): a varlen call of one sequence takes the fixed-length plan. CONTRACTS.md §2 fixes
#   cu_seqlens[0] = 0 and cu_seqlens[N] = T, so with N = 1 (and B = 1, which varlen requires) the call is the
#   fixed-length call B = 1, T, on the same tensors: no chunk-offsets or slot-map kernel, and the fixed-length intra
#   programs (two value heads per program under GVA). vLLM passes cu_seqlens for every prefill, also for one prompt.
#   r120 (one H100, bench_gdn graph replay, Qwen3-Next at TP 4, 8192 tokens): 0.187 ms as one varlen sequence
#   against 0.173 fixed-length.
ONE_SEQUENCE_FIXED = True
# SEQ_PARALLEL (round 34): the sequence-parallel state pass, for a fixed-length call (B = 1: one prompt, also one
#   varlen sequence under ONE_SEQUENCE_FIXED) whose (value head x 32 columns) blocks fill at most a quarter of the SMs
#   (Qwen3-Next at tensor-parallel 4 or 8). There the state pass runs one chain of T / 64 dependent steps per block on
#   a few SMs: at TP 4 with 8192 tokens, 128 steps on 32 CTAs took 0.154 of the call's 0.174 ms (r120, an H100). Cut
#   into NSEG segments (``_seq_segments``), the call runs: the intra kernel as before; the segment pass
#   (kernels_gluon.atrex_sm90_gdn_state_segments_gl), every segment's zero-start state R_s and transition M_s at once,
#   T / (64 NSEG) steps on NSEG times the CTAs; the fp32 composition (kernels.atrex_sm90_gdn_segment_scan), each
#   segment's initial state and the final state; and the usual state pass with the segments as sequences from those
#   states, which forms the outputs in T / (64 NSEG) steps. CPU probe of the arithmetic with the kernels' bf16
#   rounding points: scripts/gdn_segment_scan.py (errors 0.97-1.01x the single chain's).
SEQ_PARALLEL = True
SEQ_PAR_MIN_SEGS = 4     # fewer segments cannot pay for the second pass (two passes of T / NSEG steps)
SEQ_PAR_MAX_SEGS = 16
SEQ_PAR_MIN_CHUNKS = 16  # chunks per segment at the least (r129, TP 4: T = 2048 0.054 ms against the single chain's
#                          0.051, T = 4096 0.077 against 0.093; so no segment shorter than 1024 tokens)
SEQ_PAR_BV = 64          # the segment pass's column block
SEQ_PAR_SCAN_PREC = "tf32x3"  # the composition's fp32 products: "tf32x3" (three tf32 tensor-core passes) or "ieee"
SEQ_PAR_SCAN_BV = 8      # the composition's column block (its programs: HV x V / SEQ_PAR_SCAN_BV). r132 (one H100,
#                          scripts/gdn_scan_probe.py, the kernel alone by graph replay, tf32x3, 8 warps, pointer
#                          loads): 8 columns 9.4 / 16.0 / 29.5 us at 4 / 8 / 16 segments (HV = 8), against 16 columns'
#                          13.9 / 25.0 / 50.5 and 32's 18.0 / 32.3 / 65.0; 4 warps 1.4-3x slower. The launch's K = 128
#                          specialisation (scripts/gdn_gluon_sass.py --match segment_scan, Triton 3.6) holds M_s's
#                          pointers and tf32 halves in 180 registers at 8 columns, but spills at 16 (255 registers and
#                          a 176-byte stack) and 32 (256 bytes).
#                          A form loading M_s and R_s through in-kernel TMA descriptors instead (round 35, commit
#                          1388f0c: 142 registers against 180) passed its target test on an H100 but was slower (r133:
#                          the kernel alone 12.3 / 20.5 us against 9.4 / 16.0, TP 8 8k 0.081 against 0.077 ms): removed.
# GL_RC_L2_PREFETCH (round 27): gl_rc's / gl_rc2's loader prefetches the item's next chunk into L2 once a chunk's loads
#   are issued (kernels_gluon._rc_loader's L2PF). r97 (one H100, Nsight Compute of gl_rc2, varlen 16x1024): DRAM 84%
#   busy (2.80 TB/s), and each chain waited about half its samples on its load slot's ready barrier, so the 2-stage
#   ring (no room for a third next to two chains' hand-offs) leaves the loads a single step to land. Built and
#   compiled on the CPU only (no device time left in round 27); r98 measured it slower (GL_RC_HT_REMAT below): off.
GL_RC_L2_PREFETCH = False
# GL_RC_HT_REMAT (round 27): gl_rc's / gl_rc2's chains recompute the final state's store indices after the chunk loop
#   (kernels_gluon._rc_chain's HT_REMAT): the same stores, without ~40 values spilled at the partition's start and
#   reloaded (missing L2, r97) at every item's end. CPU-compiled gl_rc2, varlen launch: stack 296 -> 112 bytes, local
#   loads 128 -> 36. Built on the CPU in round 27.
# r98 (one H100, commit 7e03d9a, bench_gdn sweep by CUDA-graph replay, varlen 16x1024, ATREX alone): bit for bit the
# call without it in its 12 GPU cases (gl_rc and gl_rc2, 132- and 3-CTA grids); whole call 0.405 ms against the
# default's 0.413 (-2%). The L2 prefetch measured slower there (0.422; with HT_REMAT 0.407) and stays off. On since r98.
GL_RC_HT_REMAT = True
# GL_RC_H0_PREFETCH (round 29): with an initial state, gl_rc / gl_rc2 prefetch each item's initial-state block
#   into L2 ahead of the chain's load of it, which otherwise stalls the chain at every item's start (32 KB per chain
#   from HBM, behind a ring that keeps the DRAM ~84% busy). The CTA's first item at the kernel's start, before the PDL
#   wait (h0 and cu_seqlens are inputs of the call, complete before its first kernel waited); then 1: the loader, at
#   the start of each later item (STAGES chunks before the chains reach it), 2: the loader, the next item's block at
#   the start of each item (L2::evict_last). Only where h0's k or v stride is 1. r101 (H100, graph): the perf varlen
#   case with an fp32 initial state in the state_v_first layout took 0.412 ms, bench_gdn's same call without one 0.394.
#   Round 30, r102 (H100, graph replay, bench_gdn --h0, three processes): default 0.413 / 0.411 / 0.412 ms, mode 1
#   0.410 / 0.410 / 0.409, mode 2 0.414 / 0.415 / 0.414; its 24 GPU cases bit for bit the call without it; the perf
#   varlen graph bench with mode 1 0.4063 ms against fla-core 0.6's 1.2707 (3.13x; r101 at 0 on another H100:
#   0.4119). Mode 1 since round 30.
GL_RC_H0_PREFETCH = 1
GL_RC2_OUT_REGS = 152
# GL_WS_QSIDE (round 25): GL_RC_QSIDE for gl_ws (the state pass of few programs: T=8192 and T=32768 at H = 16,
#   HV = 32): where the state pass is gl_ws with its factor rows in the load slots (GL_WS_FAC_SMEM) and the call
#   L2-normalises q, k in the kernel, the intra kernel reads no q and writes no q copy and no Aqk, and gl_ws's output
#   partition forms the normalised q and Aqk in registers (GL_RC_QREG's form), once for each of a head's V-block CTAs.
#   GL_WS_QSIDE_OUT_REGS registers per output-partition thread (the chain keeps the rest of the CTA's file).
# r84 (one H100, bench_gdn sweep, commit 534ad19; its 7 GPU cases passed): slower. T=32768/16/32 intra 0.390 -> 0.264
# ms but gl_ws 0.552 -> 0.781 (152 registers; 0.748 at 128, 0.773 at 184), whole call 0.947 -> 1.048 (1.010 at 128);
# T=8192 0.260 -> 0.277 (0.267). The chain step grows by ~0.4 us: each of a head's four 32-column CTAs forms the whole
# 64x64x128 Q K^T (more tensor work than its own two output dots) and the q normalisation, and the output partition,
# which had slack at 32 columns, then bounds the step. Off; kept as a tested option (GPU cases and compile gate).
# With GL_WS_QSCALE (below) faster than without it (r97, r98): on since r98.
GL_WS_QSIDE = True
# GL_WS_QSCALE (round 26): with GL_WS_QSIDE, gl_ws's output partition takes gl_rc's round-26 q side (GL_RC_QSCALE with
#   its early slot release, and GL_WS_QNORM_MMA's tensor-core norms where that knob is on): r84 had the QSIDE output partition bound gl_ws's
#   step (~1.46 us against the chain's ~1.07 at T=32768), and this form issues about a quarter fewer instructions. Built
#   and compiled on the CPU only (no device after r90); off, as GL_WS_QSIDE, until measured.
# r95 (H200): test_ws_qscale's 14 cases passed. r97 (one H100, bench_gdn sweep without fla, commit 565196f): with
# GL_WS_QSIDE, T=32768/16/32 whole call 0.905 ms against the default's 0.947 (intra 0.262, gl_ws 0.637 against 0.391,
# 0.551), T=8192 0.258 against 0.266; with QNORM_MMA as well 0.916 / 0.261 (slower).
# r98 (one H100, commit 7e03d9a, bench_gdn sweeps by CUDA-graph replay, ATREX alone): T=32768/16/32 0.921 ms against
# 0.944, T=8192 0.241 against 0.254. The whole target file with both on: 41 failures, all comparisons of gl_ws with
# another path at a "same roundings" tolerance (the fused kernel and gl_rc against the two-kernel gl_ws call, tma
# against gl_ws, FAC_SMEM off (which has no QSIDE) against on, round 25's QSIDE form, and the fp16 inverse guard's
# 1e-3 between two intra forms: 1.19e-3), the departure GL_RC_QSCALE took in round 27 (the normalised q not rounded).
# Those comparisons now run gl_ws in its pre-r98 form (GL_WS_QSIDE off; test_ws_qside: round 25's QSIDE form), as
# round 27 did for gl_rc; test_ws_qscale checks this form against the contract. On since r98. r101 (one H100, commit
# 40b9fa3): the whole target file passed with it, the pinned comparisons included (491).
GL_WS_QSCALE = True
# GL_WS_QNORM_MMA (round 27): GL_RC_QNORM_MMA's norms for gl_ws's QSCALE output partition, a knob of its own since r97
#   measured it slower there (above) whatever it does for gl_rc. Off.
GL_WS_QNORM_MMA = False
GL_WS_QSIDE_OUT_REGS = 152
# GL_WS_OUT2 (round 32): gl_ws with two output partitions of 4 warps (kernels_gluon._ws_output's NOUT = 2), one taking
#   the even chunks and one the odd, each with GL_WS_OUT2_REGS registers with the QSIDE output partition, else the
#   one-partition count (a 512-thread CTA: the chain keeps 512 - 2 x that - the loader's 48 per thread, 192 with the
#   defaults). Needs GL_WS_FAC_SMEM; not with GL_WS_QNORM_MMA. Why: r111 (one H100, Nsight Compute of gl_ws at
#   T=32768/16/32, main's defaults, 651.7 us) had the output partition busy every chunk (its wait for the chain's S_c / U_c: 19 of its 24012 stall samples) and the
#   chain waiting for it to free the hand-off buffer (9% of the chain's); r112 timed the same launch with an idle
#   output partition at 394.8 us against 662-665 (scripts/diag/gl_ws_output_idle.patch). The output partition's
#   chunk (the q norms, Q K^T, Aqk, Q S, Aqk U, the stores) takes longer than a chain step, so two of them alternate.
# r114 (one H100, commit 6b9534f): its 18 GPU cases bit for bit the one-partition call (and test_ws_qscale's 14
#   passed). bench_gdn sweep by graph replay, whole call, ms: T=32768/16/32 default 0.926, OUT2 0.917 (152 registers
#   per output partition, chain 160), 0.892 (136, chain 192), without the QSIDE form 0.951; T=8192/16/32 0.241, 0.236,
#   0.231, 0.255. gl_ws alone (Nsight Compute, T=32768): 661.5 -> 614.3 us (152). Less than r112's idle output
#   partition (394.8 us): the two partitions still share the SM's tensor pipe and shared memory with the chain, and
#   the serialisation was only part of the cost (the chain's wait for the hand-off buffer: 9% of its samples in r111).
# r115 (H100, commit 5859263, on by default at 136): sweep T=32768 one partition 0.926, two at 136 0.913, 152 0.928,
#   128 0.899, 120 0.904 (the same call varies by up to 4% within a process: 128 and 136 are not told apart);
#   T=8192 0.242, 0.233, 0.237, 0.232, 0.232. Graph benches with fla-core 0.6: T=32768 0.9068 ms (2.54x; round 31's
#   r108 0.9216, 2.50x), T=8192 0.2305 (2.44x; 0.2408, 2.33x). r116: the whole target file at this default passed (534).
GL_WS_OUT2 = True
# GL_WS_OUT2_REGS: each QSIDE output partition's registers under GL_WS_OUT2 (the chain gets 512 - 2 x this - 48)
GL_WS_OUT2_REGS = 136
# PDL (round 28): programmatic dependent launch between the kernels of a call (and into the next call's first kernel).
#   Each kernel of ``_PDL_KERNELS`` is launched with Triton's ``launch_pdl`` (the launch attribute
#   PROGRAMMATIC_STREAM_SERIALIZATION; under stream capture a programmatic edge of the graph) and its PDL constexpr,
#   which makes ``griddepcontrol.wait`` then ``griddepcontrol.launch_dependents`` its first statements
#   (``kernels._pdl_enter``, ``kernels_gluon._pdl_enter``): the next kernel's CTAs are launched once every CTA of this
#   one has started, take the SM slots this one frees in its last wave and wait there; nothing of them touches memory
#   before this kernel has completed and flushed. The stream's order is kept for every kernel (each waits first, so
#   none completes before its predecessor). What it can save is the launch latency and CTA placement at each of the
#   call's kernel boundaries (five at varlen: chunk offsets, slot map, gates, intra, state pass), which r95's graph
#   bench (0.3686 ms) had ~10-18 us above the sum of the kernels' profiled times (0.350). Not taken by the split state
#   pass (two streams) nor under the interpreter.
# r98 (one H100, commit 7e03d9a, bench_gdn sweeps by CUDA-graph replay, ATREX alone; its 5 GPU cases passed, bit for
# bit the call without it, eager and in a graph of three chained calls): varlen 16x1024 (gl_rc2) 0.409 ms against
# 0.413; but with gl_ws as the state pass slower, T=32768/16/32 1.009 against 0.944, T=8192 0.263 against 0.254. gl_ws
# runs one CTA per (V block, head), 128 CTAs that fit two to an SM: launched early, into the SMs the intra kernel's last
# wave frees first, they can pair up on some SMs while others stay idle for the whole state pass (an inference; not
# profiled). gl_rc / gl_rc2 take a whole SM per CTA, so they cannot. Since r98 a call takes PDL only where its state
# pass is gl_rc or gl_rc2 (``_with_pdl``); gl_ws is not in the list. r101 (H100, round 28's defaults, graph sweep):
# varlen 16x1024 0.394 ms with PDL, 0.398 without; the whole target file passed (491).
PDL = True
_PDL_KERNELS = frozenset({
    "atrex_sm90_gdn_chunk_offsets", "atrex_sm90_gdn_slot_seq", "atrex_sm90_gdn_gates", "atrex_sm90_gdn_intra_chunk_v3",
    "atrex_sm90_gdn_item_schedule", "atrex_sm90_gdn_state_output_gl_rc", "atrex_sm90_gdn_state_output_gl_rc2"})
_PDL_STATE_KERNELS = ("atrex_sm90_gdn_state_output_gl_rc", "atrex_sm90_gdn_state_output_gl_rc2")
# FOLD_QK_NORM (round 10; measured on the H200 in round 11, r27: off): with in-kernel L2 norm, the intra
#   kernel writes no normalised q / k copies (at varlen 16x1024 or T=32768 those writes are ~270 MB of the intra
#   kernel's ~680 MB of HBM traffic) and folds the row norms into the factor planes instead (kernels.
#   _store_row_factors_fold: 1/|k| into planes 2 and 4, e^gamma/|q| into a plane 5); the state kernel reads the raw
#   q, k. gl_rc and state v2 read the folded factors (EG_PLANE = 5); where "auto" would take tma / gl_ws, the call
#   runs state v2. Numerics: the contract (and fla) round the normalised q, k to the input dtype before every dot; the
#   folded state pass multiplies the raw rows' dot products by the fp32 inverse norms instead, so it departs from that
#   rounding. Triton interpreter, state v2: final-state rrmse against the float64 recurrence 1.6e-3 -> 2.5e-3 (T=1),
#   2.1e-3 -> 2.8e-3 (T=63), 0 -> 2.4e-3 (g = -20, where the unfolded call matches the reference's rounding exactly),
#   outputs within 0.3e-3 of the unfolded ones; bounds 5e-3 / 8e-3.
# Round 11 (H200, r27, bench_gdn sweep): intra 3-5% faster (T=8192/16/32 0.123 vs 0.128 ms, T=32768 0.470 vs 0.495,
# varlen 16x1024 0.256 vs 0.264), whole call no faster: T=8192 0.344 (state v2: gl_ws cannot read the folded
# factors) / 0.333 (gl_rc) vs 0.290, T=32768 1.301 / 1.252 vs 1.099, varlen 0.493 / 0.489 vs 0.496.
FOLD_QK_NORM = False
# Since round 10 (H200, r22-r23, bench_gdn sweeps in one process): "auto" takes gl_rc where it applies and the call
# has more BV = 32 state programs than SMs. There gl_ws (one 193 KB CTA per SM) needs more than one wave of ~1.2 us
# steps, while gl_rc covers 64 V columns per ~1.5 us step: varlen 16x1024 (H = HV = 32) state pass 0.220-0.226 ms
# against 0.342 (v2) and 0.394 (gl_ws); whole call under CUDA graphs 0.504 against 0.674 ms. With fewer programs the
# per-step latency decides, and gl_ws's is lower: T=8192/16/32 0.155 (gl_ws) against 0.192-0.201 ms (gl_rc, 64 CTAs),
# T=32768 0.590 against 0.737. Between SMs and 2 x SMs programs the rule follows that model, not a measurement.
STATE_AUTO_GL_RC = True
STATE_PREFETCH = True  # v2: load v / factors one chunk ahead into registers by hand (else Triton pipelines them)
# State v2 with at most ~2 programs per SM: a third pipeline stage (T=8192: 0.209 vs 0.275 ms; T=32768: 0.811 vs
# 1.058 ms); with more programs the extra shared memory costs occupancy (varlen 16x1024: 0.483 vs 0.341 ms).
_STATE_V2_FEW_CFG = (32, 4, 3)
V2_MAX_BK = 128  # the v2 kernels run for padded K <= 128 (larger K: v1 pair)
# Split state pass (round 5 built it, round 6 measured it): for one-sequence-per-batch-row calls with
# T >= SPLIT_MIN_T, cut the time axis into SPLIT_PIECES pieces at chunk boundaries and pipeline them: piece j+1's intra
# kernel runs on the caller's stream beside piece j's sequential state kernel on a side stream (``_gdn_split``). The
# side stream has priority SPLIT_SIDE_PRIORITY (CUDA: lower is more urgent) so that the state chain, the critical
# path, is scheduled ahead of the intra CTAs it shares the SMs with.
# Round 6 (H200, two sweeps, BENCH_H200.md): at T=8192/16/32 every split was slower (2 pieces 0.543 vs 0.393 ms):
# an intra CTA beside a state CTA runs at a fraction of its speed (the intra kernel's summed time rose from 0.147 to
# 0.19-0.21 ms) and the state kernel slows too. At T=32768 the first sweep had 4 pieces at 1.206 vs 1.313 ms
# unsplit, the second (another machine start) 1.851 vs 1.316 ms (3 pieces 1.210, then 1.465): how the two streams'
# CTAs interleave is not controlled, and the result was not reproducible. Off; 4 pieces from 16384 when enabled.
# Round 18, built, measured on the H200 and removed (commit e6944a4; BENCH_H200.md, round 18): "FUSED", one Triton
# kernel per call, one program per (V block, sequence x value head) that formed each chunk's intra operands (v3's math)
# and took the state step on them, reading q, k, v, g, beta once and writing only o and the final state. Under the
# interpreter it equalled the two-kernel call bit for bit (13 cases x 4 configurations). On the H200 it was slower
# (bench_gdn sweeps, whole call, eager): varlen 16x1024 (H = HV = 32) 0.974 ms against 0.485 (r69; 128 columns on 8
# warps 1.451), T=8192/16/32 1.676 against 0.332 (r66): the intra work sits on each program's sequential chain, and
# the Triton 3.6 binaries (255 registers) spilled 272-1584 bytes per thread. Some configurations were also wrong on the
# GPU only (32- and 16-column blocks, 8 warps, PIPE, q before the inverse; and the default at B = 2 with GVA): the same
# wrong rows (16-31 of a chunk) on every run, NaNs or illegal addresses; CTA barriers between the parts did not change
# them (r68, r69). Not diagnosed further: the kernel lost at every shape it ran correctly.
# FUSED_RC (round 20; built and compiled on the CPU, never run on a GPU: no device was lent in rounds 19-20): the whole
# call as one persistent Gluon launch, ``kernels_gluon.atrex_sm90_gdn_fused_rc``: gl_rc's chain partition, an aux
# partition that forms each chunk's k-side intra operands (normalised k, gate factors, the inverse A) in the load slot,
# and an output partition that also forms Aqk (in registers) and issues the loads. q, k, v, g, beta are read once and
# only o and the final state written: no qn / kn / A / Aqk / factor workspaces, no other launch. The path to the varlen
# 16x1024 goal (rounds 17-18: the two kernels' HBM traffic alone is ~0.34 ms there); BENCH_H200.md round 20 has its
# SASS and the risk (the aux partition's time per chunk against a chain step). Domain: calls with in-kernel L2 norm
# (the fp16 inverse's bound), K in {64, 128}, V a multiple of 64, B*T >= 64, TMA-describable q / k / v, sm90, Triton
# >= 3.6 outside the interpreter. False: off (the default until measured); True: every call in its domain; "auto": the
# calls in its domain with at least as many (V block of 64, sequence x value head) items as SMs (below that the grid
# leaves SMs idle and each CTA walks a long sequence: the two-kernel call, whose intra kernel uses every SM, is the
# better bet there, e.g. T=8192/16/32 has 64 items).
FUSED_RC = False
FUSED_STAGES = 2      # load slots (shared memory at K = 128: 168.5 KB with 2, 219.7 KB with 3)
FUSED_AUX_REGS = 176  # registers per aux-partition thread (setmaxnreg; the chain gets 224, the output 104)
FUSED_OUT_REGS = 104  # ... per output-and-load-partition thread
# FUSED_DIAG16: the aux partition's inverse forms its four 16x16 diagonal blocks per warp (merges b = 2, 4, 8 as batched
# mma.sync in registers: the v3 kernel's INTRA_V3_DIAG16), leaving four of its ten staged whole-tile dots
FUSED_DIAG16 = False
SPLIT_STATE_PASS = False
SPLIT_MIN_T = 16384
SPLIT_PIECES = 4
SPLIT_SIDE_PRIORITY = -1


@functools.cache
def _capability(dev):
    return torch.cuda.get_device_capability(dev)


@functools.cache
def _gluon_ws_supported():
    """Whether this Triton has what ``atrex_sm90_gdn_state_output_gl_ws`` needs (Gluon's Hopper module and
    ``warp_specialize``, Triton >= 3.6)."""
    try:
        from triton.experimental.gluon import language as gl
        from triton.experimental.gluon.language.nvidia import hopper  # noqa: F401
        major, minor = (int(x) for x in triton.__version__.split(".")[:2])
    except Exception:  # any import or version-format problem: the Triton tma kernel is used
        return False
    return (major, minor) >= (3, 6) and hasattr(gl, "warp_specialize")


def _interpreting():
    """Triton's CPU interpreter is on (it runs Triton kernels only; Gluon kernels cannot run under it)."""
    return os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")


def _with_pdl(launches):
    """The call's launches with ``PDL`` applied (its block comment) where the state pass is gl_rc or gl_rc2: each kernel
    of ``_PDL_KERNELS`` gets its PDL constexpr and Triton's ``launch_pdl`` option; the others launch as they are."""
    if (not PDL or not _k.GDC_SUPPORTED or _interpreting()
            or not any(kern.__name__ in _PDL_STATE_KERNELS for kern, *_ in launches)):
        return launches
    return [(kern, grid_, args, dict(meta, PDL=True, launch_pdl=True)) if kern.__name__ in _PDL_KERNELS
            else (kern, grid_, args, meta) for kern, grid_, args, meta in launches]


def _gluon_state_kernel(name):
    """A Gluon state kernel of ``kernels_gluon`` (STATE_IMPL "gl_ws", "auto"), imported on first use: Gluon is
    Triton-version specific and a call that takes the Triton kernels must not need it."""
    from . import kernels_gluon
    return getattr(kernels_gluon, name)


def _state_kernel(kern, T):
    """The state kernel ``kern`` for a call with time length ``T``: for T == 1 its twin compiled without Triton's
    specialisation of T and TOTAL_T (``kernels.NO_T1_SPECIALISATION``: ptxas 12.8 miscompiles the unrolled
    T = 1 specialisation of state v2, the intermittent illegal address of BENCH_H200.md rounds 1-7)."""
    return _k.NO_T1_SPECIALISATION[kern] if T == 1 else kern


def _sm_count(dev) -> int:
    """The device's SM count from core's cached classification (132 when it reports none, e.g. on CPU)."""
    from atrex.dispatch.target import classify_device
    return classify_device(dev).sm_count or 132


def _rows_view(x, B, T, heads, width):
    """``x`` ``[B, T, heads, width]`` as a 2-D ``[B*T, heads*width]`` (shape, strides) for a TMA descriptor, or
    None when its strides do not allow it (heads not contiguous, batch and time not mergeable, a row stride
    or base that is not 16-byte aligned)."""
    s_b, s_t, s_h, s_d = x.stride()
    if s_d != 1 or (heads > 1 and s_h != width):
        return None
    if T > 1:
        rs = s_t
        if B > 1 and s_b != T * s_t:
            return None
    else:
        rs = s_b if B > 1 else heads * width
    if rs < heads * width or (rs * x.element_size()) % 16 or x.data_ptr() % 16:
        return None
    return [B * T, heads * width], [rs, 1]


def _gl_rc_wanted(state_v2, BK, V, dev, n_nh, n_sm):
    """Whether the state pass is to be gl_rc (where its operands are TMA-describable): the register-chain Gluon
    kernel's domain (wgmma with M = BV = 64: sm90 only; no Gluon interpreter; in-kernel descriptors) and "auto"'s rule
    (STATE_AUTO_GL_RC): more BV = 32 programs than SMs. ``n_nh``: sequences x value heads."""
    sm90 = dev.type != "cuda" or _capability(dev) == (9, 0)
    return bool(state_v2 and BK in (64, 128) and V % 64 == 0 and sm90 and not _interpreting() and _gluon_ws_supported()
                and TMA_DEVICE_DESC and not STATE_TMA_PERSISTENT
                and (STATE_IMPL in ("gl_rc", "gl_rc2")
                     or (STATE_IMPL == "auto" and STATE_AUTO_GL_RC and n_nh * _cdiv(V, 32) > n_sm)))


def _gl_ws_wanted(state_v2, fold, rc_wanted, BK, cfg, sm90):
    """Whether the state pass is to be gl_ws (where its operands are TMA-describable with the state configuration
    ``cfg`` = (BV, num_warps, num_stages)): the launch rule below (STATE_IMPL "gl_ws", or "auto" with
    STATE_AUTO_GL_WS where the few-programs configuration takes the TMA kernels), in-kernel descriptors, not
    persistent, and the Gluon kernel's domain."""
    BV, sw, _sst = cfg
    want_tma = STATE_IMPL in ("tma", "gl_ws", "gl_rc", "gl_rc2") or (STATE_IMPL == "auto" and cfg == _STATE_V2_FEW_CFG)
    auto_ws = STATE_IMPL == "auto" and STATE_AUTO_GL_WS and not _interpreting() and _gluon_ws_supported()
    return bool(not rc_wanted and state_v2 and want_tma and not fold and (STATE_IMPL == "gl_ws" or auto_ws)
                and BK in (64, 128) and BV in (32, 64) and sw == 4 and sm90 and TMA_DEVICE_DESC
                and not STATE_TMA_PERSISTENT)


def _tma_operands(qn, kn, v, A, Aqk, B, T, H, HV, K, V, BK, BV):
    """(operands, (ROWS, QW, VW, s_qr, s_kr, s_vr), DEVICE_DESC) of ``atrex_sm90_gdn_state_output_tma``, or None
    when the tensors cannot be described. With ``TMA_DEVICE_DESC`` the operands are the tensors themselves and
    the kernel builds its descriptors; otherwise they are host ``TensorDescriptor`` objects."""
    if BK != K or B * T < 64 or HV * V < BV:
        # (on the H200 a call with B*T = 1 hit an illegal address with in-kernel descriptors; boxes taller or wider
        # than the whole tensor are not used)
        return None
    views = [_rows_view(qn, B, T, H, K), _rows_view(kn, B, T, H, K), _rows_view(v, B, T, HV, V)]
    if any(vw is None for vw in views):
        return None
    (qs, qst), (ks, kst), (vs, vst) = views
    rows_args = (B * T, H * K, HV * V, qst[0], kst[0], vst[0])
    if TMA_DEVICE_DESC:
        return (qn, kn, v, A, Aqk), rows_args, True
    from triton.tools.tensor_descriptor import TensorDescriptor
    ws = [A.shape[0] * A.shape[1], 64]
    return ((TensorDescriptor(qn, qs, qst, [64, BK]), TensorDescriptor(kn, ks, kst, [64, BK]),
             TensorDescriptor(v, vs, vst, [64, BV]), TensorDescriptor(A, ws, [64, 1], [64, 64]),
             TensorDescriptor(Aqk, ws, [64, 1], [64, 64])), rows_args, False)


def _scratch(size, dev):
    """Global scratch for in-kernel TMA descriptors, asked for by Triton at launch: a torch buffer on the call's
    device (under CUDA-graph capture it comes from the graph's pool)."""
    return torch.empty(size, dtype=torch.int8, device=dev)


def _state_cfg(n_programs, V, v2=False, sm_count=132):
    """(BV, num_warps, num_stages) of the state kernel for ``n_programs`` (sequence, value head) pairs."""
    if STATE_CFG_OVERRIDE is not None:
        return STATE_CFG_OVERRIDE
    cfg = _STATE_CFG_FEW if n_programs < 4 * sm_count else _STATE_CFG_MANY
    if v2 and n_programs * _cdiv(V, _STATE_V2_FEW_CFG[0]) <= 2 * sm_count:
        cfg = _STATE_V2_FEW_CFG
    bv = min(cfg[0], max(16, _next_pow2(V)))
    return (bv,) + cfg[1:]


def _chunk_slots(launches, cu_seqlens, q, B, T, N, slot_map=False):
    """(cu, co, n_slots, n_search) of the intra grid; for varlen, appends the chunk-offsets launch and, with
    ``slot_map``, the slot-map launch (``co`` then holds the N + 1 chunk offsets followed by the n_slots map; with
    ``slot_map == 2``, the packed map: two entries per slot)."""
    if cu_seqlens is not None:
        n_slots = T // 64 + N
        n_search = max(1, math.ceil(math.log2(N + 1)) + 1)
        co = torch.empty((N + 1 + int(slot_map) * n_slots,), dtype=torch.int32, device=q.device)
        launches.append((_k.atrex_sm90_gdn_chunk_offsets, (1,), (cu_seqlens, co, N), dict(BLOCK=1024, num_warps=4)))
        if slot_map:
            launches.append((_k.atrex_sm90_gdn_slot_seq, (_cdiv(n_slots, 1024),),
                             (co, cu_seqlens, N, n_slots, n_search), dict(BLOCK=1024, PACKED=slot_map == 2,
                                                                          num_warps=4)))
        return cu_seqlens, co, n_slots, n_search
    return q, q, B * _cdiv(T, 64), 0  # q: unused placeholder pointers


def _slot_map_meta(slot_map, is_varlen):
    """The SLOT_MAP constexpr of the v3 and gates launches: False, True (the sequence map) or 2 (the packed map)."""
    if not (slot_map and is_varlen):
        return False
    return True if slot_map == 1 else 2


def _item_schedule(launches, cu, N, n_items, P, n_sm, h0pf, dev, cu_cpu=None):
    """``GL_RC_SCHEDULE``: appends ``kernels.atrex_sm90_gdn_item_schedule`` for a persistent varlen gl_rc / gl_rc2
    launch of ``n_items`` items (``n_items / N`` per sequence) on ``P`` CTAs, and returns the order it writes (the
    state kernel's ``sched``); None where the rule does not take it: a grid of one item per CTA, more than
    GL_RC_SCHED_MAX_ROUNDS rounds or GL_RC_SCHED_MAX_SEQS sequences, or the next-item initial-state prefetch (H0PF 2);
    and, where the caller gave ``cu_cpu`` (its CPU mirror of cu_seqlens, round 37), a call whose sequences all have
    the same chunk count, for which the order would be round-robin's. ``"cta"`` (round 37): no kernel; the state
    kernel's CTAs form the snake order of their own slots in their prologue (``kernels_gluon._cta_slots``, SCHED 2)
    into the returned buffer, for at most ``kernels_gluon.CTA_SCHED_NB`` sequences. Every mode: at most
    ``kernels_gluon.CTA_SCHED_RB`` rounds (the state kernel's table of the CTA's items)."""
    rounds = _cdiv(n_items, P)
    if (not GL_RC_SCHEDULE or not GL_RC_PERSISTENT or P != min(n_items, n_sm) or rounds < 2
            or rounds > GL_RC_SCHED_MAX_ROUNDS or N > GL_RC_SCHED_MAX_SEQS or h0pf == 2):
        return None
    # (the state kernels are Gluon's: importable wherever they are planned)
    from . import kernels_gluon as _kg
    if rounds > _kg.CTA_SCHED_RB.value or (GL_RC_SCHEDULE == "cta" and N > _kg.CTA_SCHED_NB.value):
        return None  # (every mode: the state kernel's shared-memory table holds CTA_SCHED_RB rounds)
    if cu_cpu is not None:
        chunks = (cu_cpu[1:] - cu_cpu[:-1] + 63) // 64
        if bool((chunks == chunks[0]).all()):
            return None
    if GL_RC_SCHEDULE == "cta":
        return torch.empty((n_items,), dtype=torch.int32, device=dev)
    nb, pb = max(16, _next_pow2(N)), max(16, _next_pow2(P))
    sched = torch.empty((n_items + 2 * nb + (rounds + 1) * pb,), dtype=torch.int32, device=dev)
    # second in the call's chain (round 37; r136 had it right before the state kernel): its work overlaps the first
    # kernel's, and it has completed before the state kernel's CTAs launch, whose first-item initial-state prefetch
    # (H0PF 1) then reads the order before their wait
    launches.insert(1, (_k.atrex_sm90_gdn_item_schedule, (1,), (cu, sched, N, n_items // N, n_items, P, rounds),
                        dict(NB=nb, PB=pb, num_warps=4, **({"SNAKE": True} if GL_RC_SCHEDULE == "snake" else {}))))
    return sched


def _h0_prefetch_opts(use_h0, h0_strides):
    """gl_rc's / gl_rc2's H0PF, H0_KC (GL_RC_H0_PREFETCH) for a call with these ``_h0_args``: none without an initial
    state, or where neither its k nor its v stride is 1."""
    s_k, s_v = h0_strides[2], h0_strides[3]
    if not (GL_RC_H0_PREFETCH and use_h0 and 1 in (s_k, s_v)):
        return {}
    return dict(H0PF=int(GL_RC_H0_PREFETCH), H0_KC=s_k == 1)


def _h0_args(initial_state, state_v_first, q):
    """(use_h0, h0, (s_n, s_h, s_k, s_v)) of the state kernels."""
    if initial_state is None:
        return False, q, (0, 0, 0, 0)
    h0 = initial_state
    s_k, s_v = (h0.stride(3), h0.stride(2)) if state_v_first else (h0.stride(2), h0.stride(3))
    return True, h0, (h0.stride(0), h0.stride(1), s_k, s_v)


def _seq_segments(B, T, HV, K, V, BK, n_sm, fast_state, sm90):
    """(NSEG, LSEG) of the sequence-parallel state pass (``SEQ_PARALLEL``) for a fixed-length call, or None where it
    does not apply: B == 1, the fast state kernels (``fast_state``) on sm90 with Gluon, K == BK in (64, 128), V a
    multiple of SEQ_PAR_BV, and HV x V / 32 state blocks filling at most a quarter of the ``n_sm`` SMs. NSEG fills the
    SMs with the segments' blocks (at most SEQ_PAR_MAX_SEGS), LSEG is a multiple of 64 with at least
    SEQ_PAR_MIN_CHUNKS chunks, and at least SEQ_PAR_MIN_SEGS segments remain."""
    if not (SEQ_PARALLEL and fast_state and sm90 and B == 1 and K == BK and BK in (64, 128) and V % SEQ_PAR_BV == 0
            and STATE_IMPL == "auto" and not FOLD_QK_NORM and not FUSED_RC and not _interpreting()
            and _gluon_ws_supported() and TMA_DEVICE_DESC):
        return None
    blocks = HV * _cdiv(V, 32)
    want = min(SEQ_PAR_MAX_SEGS, n_sm // blocks)
    if want < SEQ_PAR_MIN_SEGS:
        return None
    lseg = max(SEQ_PAR_MIN_CHUNKS, _cdiv(_cdiv(T, 64), want)) * 64
    nseg = _cdiv(T, lseg)
    return (nseg, lseg) if nseg >= SEQ_PAR_MIN_SEGS else None


def _segment_launches(launches, segs, kn, v, A, fac, initial_state, state_v_first, ht, hs, B, T, H, HV, K, V, BK, G,
                      total_t):
    """Appends the segment pass and the composition of ``SEQ_PARALLEL`` (after the intra kernel, whose ``kn``, ``A``
    and ``fac`` they read) for ``segs`` = (NSEG, LSEG); the composition writes the segments' initial states into
    ``hs`` ``[NSEG, HV, K, V]`` and the final state into ``ht`` (if any). Returns the segments' bounds, the
    cu_seqlens of the state pass that forms the outputs (written by the segment pass)."""
    nseg, lseg = segs
    dev = v.device
    na = nseg if ht is not None else nseg - 1  # (the last segment's transition serves the final state only)
    cu_seg = torch.empty((nseg + 1,), dtype=torch.int32, device=dev)
    r = torch.empty((B, na, HV, K, V + K), dtype=torch.float32, device=dev)
    _ops, rows_args, _dd = _tma_operands(kn, kn, v, A, A, B, T, H, HV, K, V, BK, SEQ_PAR_BV)
    rows, qw, vw, _s_qr, s_kr, s_vr = rows_args
    launches.append((_gluon_state_kernel("atrex_sm90_gdn_state_segments_gl"), (_cdiv(V + K, SEQ_PAR_BV), B * na * HV), (
        kn, v, A, fac, r, cu_seg, T, lseg, nseg, na, HV, K, V, B * nseg + 1, total_t, rows, qw, vw, s_kr, s_vr),
        dict(G=G, BK=BK, BV=SEQ_PAR_BV, STAGES=2, num_warps=4)))
    use_h0, h0, h0_strides = _h0_args(initial_state, state_v_first, hs)
    if ht is not None:
        ht_strides = ((ht.stride(0), ht.stride(1), ht.stride(3), ht.stride(2)) if state_v_first
                      else (ht.stride(0), ht.stride(1), ht.stride(2), ht.stride(3)))
    else:
        ht_strides = (0, 0, 0, 0)
    bvs = int(SEQ_PAR_SCAN_BV)
    launches.append((_k.atrex_sm90_gdn_segment_scan, (_cdiv(V, bvs), B * HV), (
        r, h0, hs, ht if ht is not None else hs, nseg, na, HV, K, V, *h0_strides, *ht_strides),
        dict(BK=BK, BVS=bvs, USE_H0=use_h0, STORE_HT=ht is not None, PREC=str(SEQ_PAR_SCAN_PREC), num_warps=8)))
    return cu_seg


def gdn_fwd(q, k, v, g, beta, *, scale, initial_state, output_final_state, use_qk_l2norm_in_kernel,
            state_v_first, cu_seqlens, cu_seqlens_cpu=None, use_beta_sigmoid_in_kernel=False,
            allow_neg_eigval=False, sm_count=None, _outputs=None, _plan_only=False):
    """Chunked Gated-DeltaNet forward (CONTRACTS.md §2), chunk 64.

    Parameters
    ----------
    q, k : ``[B, T, H, K]`` bf16/fp16, ``stride(-1) == 1``.
    v : ``[B, T, HV, V]`` same dtype, ``HV % H == 0`` (value head ``hv`` uses q/k head ``hv // (HV/H)``).
    g, beta : ``[B, T, HV]`` fp32/bf16/fp16; ``g`` per-token log decay, ``beta`` write strength.
    scale : float (already resolved).
    initial_state : None or ``[N, HV, K, V]`` (``[N, HV, V, K]`` if ``state_v_first``), any float dtype,
        read only (upcast to fp32).
    output_final_state : return the fp32 final state in the same layout.
    use_qk_l2norm_in_kernel : L2-normalise q and k (fp32, eps 1e-6 inside the sqrt, rounded back).
    cu_seqlens : None or ``[N+1]`` int32/int64 on q's device (requires ``B == 1``).
    cu_seqlens_cpu : None or the caller's exact CPU mirror of ``cu_seqlens``. The chunk bookkeeping is built on the
        device either way; the mirror only lets the host leave out GL_RC_SCHEDULE's kernel where every sequence has
        the same chunk count (``_item_schedule``).
    sm_count : the device's SM count (the dispatcher passes ``call.target.sm_count``); None looks it up.
    _outputs, _plan_only : internal (the split state pass): preallocated ``(o, final_state)``, and return the
        launch list instead of launching.

    Returns
    -------
    ``(o, final_state)``: ``o`` ``[B, T, HV, V]`` in q's dtype; ``final_state`` fp32 or None.
    """
    B, T, H, K = q.shape
    HV, V = v.shape[2], v.shape[3]
    G = HV // H
    dev = q.device
    if cu_seqlens is not None and cu_seqlens.shape[0] == 2 and B == 1 and ONE_SEQUENCE_FIXED:
        cu_seqlens = None  # (ONE_SEQUENCE_FIXED: the contract's cu = [0, T] is the fixed-length call)
    if q.stride(-1) != 1:
        q = q.contiguous()
    if k.stride(-1) != 1:
        k = k.contiguous()
    if v.stride(-1) != 1:
        v = v.contiguous()
    is_varlen = cu_seqlens is not None
    N = cu_seqlens.shape[0] - 1 if is_varlen else B
    total_t = B * T
    BK = max(16, _next_pow2(K))

    if _outputs is not None:
        o, ht = _outputs
    else:
        o = torch.empty((B, T, HV, V), dtype=q.dtype, device=dev)
        ht = None
        if output_final_state:
            shape = (N, HV, V, K) if state_v_first else (N, HV, K, V)
            ht = torch.empty(shape, dtype=torch.float32, device=dev)
    if N == 0:
        return o, ht
    if total_t == 0:
        # every sequence is empty: the final state is the initial state
        if ht is not None:
            if initial_state is None:
                ht.zero_()
            else:
                ht.copy_(initial_state)
        return o, ht

    fast = _use_fast(q, K, V)
    if (SPLIT_STATE_PASS and not _plan_only and fast and not is_varlen and T >= max(SPLIT_MIN_T, 128)
            and STATE_IMPL in ("v2", "tma", "auto", "gl_ws", "gl_rc", "gl_rc2") and not USE_WY and BK <= V2_MAX_BK):
        return _gdn_split(q, k, v, g, beta, o, ht, scale, initial_state, use_qk_l2norm_in_kernel, state_v_first,
                          use_beta_sigmoid_in_kernel, allow_neg_eigval, sm_count, output_final_state)
    fused = _fused_launch(q, k, v, g, beta, o, ht, scale, initial_state, use_qk_l2norm_in_kernel, state_v_first,
                          cu_seqlens, use_beta_sigmoid_in_kernel, allow_neg_eigval, fast, sm_count)
    if fused is not None:
        if _plan_only:
            return [fused]
        sig = _call_signature(dev, (q, k, v, g, beta, initial_state, cu_seqlens), (
            bool(output_final_state), bool(use_qk_l2norm_in_kernel), bool(state_v_first),
            bool(use_beta_sigmoid_in_kernel), bool(allow_neg_eigval), sm_count))
        return _launch_all(dev, [fused], o, ht, sig)
    # FOLD_QK_NORM: the state kernel reads the raw q, k and the intra kernel folds their row norms into the factors
    fold = (bool(FOLD_QK_NORM) and fast and use_qk_l2norm_in_kernel and INTRA_IMPL == "v3" and not USE_WY
            and BK <= V2_MAX_BK and STATE_IMPL in ("auto", "v2", "gl_rc", "gl_rc2"))
    use_wy = bool(USE_WY) and fast
    # The v2 kernels are measured and tested for K <= 128; at K = 256 state v2 with 3 stages needs 260 KB of
    # shared memory (OutOfResources in `atrex verify`'s K256 sweep on the H200), so K > 128 keeps the v1 pair.
    v2_ok = fast and not use_wy and BK <= V2_MAX_BK
    # tma, gl_ws, gl_rc: same inputs as v2 (each falls back to v2 per call where it does not apply)
    state_v2 = v2_ok and STATE_IMPL in ("v2", "tma", "auto", "gl_ws", "gl_rc", "gl_rc2")
    intra_per_hv = v2_ok and INTRA_IMPL in ("v2", "v3")  # the per-value-head intra kernels
    n_sm = sm_count or _sm_count(dev)
    sm90 = dev.type != "cuda" or _capability(dev) == (9, 0)
    # SEQ_PARALLEL: the state pass runs the segments as sequences (sN of them, from the composed states s_h0)
    # (not within a piece of the split state pass, SPLIT_STATE_PASS: its plan is one state launch per piece)
    segs = None if is_varlen or fold or _outputs is not None else _seq_segments(B, T, HV, K, V, BK, n_sm, state_v2,
                                                                                sm90)
    if segs is not None and _tma_operands(q, k, v, q, q, B, T, H, HV, K, V, BK, SEQ_PAR_BV) is None:
        segs = None
    if segs is None:
        sN, s_varlen, s_h0, s_vfirst, s_ht = N, is_varlen, initial_state, state_v_first, ht
    else:
        sN, s_varlen, s_vfirst, s_ht = segs[0], True, False, None
        s_h0 = torch.empty((segs[0], HV, K, V), dtype=torch.float32, device=dev)
    rc_wanted = _gl_rc_wanted(state_v2, BK, V, dev, sN * HV, n_sm)
    BV, sw, sst = _state_cfg(sN * HV, V, v2=state_v2, sm_count=n_sm)
    ws_wanted = _gl_ws_wanted(state_v2, fold, rc_wanted, BK, (BV, sw, sst), sm90)
    # GL_RC_QSIDE / GL_WS_QSIDE: gl_rc / gl_ws on the raw q (TMA-describable: the operand check the state launch makes
    # below)
    q_ok = use_qk_l2norm_in_kernel and not fold and intra_per_hv and INTRA_IMPL == "v3"
    rc_qside = (bool(GL_RC_QSIDE) and rc_wanted and q_ok
                and _tma_operands(q, q, v, q, q, B, T, H, HV, K, V, BK, 64) is not None)
    ws_qside = (bool(GL_WS_QSIDE) and ws_wanted and GL_WS_FAC_SMEM and q_ok
                and _tma_operands(q, q, v, q, q, B, T, H, HV, K, V, BK, BV) is not None)
    qside = rc_qside or ws_qside
    if fast and use_qk_l2norm_in_kernel and not fold:
        # L2-normalised q, k written once by the intra-chunk kernel, read by the state kernel (QSIDE: k only)
        qn = q if qside else torch.empty((B, T, H, K), dtype=q.dtype, device=dev)
        kn = torch.empty((B, T, H, K), dtype=q.dtype, device=dev)
    else:
        qn, kn = q, k
    if use_wy:
        A = q  # not formed in HBM
        W = torch.empty((HV, total_t, K), dtype=q.dtype, device=dev)
        U = torch.empty((HV, total_t, V), dtype=q.dtype, device=dev)
    else:
        A = torch.empty((HV, total_t, 64), dtype=q.dtype, device=dev)
        W = U = q
    Aqk = A if qside else torch.empty((HV, total_t, 64), dtype=q.dtype, device=dev)  # (QSIDE: not read or written)
    # plane 0: chunk-local gamma; planes 1-4 (state v2): beta, beta e^gamma, e^gamma, e^(gamma_last - gamma)
    # (FOLD_QK_NORM: plane 5, e^gamma / |q|, for the output; planes 2 and 4 carry 1 / |k|)
    fac = torch.empty((6 if fold else 5 if state_v2 else 1, HV, total_t), dtype=torch.float32, device=dev)
    gam = fac[0]

    launches = []  # (kernel, grid, args, meta), all keyed and checked before the first launch
    # 0 (off), 1 (the sequence per slot) or 2 (INTRA_SLOT_MAP "packed": the token range per slot)
    slot_map = (2 if INTRA_SLOT_MAP == "packed" else 1) if INTRA_SLOT_MAP and intra_per_hv and INTRA_IMPL == "v3" else 0
    cu, co, n_slots, n_search = _chunk_slots(launches, cu_seqlens, q, B, T, N, slot_map)

    iw, ist, inv_product = INTRA_CFG_OVERRIDE or _INTRA_CFG
    inv_product = bool(inv_product) and fast
    if intra_per_hv:
        if INTRA_IMPL == "v3":
            kern, extra = _k.atrex_sm90_gdn_intra_chunk_v3, dict(NEWTON=bool(INTRA_V3_NEWTON))
            if INTRA_V3_INV_FP16 and use_qk_l2norm_in_kernel:
                extra.update(INV_FP16=True, FP16_FALLBACK=int(INTRA_V3_FP16_FALLBACK))
            if INTRA_V3_MAXNREG:
                extra["maxnreg"] = int(INTRA_V3_MAXNREG)
            if fold:
                extra["FOLD_NORM"] = True
            gs = 2 if int(INTRA_V3_GVA_SHARE) == 2 and G % 2 == 0 else 1  # the kernel takes 1 or 2
            if gs > 1:
                extra["GS"] = gs
                if INTRA_V3_GS2_MAXNREG:
                    extra["maxnreg"] = int(INTRA_V3_GS2_MAXNREG)
            if INTRA_V3_FAST_EXP and not _interpreting():
                extra["FAST_EXP"] = True
            if INTRA_V3_MASK_OUT is True or (INTRA_V3_MASK_OUT == "gs2" and gs == 2):
                extra["MASK_OUT"] = True
            if slot_map and is_varlen:
                extra["SLOT_MAP"] = _slot_map_meta(slot_map, is_varlen)
            if INTRA_V3_ACC_MERGE is True or (INTRA_V3_ACC_MERGE == "gs2" and gs == 2):
                extra["ACC_MERGE"] = True
            if extra.get("INV_FP16") and (INTRA_V3_DIAG16 is True or INTRA_V3_DIAG16 == f"gs{gs}"):
                extra["DIAG16"] = True
            if qside:
                extra["QSIDE"] = True
                if gs == 1 and INTRA_V3_QSIDE_MAXNREG:
                    extra["maxnreg"] = int(INTRA_V3_QSIDE_MAXNREG)
            if ((INTRA_V3_GATES is True or (INTRA_V3_GATES == "varlen1" and gs == 1 and is_varlen)) and state_v2
                    and not fold):
                extra["GATES"] = True
                bh = min(32, _next_pow2(HV))
                launches.append((_k.atrex_sm90_gdn_gates, (n_slots, _cdiv(HV, bh)), (
                    g, beta, fac, co, cu, T, N, HV, n_search,
                    g.stride(0), g.stride(1), g.stride(2), beta.stride(0), beta.stride(1), beta.stride(2), total_t),
                    dict(IS_VARLEN=is_varlen, BH=bh, BETA_SIGMOID=bool(use_beta_sigmoid_in_kernel),
                         NEG_EIGVAL=bool(allow_neg_eigval), SLOT_MAP=_slot_map_meta(slot_map, is_varlen),
                         num_warps=4, **({"BOOK": True} if INTRA_GATES_BOOK and is_varlen and slot_map == 1 else {}))))
                if launches[-1][3].get("BOOK"):  # (the gates kernel forms the offsets and the map itself)
                    launches[:] = [x for x in launches if x[0] not in (_k.atrex_sm90_gdn_chunk_offsets,
                                                                        _k.atrex_sm90_gdn_slot_seq)]
        else:
            kern, extra = _k.atrex_sm90_gdn_intra_chunk_v2, dict(DOT_PREC=str(INTRA_V2_PREC))
        launches.append((kern, (n_slots * HV // extra.get("GS", 1),), (
            q, k, g, beta, A, Aqk, gam, fac, qn, kn, cu, co,
            T, N, HV, K, n_search,
            q.stride(0), q.stride(1), q.stride(2), k.stride(0), k.stride(1), k.stride(2),
            g.stride(0), g.stride(1), g.stride(2), beta.stride(0), beta.stride(1), beta.stride(2),
            total_t), dict(
            IS_VARLEN=is_varlen, G=G, BK=BK,
            USE_L2NORM=bool(use_qk_l2norm_in_kernel), BETA_SIGMOID=bool(use_beta_sigmoid_in_kernel),
            NEG_EIGVAL=bool(allow_neg_eigval), STORE_QKN=bool(use_qk_l2norm_in_kernel) and not fold, STORE_FAC=state_v2,
            num_warps=iw, num_stages=ist, **extra,
        )))
    else:
        launches.append(_intra_v1_launch(
            n_slots, H, q, k, v, g, beta, A, Aqk, gam, qn, kn, W, U, cu, co, fac, T, N, HV, K, V, n_search,
            total_t, is_varlen, G, BK, use_qk_l2norm_in_kernel, use_beta_sigmoid_in_kernel, allow_neg_eigval,
            inv_product, use_wy, fast, state_v2, iw, ist))
    if segs is None:
        s_cu = cu
    else:
        s_cu = _segment_launches(launches, segs, kn, v, A, fac, initial_state, state_v_first, ht, s_h0, B, T, H, HV,
                                 K, V, BK, G, total_t)

    tma = _tma_operands(qn, kn, v, A, Aqk, B, T, H, HV, K, V, BK, 64) if rc_wanted else None
    rc = tma is not None
    if rc_qside and not rc:  # (qside checked these operands' describability: kn, v, A are the launcher's or the same)
        raise RuntimeError("nvidia.gdn_sm90 internal error: GL_RC_QSIDE planned without gl_rc's operands")
    if rc:
        BV, sw, sst = 64, 4, int(GL_RC_STAGES)
    use_h0, h0, h0_strides = _h0_args(s_h0, s_vfirst, q)
    split_xu = (STATE_SPLIT_XU == "always" or (STATE_SPLIT_XU == "small" and BK <= 32)
                or (not use_qk_l2norm_in_kernel and (
                    STATE_SPLIT_XU == "no_l2norm" or (STATE_SPLIT_XU == "small_no_l2norm" and BK <= 32))))
    grid = (_cdiv(V, BV), sN * HV)
    want_tma = (STATE_IMPL in ("tma", "gl_ws", "gl_rc", "gl_rc2")
                or (STATE_IMPL == "auto" and (BV, sw, sst) == _STATE_V2_FEW_CFG))
    if not rc:  # (FOLD_QK_NORM outside gl_rc: state v2, the other kernel that reads the folded factors)
        tma = (_tma_operands(qn, kn, v, A, Aqk, B, T, H, HV, K, V, BK, BV) if state_v2 and want_tma and not fold
               else None)
    # the Gluon kernel's domain (wgmma: sm90 only)
    gl_ok = BK in (64, 128) and BV in (32, 64) and sw == 4 and sm90
    v2_args = (qn, kn, v, fac, A, Aqk, h0, o, s_ht if s_ht is not None else o, s_cu, float(scale),
               T, HV, K, V,
               qn.stride(0), qn.stride(1), qn.stride(2), kn.stride(0), kn.stride(1), kn.stride(2),
               v.stride(0), v.stride(1), v.stride(2), o.stride(0), o.stride(1), o.stride(2),
               *h0_strides,
               total_t)
    v2_meta = dict(IS_VARLEN=s_varlen, G=G, BK=BK, BV=BV,
                   USE_H0=use_h0, STORE_HT=s_ht is not None, STATE_V_FIRST=bool(s_vfirst))
    if tma is not None:
        operands, rows_args, device_desc = tma
        persistent = bool(STATE_TMA_PERSISTENT)
        if persistent:  # 1-D grid: two CTAs per SM with 2 stages (both fit at K = 128, BV = 32: 114.7 KB each;
            # where they do not, the second round of CTAs waits, which costs time, not correctness), else one
            grid = (min(grid[0] * grid[1], n_sm * (2 if sst <= 2 else 1)),)
        auto_ws = STATE_IMPL == "auto" and STATE_AUTO_GL_WS and not _interpreting() and _gluon_ws_supported()
        if rc:
            kern = _gluon_state_kernel("atrex_sm90_gdn_state_output_gl_rc")
            n_items = grid[0] * grid[1]
            grid = (min(n_items, n_sm) if GL_RC_PERSISTENT else n_items,)
            opts = dict(num_warps=4, STAGES=sst, OUT_REGS=int(GL_RC_OUT_REGS))
            if GL_RC_LATE_FACTORS:
                opts["LATE_FAC"] = True
            if GL_RC_L2_PREFETCH:
                opts["L2PF"] = True
            if GL_RC_HT_REMAT:
                opts["HT_REMAT"] = True
            h0pf = _h0_prefetch_opts(use_h0, h0_strides)
            opts.update(h0pf)
            if fold:
                opts["EG_PLANE"] = 5
            if rc_qside:
                opts.update(QSIDE=True, FAST_EXP=bool(INTRA_V3_FAST_EXP))
                if GL_RC_QREG:
                    opts.update(QREG=True, QSCALE=bool(GL_RC_QSCALE), EARLY_FREE=bool(GL_RC_EARLY_FREE))
                    if GL_RC_QNORM_MMA and GL_RC_QSCALE and q.dtype == torch.bfloat16:
                        opts["QNORM_MMA"] = True  # (fp16 squares could overflow)
            if GL_RC_OUT_TMA and rc_qside and T > 1 and _rows_view(o, B, T, HV, V) is not None:
                opts["OUT_TMA"] = True  # (row stride o.stride(1): T > 1; without QSIDE the Aqk ring leaves no room)
            two = STATE_IMPL == "gl_rc2" or (STATE_IMPL == "auto" and GL_RC_TWO_CHAINS
                                              and sN * HV > GL_RC2_ITEMS_PER_SM * n_sm)
            if two and rc_qside and V == 2 * BV:  # a whole value head per item (kernels_gluon gl_rc2)
                kern = _gluon_state_kernel("atrex_sm90_gdn_state_output_gl_rc2")
                grid = (min(sN * HV, n_sm) if GL_RC_PERSISTENT else sN * HV,)
                opts = dict(num_warps=4, STAGES=2, OUT_REGS=int(GL_RC2_OUT_REGS), CHAIN_REGS=int(GL_RC2_CHAIN_REGS),
                            FAST_EXP=bool(INTRA_V3_FAST_EXP), OUT_TMA=bool(opts.get("OUT_TMA", False)),
                            QNORM_MMA=bool(GL_RC_QNORM_MMA) and q.dtype == torch.bfloat16)
                if GL_RC_L2_PREFETCH:
                    opts["L2PF"] = True
                if GL_RC_HT_REMAT:
                    opts["HT_REMAT"] = True
                opts.update(h0pf)
        elif (STATE_IMPL == "gl_ws" or auto_ws) and gl_ok and device_desc and not persistent:
            kern = _gluon_state_kernel("atrex_sm90_gdn_state_output_gl_ws")
            opts = dict(num_warps=4, STAGES=max(2, sst), OUT_REGS=int(GL_WS_OUT_REGS))
            if GL_WS_FAC_SMEM:  # (the loader's 16 more registers per thread come from the output partition's)
                opts.update(FAC_SMEM=True, OUT_REGS=int(GL_WS_OUT_REGS) - 16)
            if ws_qside:
                opts.update(QSIDE=True, FAST_EXP=bool(INTRA_V3_FAST_EXP), OUT_REGS=int(GL_WS_QSIDE_OUT_REGS))
                if GL_WS_QSCALE:
                    opts["QSCALE"] = True
                    if GL_WS_QNORM_MMA and q.dtype == torch.bfloat16:
                        opts["QNORM_MMA"] = True
            if GL_WS_OUT2 and GL_WS_FAC_SMEM and not opts.get("QNORM_MMA"):
                opts["OUT2"] = True
                if opts.get("QSIDE"):
                    opts["OUT_REGS"] = int(GL_WS_OUT2_REGS)
        else:
            kern = _state_kernel(_k.atrex_sm90_gdn_state_output_tma, T)
            opts = dict(num_warps=sw, num_stages=sst)
            if split_xu:
                opts["SPLIT_XU"] = True
        tail = ()
        if kern.__name__ in _PDL_STATE_KERNELS:  # (gl_rc, gl_rc2: the item order, GL_RC_SCHEDULE; else unread)
            per_seq = HV * (1 if "rc2" in kern.__name__ else _cdiv(V, BV))  # (items: whole heads, or V blocks)
            sched = (_item_schedule(launches, s_cu, sN, sN * per_seq, grid[0], n_sm, opts.get("H0PF", 0), dev,
                                    cu_seqlens_cpu if segs is None else None) if s_varlen else None)
            tail = (sched if sched is not None else s_cu,)
            if sched is not None:
                opts["SCHED"] = 2 if GL_RC_SCHEDULE == "cta" else True
        launches.append((kern, grid, (
            *operands, fac, h0, o, s_ht if s_ht is not None else o, s_cu, float(scale),
            T, HV, K, V,
            o.stride(0), o.stride(1), o.stride(2),
            *h0_strides,
            total_t, *rows_args, sN * HV, *tail), dict(
            IS_VARLEN=s_varlen, G=G, BK=BK, BV=BV,
            USE_H0=use_h0, STORE_HT=s_ht is not None, STATE_V_FIRST=bool(s_vfirst), DEVICE_DESC=device_desc,
            PERSISTENT=persistent, **opts,
        )))
    elif state_v2:
        launches.append((_state_kernel(_k.atrex_sm90_gdn_state_output_v2, T), grid, v2_args, dict(
            v2_meta, PREFETCH=bool(STATE_PREFETCH), num_warps=sw, num_stages=sst, **({"EG_PLANE": 5} if fold else {}),
            **({"SPLIT_XU": True} if split_xu else {}))))
    else:
        launches.append(_state_v1_launch(
            grid, qn, kn, v, beta, gam, A, Aqk, W, U, h0, o, ht, cu, scale, T, HV, K, V, h0_strides, total_t,
            is_varlen, G, BK, BV, use_h0, state_v_first, use_qk_l2norm_in_kernel, use_beta_sigmoid_in_kernel,
            allow_neg_eigval, use_wy, fast, sw, sst))
    if ws_qside and not launches[-1][3].get("QSIDE"):  # (the state pass must be the gl_ws that forms q and Aqk)
        raise RuntimeError("nvidia.gdn_sm90 internal error: GL_WS_QSIDE planned without gl_ws")
    if _plan_only:
        return launches
    sig = _call_signature(dev, (q, k, v, g, beta, initial_state, cu_seqlens), (
        bool(output_final_state), bool(use_qk_l2norm_in_kernel), bool(state_v_first),
        bool(use_beta_sigmoid_in_kernel), bool(allow_neg_eigval), sm_count))
    return _launch_all(dev, _with_pdl(launches), o, ht, sig)


@functools.cache
def _smem_reinterpret():
    """How this Triton's Gluon reinterprets a shared-memory buffer: 2 ``reinterpret`` (3.9), 1 ``_reinterpret``
    (3.6), 0 neither (the fused kernel then allocates separate buffers)."""
    from triton.experimental.gluon import language as gl
    for code, name in ((2, "reinterpret"), (1, "_reinterpret")):
        if hasattr(gl.shared_memory_descriptor, name):
            return code
    return 0


def _fused_launch(q, k, v, g, beta, o, ht, scale, initial_state, l2norm, state_v_first, cu_seqlens, beta_sigmoid,
                  neg_eigval, fast, sm_count):
    """The launch of ``atrex_sm90_gdn_fused_rc`` (FUSED_RC) for this call, or None outside its domain."""
    B, T, H, K = q.shape
    HV, V = v.shape[2], v.shape[3]
    dev = q.device
    if not (FUSED_RC and fast and l2norm and not USE_WY and K in (64, 128) and V % 64 == 0 and B * T >= 64
            and TMA_DEVICE_DESC and not _interpreting() and _gluon_ws_supported()
            and (dev.type != "cuda" or _capability(dev) == (9, 0))):
        return None
    views = [_rows_view(q, B, T, H, K), _rows_view(k, B, T, H, K), _rows_view(v, B, T, HV, V)]
    if any(vw is None for vw in views):
        return None
    (_, qst), (_, kst), (_, vst) = views
    is_varlen = cu_seqlens is not None
    N = cu_seqlens.shape[0] - 1 if is_varlen else B
    n_items = N * HV * (V // 64)
    n_sm = sm_count or _sm_count(dev)
    if FUSED_RC == "auto" and n_items < n_sm:
        return None
    use_h0, h0, h0_strides = _h0_args(initial_state, state_v_first, q)
    kern = _gluon_state_kernel("atrex_sm90_gdn_fused_rc")
    return (kern, (min(n_items, n_sm),), (
        q, k, v, g, beta, h0, o, ht if ht is not None else o, cu_seqlens if is_varlen else q, float(scale),
        T, HV, K, V,
        o.stride(0), o.stride(1), o.stride(2),
        *h0_strides,
        g.stride(0), g.stride(1), g.stride(2), beta.stride(0), beta.stride(1), beta.stride(2),
        B * T, H * K, HV * V, qst[0], kst[0], vst[0], N * HV), dict(
        IS_VARLEN=is_varlen, G=HV // H, BK=K, BV=64,
        USE_H0=use_h0, STORE_HT=ht is not None, STATE_V_FIRST=bool(state_v_first),
        STAGES=int(FUSED_STAGES), OUT_REGS=int(FUSED_OUT_REGS), AUX_REGS=int(FUSED_AUX_REGS),
        BETA_SIGMOID=bool(beta_sigmoid), NEG_EIGVAL=bool(neg_eigval), FAST_EXP=bool(INTRA_V3_FAST_EXP),
        DIAG16=bool(FUSED_DIAG16), REINTERPRET=_smem_reinterpret(), num_warps=4))


def _split_bounds(T, pieces):
    """Piece boundaries of the split state pass: ``pieces`` (at least 2, at most one per chunk) spans of about equal
    length, every boundary but the last on a multiple of 64."""
    p = max(2, min(int(pieces), T // 64))
    cuts = sorted({(T * j // p) // 64 * 64 for j in range(1, p)} - {0})
    return [0] + cuts + [T]


def _gdn_split(q, k, v, g, beta, o, ht, scale, initial_state, l2norm, state_v_first, beta_sigmoid, neg_eigval,
               sm_count, output_final_state):
    """The state pass cut into pieces at chunk boundaries (``_split_bounds``) and pipelined over two streams, no
    flags: the caller's stream runs the intra kernels of pieces 1..P in order, each followed by an event; the side
    stream runs piece j's state kernel after event j and after piece j-1's state kernel, whose final state (an fp32
    ``mid`` buffer) is its initial state. So piece j+1's intra kernel runs while piece j's state kernel does. Each
    piece is an ordinary launch plan on time-slice views. The sequential state pass underuses the SMs (one CTA per
    SM, issue-active ~27% in ncu, 168 KB of shared memory and ~20 K registers of the 228 KB / 64 K an SM has), which
    leaves room for an intra CTA beside each state CTA."""
    B, T, H, K = q.shape
    HV, V = v.shape[2], v.shape[3]
    bounds = _split_bounds(T, SPLIT_PIECES)
    P = len(bounds) - 1
    mid = torch.empty((P - 1, B, HV, V, K) if state_v_first else (P - 1, B, HV, K, V), dtype=torch.float32,
                      device=q.device)
    kw = dict(scale=scale, use_qk_l2norm_in_kernel=l2norm, state_v_first=state_v_first, cu_seqlens=None,
              use_beta_sigmoid_in_kernel=beta_sigmoid, allow_neg_eigval=neg_eigval, sm_count=sm_count,
              _plan_only=True)
    plans, sizes, h_in = [], [], initial_state
    for j in range(P):
        a, b = bounds[j], bounds[j + 1]
        last = j == P - 1
        plan = gdn_fwd(q[:, a:b], k[:, a:b], v[:, a:b], g[:, a:b], beta[:, a:b], initial_state=h_in,
                       output_final_state=output_final_state if last else True,
                       _outputs=(o[:, a:b], ht if last else mid[j]), **kw)
        assert len(plan) in (2, 3)  # ([gates,] intra, state): a non-varlen plan
        plans += plan
        sizes.append(len(plan))
        h_in = None if last else mid[j]
    sig = _call_signature(q.device, (q, k, v, g, beta, initial_state, None), (
        "split", bool(output_final_state), bool(l2norm), bool(state_v_first), bool(beta_sigmoid),
        bool(neg_eigval), sm_count))
    return _launch_all(q.device, plans, o, ht, sig, split=sizes)


_SIDE_STREAMS = {}


def _side_stream(dev):
    key = (dev, int(SPLIT_SIDE_PRIORITY))
    s = _SIDE_STREAMS.get(key)
    if s is None:
        s = _SIDE_STREAMS[key] = torch.cuda.Stream(device=dev, priority=key[1])
    return s


def _intra_v1_launch(n_slots, H, q, k, v, g, beta, A, Aqk, gam, qn, kn, W, U, cu, co, fac, T, N, HV, K, V,
                     n_search, total_t, is_varlen, G, BK, use_qk_l2norm_in_kernel, use_beta_sigmoid_in_kernel,
                     allow_neg_eigval, inv_product, use_wy, fast, store_fac, iw, ist):
    return (_k.atrex_sm90_gdn_intra_chunk, (n_slots, H), (
        q, k, v, g, beta, A, Aqk, gam, qn, kn, W, U, cu, co, fac,
        T, N, HV, K, V, n_search,
        q.stride(0), q.stride(1), q.stride(2), k.stride(0), k.stride(1), k.stride(2),
        v.stride(0), v.stride(1), v.stride(2), g.stride(0), g.stride(1), g.stride(2), beta.stride(0), beta.stride(1), beta.stride(2),
        total_t), dict(
        IS_VARLEN=is_varlen, G=G, BK=BK, BVA=max(16, _next_pow2(V)),
        USE_L2NORM=bool(use_qk_l2norm_in_kernel), BETA_SIGMOID=bool(use_beta_sigmoid_in_kernel),
        NEG_EIGVAL=bool(allow_neg_eigval), INV_PRODUCT=inv_product, STORE_WY=use_wy,
        STORE_QKN=bool(fast and use_qk_l2norm_in_kernel), STORE_FAC=bool(store_fac),
        num_warps=iw, num_stages=ist,
    ))


def _state_v1_launch(grid, qn, kn, v, beta, gam, A, Aqk, W, U, h0, o, ht, cu, scale, T, HV, K, V, h0_strides,
                     total_t, is_varlen, G, BK, BV, use_h0, state_v_first, use_qk_l2norm_in_kernel,
                     use_beta_sigmoid_in_kernel, allow_neg_eigval, use_wy, fast, sw, sst):
    return (_state_kernel(_k.atrex_sm90_gdn_state_output, T), grid, (
        qn, kn, v, beta, gam, A, Aqk, W, U, h0, o, ht if ht is not None else o, cu, float(scale),
        T, HV, K, V,
        qn.stride(0), qn.stride(1), qn.stride(2), kn.stride(0), kn.stride(1), kn.stride(2),
        v.stride(0), v.stride(1), v.stride(2), beta.stride(0), beta.stride(1), beta.stride(2),
        o.stride(0), o.stride(1), o.stride(2),
        *h0_strides,
        total_t), dict(
        IS_VARLEN=is_varlen, G=G, BK=BK, BV=BV,
        USE_H0=use_h0, STORE_HT=ht is not None, STATE_V_FIRST=bool(state_v_first),
        USE_L2NORM=bool(use_qk_l2norm_in_kernel and not fast), BETA_SIGMOID=bool(use_beta_sigmoid_in_kernel),
        NEG_EIGVAL=bool(allow_neg_eigval), USE_WY=use_wy, FAST=fast,
        num_warps=sw, num_stages=sst,
    ))


# FAST_LAUNCH (round 23): a call whose signature (``_call_signature``) launched before replays its launches through
# the compiled kernels Triton returned for them, skipping Triton's per-launch binder, specialisation and cache-key
# work (on this project's 2-core CPU under the sm90 stand-in, ~28 us of host time per launch, two to five launches per
# call). The signature determines every launch's specialisation (the same premise as the warm-key memo), so the
# compiled kernel is the one ``kern[grid](...)`` would look up. Not taken while a launch hook is installed
# (profilers that want Triton's launch metadata) or when the current device is not the one the kernel was loaded on.
# Measured (r79, an H100 host, scripts/gdn_host_overhead.py, two passes each): host time per public-API call at T=64
# 150 / 194 us against 313 / 307 us through Triton's path, at T=4096 150 / 178 against 249 / 245 us; at a 3-sequence
# varlen T=1024 the passes overlapped (host noise). GPU cases: test_fast_launch_replays_the_triton_launches.
FAST_LAUNCH = True
# The Triton releases whose JIT launch sequence (``JITFunction.run``: ``CompiledKernel.run`` with the grid, stream,
# function, packed metadata, launch metadata, the two hooks and the bound arguments) FAST_LAUNCH reproduces and that a
# GPU test has run; under any other Triton every launch takes Triton's own path.
_FAST_LAUNCH_TRITON = ("3.6.",)
_FAST_LAUNCH_OK = triton.__version__.startswith(_FAST_LAUNCH_TRITON) and hasattr(triton, "knobs")
_COMPILED = {}  # call signature -> per launch: None or (compiled kernel, its device, the parameters after the positional)
_COMPILED_MAX = 4096


def _param_tail(kern, n_positional):
    """The kernel's parameters after the first ``n_positional`` as (name, default) pairs (``inspect._empty`` where the
    parameter has none): with them a launch's ``meta`` gives the rest of Triton's bound argument list."""
    params = list(kern.signature.parameters.values())[n_positional:]
    return tuple((p.name, p.default) for p in params)


def _no_hook(hook):
    """Whether a Triton launch hook knob calls nothing: None, or (Triton 3.6) an empty ``HookChain``."""
    return hook is None or (isinstance(getattr(hook, "calls", None), list) and not hook.calls)


def _bound_args(args, meta, tail):
    """The argument list Triton's binder forms for ``kern[grid](*args, **meta)``: the positional arguments, then each
    remaining parameter from ``meta`` or its default; launch options in ``meta`` (num_warps, ...) are not parameters."""
    return (*args, *[meta[n] if n in meta else d for n, d in tail])


def _launch(kern, grid_, args, meta, slot=None):
    """Launch one kernel. ``slot``, a call signature's record in ``_COMPILED`` and the launch's index in it, names a
    launch whose specialisation the signature determines: its first launch records the compiled kernel, later ones
    replay it (FAST_LAUNCH)."""
    hit = slot[0][slot[1]] if slot is not None else None
    if hit is not None and FAST_LAUNCH and _no_hook(triton.knobs.runtime.launch_enter_hook) and _no_hook(
            triton.knobs.runtime.launch_exit_hook):
        compiled, device, tail = hit
        drv = triton.runtime.driver.active
        if drv.get_current_device() == device:
            g1 = grid_[1] if len(grid_) > 1 else 1
            g2 = grid_[2] if len(grid_) > 2 else 1
            compiled.run(grid_[0], g1, g2, drv.get_current_stream(device), compiled.function,
                         compiled.packed_metadata, None, None, None, *_bound_args(args, meta, tail))
            return
    compiled = kern[grid_](*args, **meta)
    # (a plain JIT function only: an autotuner or heuristics wrapper would choose its own meta-parameters per call)
    if (slot is not None and FAST_LAUNCH and compiled is not None and not hasattr(compiled, "result")
            and isinstance(kern, triton.runtime.jit.JITFunction)):
        slot[0][slot[1]] = (compiled, triton.runtime.driver.active.get_current_device(), _param_tail(kern, len(args)))


def _tensor_sig(t):
    return None if t is None else (t.shape, t.stride(), t.dtype, t.data_ptr() % 16 == 0)


def _knobs():
    """The module knobs that choose kernels and their configurations (part of a call's signature)."""
    return (FAST_PATH, USE_WY, STATE_IMPL, TMA_DEVICE_DESC, STATE_TMA_PERSISTENT, STATE_PREFETCH, STATE_CFG_OVERRIDE, INTRA_IMPL,
            INTRA_V2_PREC, INTRA_V3_NEWTON, INTRA_V3_MAXNREG, INTRA_CFG_OVERRIDE, V2_MAX_BK, SPLIT_STATE_PASS,
            SPLIT_MIN_T, SPLIT_PIECES, _STATE_CFG_FEW,
            _STATE_CFG_MANY, _STATE_V2_FEW_CFG, _INTRA_CFG, GL_WS_OUT_REGS, STATE_AUTO_GL_WS, INTRA_V3_INV_FP16,
            INTRA_V3_FP16_FALLBACK, GL_RC_STAGES, GL_RC_PERSISTENT, STATE_AUTO_GL_RC, FOLD_QK_NORM, INTRA_V3_GVA_SHARE,
            INTRA_V3_FAST_EXP, INTRA_V3_GS2_MAXNREG, INTRA_V3_MASK_OUT, STATE_SPLIT_XU, GL_WS_FAC_SMEM,
            INTRA_SLOT_MAP, INTRA_V3_ACC_MERGE, INTRA_V3_GATES, INTRA_V3_DIAG16, FUSED_RC, FUSED_STAGES,
            FUSED_AUX_REGS, FUSED_OUT_REGS, FUSED_DIAG16, GL_RC_QSIDE, GL_RC_OUT_REGS, GL_RC_QREG, GL_WS_QSIDE,
            GL_WS_QSIDE_OUT_REGS, INTRA_V3_QSIDE_MAXNREG, GL_RC_QSCALE, GL_RC_EARLY_FREE, GL_RC_OUT_TMA,
            GL_RC_QNORM_MMA, GL_WS_QSCALE, GL_RC_LATE_FACTORS, GL_RC_TWO_CHAINS, GL_RC2_CHAIN_REGS, GL_RC2_OUT_REGS,
            GL_RC_L2_PREFETCH, GL_WS_QNORM_MMA, GL_RC_HT_REMAT, PDL, INTRA_GATES_BOOK, GL_RC_H0_PREFETCH,
            GL_WS_OUT2, GL_WS_OUT2_REGS, GL_RC2_ITEMS_PER_SM, ONE_SEQUENCE_FIXED, SEQ_PARALLEL,
            SEQ_PAR_MIN_SEGS, SEQ_PAR_MAX_SEGS, SEQ_PAR_MIN_CHUNKS, SEQ_PAR_BV, SEQ_PAR_SCAN_PREC, SEQ_PAR_SCAN_BV,
            GL_RC_SCHEDULE, GL_RC_SCHED_MAX_ROUNDS, GL_RC_SCHED_MAX_SEQS)


def _call_signature(dev, tensors, flags):
    """What determines every launch key of a ``gdn_fwd`` call: the device, each input tensor's shape, strides,
    dtype and 16-byte alignment (the launcher's own buffers are always aligned and shaped from these), the
    flags and the module knobs. Cheaper to form than the ~60 argument specialisations of the keys."""
    return dev, tuple(_tensor_sig(t) for t in tensors), flags, _knobs()


_IN_KERNEL_DESC = ("atrex_sm90_gdn_fused_rc", "atrex_sm90_gdn_state_segments_gl")


def _launch_all(dev, launches, o, ht, sig=None, split=()):
    if sig is not None and WARM.seen(sig):
        missing = ()  # this exact signature launched before, so all of its keys are warm
    else:
        missing = WARM.missing([launch_key(kern, args, meta) for kern, _, args, meta in launches])
    if missing and dev.type == "cuda" and torch.cuda.is_current_stream_capturing():
        raise AtrexCaptureError(
            "nvidia.gdn_sm90: this call's Triton specialisation has not run in this process, so it would "
            "compile during CUDA-graph capture; call atrex.prewarm('chunk_gdn', ...) (or run one eager call "
            "with the same shapes, dtypes and flags) before capturing")
    # a signature stands for its launches' specialisations only where it determines them (sig given) and on a GPU
    record = None
    if sig is not None and dev.type == "cuda" and _FAST_LAUNCH_OK:
        record = _COMPILED.get(sig)
        if record is None or len(record) != len(launches):
            record = [None] * len(launches)
            if len(_COMPILED) < _COMPILED_MAX:
                _COMPILED[sig] = record
    slot = (lambda i: (record, i)) if record is not None else (lambda i: None)
    scratch = any(meta.get("DEVICE_DESC") or kern.__name__ in _IN_KERNEL_DESC  # (in-kernel descriptors)
                  for kern, _, _, meta in launches)
    if scratch:  # Triton asks the context's allocator for descriptor scratch at launch; ours for these launches only
        from triton.runtime import _allocation
        token = _allocation._allocator.set(lambda size, alignment, stream: _scratch(size, dev))
    try:
        if split and dev.type == "cuda":
            # split = the pieces' plan sizes; each piece is [gates,] intra, state: the intra part on the caller's
            # stream, the state kernel on the side stream
            main = torch.cuda.current_stream(dev)
            side = _side_stream(dev)
            side.wait_stream(main)  # (under capture this forks the side stream into the graph)
            j = 0
            for n in split:
                for i in range(j, j + n - 1):
                    _launch(*launches[i], slot=slot(i))
                ready = main.record_event()
                with torch.cuda.stream(side):
                    side.wait_event(ready)
                    _launch(*launches[j + n - 1], slot=slot(j + n - 1))
                j += n
            main.wait_stream(side)
        else:
            for i, launch in enumerate(launches):
                _launch(*launch, slot=slot(i))
    finally:
        if scratch:
            _allocation._allocator.reset(token)
    WARM.add(missing)
    if sig is not None:
        WARM.mark(sig)
    return o, ht
