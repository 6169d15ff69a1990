"""Shared pieces of the SM90 chunked Gated-DeltaNet Triton kernels (chunk size 64).

The device helpers here are used by more than one kernel module (``triton_seq``, ``triton_intra``,
``triton_state``), or by the Gluon kernels (``_exp_tile``). Every helper is ``@triton.jit`` and is inlined into
its callers.
"""

import triton
import triton.language as tl

try:  # grid dependency control (programmatic dependent launch) needs Triton >= 3.3
    from triton.language.extra.cuda import gdc_launch_dependents, gdc_wait
    GDC_SUPPORTED = True
except ImportError:  # pragma: no cover - older Triton: the kernels are built without PDL
    gdc_launch_dependents = gdc_wait = None
    GDC_SUPPORTED = False

BT = 64  # chunk size; the kernels hard-wire it (64-row tiles, 64-column A / Aqk workspaces)


@triton.jit
def _pdl_enter(PDL: tl.constexpr):
    """First statement of a kernel launched with ``launch_pdl``: wait for the previous kernel of the stream (its
    memory is then visible), then let the next one launch so that its CTAs are resident while this one finishes.
    Every kernel waits before it completes, so the chain keeps the stream's order. Nothing without ``PDL``."""
    if PDL:
        gdc_wait()
        gdc_launch_dependents()


@triton.jit
def _search_chunk_offsets(co, slot, N, n_search):
    """The largest n < N with ``co[n] <= slot`` (elementwise over ``slot``, int32), by ``n_search`` halvings."""
    lo = tl.zeros_like(slot)
    hi = lo + N - 1
    for _ in range(n_search):
        mid = (lo + hi + 1) // 2
        ok = tl.load(co + mid) <= slot
        lo = tl.where(ok, mid, lo)
        hi = tl.where(ok, hi, mid - 1)
    return lo


@triton.jit
def _chunk_of_slot(slot, co, cu, N, T, n_search, IS_VARLEN: tl.constexpr, SLOT_MAP: tl.constexpr = False):
    """(c, bos, eos, b_idx, tg0) of a chunk slot: chunk ``c`` of the sequence spanning tokens [bos, eos) of batch
    row ``b_idx``, whose first row in the token-indexed ``[*, B*T, *]`` workspaces is ``tg0``.

    Varlen: the sequence is the largest n with ``co[n] <= slot`` (empty sequences are skipped), found by a binary
    search of the chunk offsets ``co``, or with ``SLOT_MAP`` read from the slot map that
    ``atrex_sm90_gdn_slot_seq`` wrote after the offsets. A slot without a chunk (map entry N) reads sequence
    N - 1's bounds; the caller drops it."""
    if IS_VARLEN:
        if SLOT_MAP:
            n = tl.minimum(tl.load(co + N + 1 + slot), N - 1)
        else:
            n = _search_chunk_offsets(co, slot, N, n_search)
        c = slot - tl.load(co + n)
        bos = tl.load(cu + n).to(tl.int32)
        eos = tl.load(cu + n + 1).to(tl.int32)
        b_idx = n * 0
        tg0 = bos
    else:
        NT = tl.cdiv(T, 64)
        b_idx = slot // NT
        c = slot % NT
        bos = 0
        eos = T
        tg0 = b_idx * T
    return c, bos, eos, b_idx, tg0


@triton.jit
def _load_qk_tile(ptr, rows, mrow, offs_k, mk, s_t, USE_L2NORM: tl.constexpr):
    """[len(rows), BK] tile in the input dtype, optionally L2-normalised in fp32 then rounded."""
    x = tl.load(ptr + rows[:, None] * s_t + offs_k[None, :], mask=mrow[:, None] & mk[None, :], other=0.0)
    if USE_L2NORM:
        xf = x.to(tl.float32)
        inv = tl.rsqrt(tl.sum(xf * xf, 1) + 1e-6)
        x = (xf * inv[:, None]).to(x.dtype)
    return x


@triton.jit
def _load_beta(ptr, rows, mrow, s_t, BETA_SIGMOID: tl.constexpr, NEG_EIGVAL: tl.constexpr):
    """beta rows in fp32 (0 outside ``mrow``): as given, or ``sigmoid(beta)`` (times 2 with ``NEG_EIGVAL``)."""
    b = tl.load(ptr + rows * s_t, mask=mrow, other=0.0).to(tl.float32)
    if BETA_SIGMOID:
        b = tl.sigmoid(b)
        if NEG_EIGVAL:
            b = b * 2.0
        b = tl.where(mrow, b, 0.0)
    return b


@triton.jit
def _exp_tile(x, FAST: tl.constexpr):
    """``e^x`` of an fp32 tile; with ``FAST``, ``ex2.approx.ftz.f32``: denormal results flush to zero, which saves
    three instructions per element over ``tl.exp``. Inline PTX, so not under the Triton interpreter."""
    if FAST:
        return tl.inline_asm_elementwise("ex2.approx.ftz.f32 $0, $1;", "=f,f", [x * 1.4426950408889634],
                                         dtype=tl.float32, is_pure=True, pack=1)
    else:
        return tl.exp(x)


@triton.jit
def _softplus(x):
    """``ln(1 + e^x)`` of an fp32 tile, accurate across its range: ``max(x, 0) + log1p(e^-|x|)``, the log1p by
    ``ln(u) * y / (u - 1)`` with ``u = 1 + y`` (exact to a few ulps where ``1 + y`` rounds; ``y`` where it rounds
    to 1). No overflow: ``y <= 1``."""
    y = tl.exp(-tl.abs(x))
    u = 1.0 + y
    l1p = tl.where(u == 1.0, y, tl.log(u) * (y / (u - 1.0)))
    return tl.maximum(x, 0.0) + l1p


@triton.jit
def _gdn_gate(gf, A_log, dt_bias, heads, mh, HAS_DT_BIAS: tl.constexpr):
    """fla's in-kernel GDN gate of a ``[rows, heads]`` fp32 tile of raw g: ``-e^A_log[h] softplus(g + dt_bias[h])``,
    the parameters (any float dtype) read as fp32 per value head."""
    a = tl.load(A_log + heads, mask=mh, other=0.0).to(tl.float32)
    x = gf
    if HAS_DT_BIAS:
        x = x + tl.load(dt_bias + heads, mask=mh, other=0.0).to(tl.float32)[None, :]
    return -tl.exp(a)[None, :] * _softplus(x)
