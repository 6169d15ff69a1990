"""Launch plan of ``nvidia.gdn_sm90``: which kernels a call runs and how they are configured.

``plan_call`` looks at shapes, dtypes, strides and alignment only (never at device values), so the plan of a call
is fixed by its signature and a captured CUDA graph replays the same launches. A plan is an immutable
``GdnPlan``; tests pass one to ``launch.gdn_fwd`` to run a path the default rule would not pick.

The pipeline is always: [varlen bookkeeping] -> [gates] -> intra-chunk kernel -> [segment pass + composition]
-> state/output kernel. The paths (measured on SM90 with K = V = 128):

- intra ``per_head``: one program per (chunk, value head or pair of value heads of a q/k head), the 64x64 UT inverse
  on tensor cores (fp16 merges where the in-kernel L2 norm bounds the operands). ``generic``: the operand-scaled
  kernel for K > 128, K or V not multiples of 16, and fp32 q/k/v (its dots then in tf32x3).
- state ``ws``: warp-specialised Gluon kernel for few (sequence, head) programs (loader, chain and output
  partitions, TMA ring). ``rc``: persistent register-chain Gluon kernel once the programs outnumber the SMs.
  ``rc2``: the same with two chains per CTA on whole value heads (V = 128) once (sequence, head) pairs outnumber the
  SMs. ``tma`` / ``triton``: Triton kernels where the Gluon ones do not apply (K < 64, V not a multiple of 64, rows
  not TMA-describable, the CPU interpreter). ``generic``: the operand-scaled pair of the generic intra kernel.
- ``segments``: one long prompt with few heads cuts the sequence into segments whose states are composed in fp32 and
  then run as sequences, so the state chain is T / (64 x segments) steps long.
"""

import dataclasses
import functools
import os

import torch
import triton

BT = 64  # chunk length of every kernel

# (BV, num_warps, num_stages) of the state kernel by the number of (sequence, value head) programs.
STATE_CFG_FEW = (32, 4, 2)
STATE_CFG_MANY = (64, 4, 2)
STATE_CFG_TMA = (32, 4, 3)  # few enough BV = 32 programs for two CTAs per SM: the TMA/Gluon kernels
PER_HEAD_MAX_BK = 128  # the per-head intra kernel and the fast state kernels: padded K <= 128
INTRA_WARPS, INTRA_STAGES = 4, 2
INTRA_MAXNREG = 168  # register cap of the per-head intra kernel: three CTAs per SM
RC_STAGES, RC_OUT_REGS = 3, 200
RC2_STAGES, RC2_OUT_REGS = 2, 152
RC2_ITEMS_PER_SM = 1  # rc2 once (sequence, head) pairs exceed this many per SM
WS_STAGES, WS_OUT_REGS, WS_QSIDE_OUT_REGS = 3, 112, 136
SEG_MIN, SEG_MAX = 4, 16  # segment counts that pay for the second pass / fill the SMs
SEG_MIN_CHUNKS = 16  # chunks per segment at the least
SEG_BV, SEG_SCAN_BV = 64, 8  # column blocks of the segment pass and of the composition
FP32_MAX_BV = 32  # the generic state kernel's V block with fp32 q/k/v (shared memory)


@dataclasses.dataclass(frozen=True)
class GdnPlan:
    """The kernels of one call and their configuration (see the module docstring for the paths)."""

    intra: str  # "per_head" | "generic"
    state: str  # "ws" | "rc" | "rc2" | "tma" | "triton" | "generic"
    block_v: int  # the state kernel's V block
    warps: int
    stages: int
    heads_per_intra: int = 1  # value heads per per-head intra program (2 shares q/k work across a GVA pair)
    qside: bool = False  # the state kernel normalises q and forms Q K^T itself (intra writes k only)
    segments: tuple | None = None  # (count, length) of the sequence-parallel state pass
    out_tma: bool = False  # rc / rc2 store the output through TMA
    split_xu: bool = False  # tma / triton state kernels: separate X and U products (small K)
    pdl: bool = False  # programmatic dependent launch through the chain (rc / rc2 calls)

    @property
    def gluon(self) -> bool:
        return self.state in ("ws", "rc", "rc2")


def cdiv(a, b):
    return -(-a // b)


def next_pow2(n):
    return 1 << (n - 1).bit_length() if n > 0 else 0


def interpreting() -> bool:
    """Triton's CPU interpreter is on (it runs Triton kernels only, never Gluon ones)."""
    return os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")


@functools.cache
def gluon_supported() -> bool:
    """This Triton has Gluon's Hopper module and ``warp_specialize`` (Triton >= 3.6)."""
    try:
        from triton.experimental.gluon import language as gl
        from triton.experimental.gluon.language.nvidia import hopper  # noqa: F401
    except ImportError:
        return False
    major, minor = (int(x) for x in triton.__version__.split(".")[:2])
    return (major, minor) >= (3, 6) and hasattr(gl, "warp_specialize")


@functools.cache
def _capability(dev):
    return torch.cuda.get_device_capability(dev)


def is_sm90(dev) -> bool:
    """wgmma targets: an SM90 GPU (a CPU tensor stands in for one when planning on the host)."""
    return dev.type != "cuda" or _capability(dev) == (9, 0)


def rows_view(x, B, T, heads, width):
    """``x`` ``[B, T, heads, width]`` as 2-D ``([B*T, heads*width], [row stride, 1])`` for a TMA descriptor, or None
    when its strides or alignment do not allow one."""
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


def describable(qk, k, v, B, T, H, HV, K, V, BK, BV):
    """Whether the state kernels' row operands can be TMA descriptors (None stands for a fresh contiguous buffer)."""
    if BK != K or B * T < 64 or HV * V < BV:
        return False
    return all(x is None or rows_view(x, B, T, h, w) is not None
               for x, h, w in ((qk, H, K), (k, H, K), (v, HV, V)))


def state_cfg(n_programs, V, per_head, sm_count):
    """(BV, num_warps, num_stages) of the state kernel for ``n_programs`` (sequence, value head) pairs."""
    cfg = STATE_CFG_FEW if n_programs < 4 * sm_count else STATE_CFG_MANY
    if per_head and n_programs * cdiv(V, STATE_CFG_TMA[0]) <= 2 * sm_count:
        cfg = STATE_CFG_TMA
    return (min(cfg[0], max(16, next_pow2(V))),) + cfg[1:]


def seq_segments(B, T, HV, K, V, BK, n_sm, gluon):
    """(count, length) of the sequence-parallel state pass for a fixed-length call, or None: one sequence whose
    HV x V / 32 state blocks fill at most a quarter of the SMs, on the Gluon kernels (K in {64, 128}, V % 64 == 0)."""
    if not (gluon and B == 1 and K == BK and BK in (64, 128) and V % SEG_BV == 0):
        return None
    want = min(SEG_MAX, n_sm // (HV * cdiv(V, 32)))
    if want < SEG_MIN:
        return None
    length = max(SEG_MIN_CHUNKS, cdiv(cdiv(T, BT), want)) * BT
    count = cdiv(T, length)
    return (count, length) if count >= SEG_MIN else None


def plan_call(q, k, v, *, n_seqs, is_varlen, l2norm, sm_count, pdl_supported):
    """The default plan of a call (the dispatch rule measured on SM90)."""
    B, T, H, K = q.shape
    HV, V = v.shape[2], v.shape[3]
    BK = max(16, next_pow2(K))
    fast = K % 16 == 0 and V % 16 == 0
    if not (fast and BK <= PER_HEAD_MAX_BK) or q.dtype == torch.float32:
        BV, warps, stages = state_cfg(n_seqs * HV, V, False, sm_count)
        if q.dtype == torch.float32:  # (fp32 tiles with BV = 64 and K = 128 exceed a block's shared memory)
            BV = min(BV, FP32_MAX_BV)
        return GdnPlan("generic", "generic", BV, warps, stages)
    gluon = is_sm90(q.device) and not interpreting() and gluon_supported()
    segments = None
    if not is_varlen and describable(q, k, v, B, T, H, HV, K, V, BK, SEG_BV):
        segments = seq_segments(B, T, HV, K, V, BK, sm_count, gluon)
    n_prog = (segments[0] if segments else n_seqs) * HV
    gs = 2 if (HV // H) % 2 == 0 else 1
    BV, warps, stages = state_cfg(n_prog, V, True, sm_count)
    gl_domain = gluon and BK in (64, 128)
    if gl_domain and V % 64 == 0 and n_prog * cdiv(V, 32) > sm_count:
        qside = l2norm and describable(q, q, v, B, T, H, HV, K, V, BK, 64)
        qn, kn = (q if qside or not l2norm else None), (None if l2norm else k)
        if describable(qn, kn, v, B, T, H, HV, K, V, BK, 64):
            out_tma = qside and T > 1
            if qside and V == 128 and n_prog > RC2_ITEMS_PER_SM * sm_count:
                return GdnPlan("per_head", "rc2", 64, 4, RC2_STAGES, gs, True, segments, out_tma, pdl=pdl_supported)
            return GdnPlan("per_head", "rc", 64, 4, RC_STAGES, gs, qside, segments, out_tma, pdl=pdl_supported)
        qside = False
    split_xu = BK <= 32
    if (BV, warps, stages) != STATE_CFG_TMA:
        return GdnPlan("per_head", "triton", BV, warps, stages, gs, False, segments, split_xu=split_xu)
    ws = gl_domain
    qside = ws and l2norm and describable(q, q, v, B, T, H, HV, K, V, BK, BV)
    qn, kn = (q if qside or not l2norm else None), (None if l2norm else k)
    if not describable(qn, kn, v, B, T, H, HV, K, V, BK, BV):
        return GdnPlan("per_head", "triton", BV, warps, stages, gs, False, segments, split_xu=split_xu)
    if ws:
        return GdnPlan("per_head", "ws", BV, warps, WS_STAGES, gs, qside, segments)
    return GdnPlan("per_head", "tma", BV, warps, stages, gs, False, segments, split_xu=split_xu)
