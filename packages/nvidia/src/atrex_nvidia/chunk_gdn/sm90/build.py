"""Turns a ``GdnPlan`` into the call's launches ``(kernel, grid, args, meta)``, allocating its workspace.

Every launch is built before the first one runs, so the runner can check capture safety up front.
"""

import math
from typing import NamedTuple

import torch

from . import triton_intra as _ti
from . import triton_seq as _ts
from . import triton_state as _tst
from .plan import (
    INTRA_MAXNREG,
    INTRA_STAGES,
    INTRA_WARPS,
    RC2_OUT_REGS,
    RC_OUT_REGS,
    SEG_BV,
    SEG_SCAN_BV,
    WS_OUT_REGS,
    WS_QSIDE_OUT_REGS,
    GdnPlan,
    cdiv,
    interpreting,
    next_pow2,
    rows_view,
)

# Kernels that take part in programmatic dependent launch on the rc / rc2 chain (each waits for its predecessor).
_PDL_KERNELS = frozenset({
    "atrex_sm90_gdn_chunk_offsets", "atrex_sm90_gdn_slot_seq", "atrex_sm90_gdn_gates", "atrex_sm90_gdn_intra_chunk_v3",
    "atrex_sm90_gdn_state_output_gl_rc", "atrex_sm90_gdn_state_output_gl_rc2"})


class Call(NamedTuple):
    q: torch.Tensor
    k: torch.Tensor
    v: torch.Tensor
    g: torch.Tensor
    beta: torch.Tensor
    scale: float
    h0: torch.Tensor | None
    state_v_first: bool
    cu: torch.Tensor | None
    l2norm: bool
    beta_sigmoid: bool
    neg_eigval: bool
    o: torch.Tensor
    ht: torch.Tensor | None
    B: int
    T: int
    H: int
    HV: int
    K: int
    V: int
    N: int
    BK: int
    sm_count: int
    A_log: torch.Tensor | None = None  # fla's in-kernel gate (use_gate_in_kernel) when given
    dt_bias: torch.Tensor | None = None


class Work(NamedTuple):
    """The call's workspace: normalised q/k (or the inputs), UT inverse ``A``, ``Q K^T`` tiles, gate factors."""
    qn: torch.Tensor
    kn: torch.Tensor
    A: torch.Tensor
    Aqk: torch.Tensor
    fac: torch.Tensor
    gam: torch.Tensor  # fac[0]: chunk-local cumulative gate


def _gluon(name):
    """A Gluon kernel, imported on first use: a call that runs only Triton kernels must not need Gluon."""
    from . import gluon_rc, gluon_ws
    return getattr(gluon_ws, name, None) or getattr(gluon_rc, name)


def _t1_safe(kern, T):
    """At T == 1 the state kernels run their twin compiled without T's specialisation (ptxas miscompiles it)."""
    return _tst.NO_T1_SPECIALISATION[kern] if T == 1 else kern


def _strides(*ts):
    return tuple(s for t in ts for s in t.stride()[:3])


def _workspace(plan, c):
    dev, total_t = c.q.device, c.B * c.T
    per_head = plan.intra == "per_head"
    if c.l2norm and (per_head or _fast(c)):
        qn = c.q if plan.qside else torch.empty((c.B, c.T, c.H, c.K), dtype=c.q.dtype, device=dev)
        kn = torch.empty((c.B, c.T, c.H, c.K), dtype=c.q.dtype, device=dev)
    else:
        qn, kn = c.q, c.k
    A = torch.empty((c.HV, total_t, 64), dtype=c.q.dtype, device=dev)
    Aqk = A if plan.qside else torch.empty((c.HV, total_t, 64), dtype=c.q.dtype, device=dev)
    fac = torch.empty((5 if per_head else 1, c.HV, total_t), dtype=torch.float32, device=dev)
    return Work(qn, kn, A, Aqk, fac, fac[0])


def _fast(c):
    """Diagonal scalings on results rather than scaled operands (K and V multiples of 16)."""
    return c.K % 16 == 0 and c.V % 16 == 0


def _dot_precision(c):
    """The generic pair's dot precision: fp32 inputs take tf32x3 (three tf32 passes, about fp32's accuracy); the
    16-bit launches keep their meta (and launch keys) unchanged."""
    return {"DOT_PRECISION": "tf32x3"} if c.q.dtype == torch.float32 else {}


def _gates_form(plan, c):
    """The intra kernel's ``GATES`` form: varlen calls with one value head per per-head intra program."""
    return plan.intra == "per_head" and plan.heads_per_intra == 1 and c.cu is not None


def _gates(launches, c, w, cu, co, n_slots, n_search, gates_form, g_out):
    """The gates kernel: with ``gates_form`` the factor planes of every varlen chunk (the intra kernel's ``GATES``
    form); with ``g_out`` fla's gate transform of the raw g into that fp32 ``[B, T, HV]`` buffer, which the later
    launches read as g. The transform alone runs over fixed-length slots of every batch row (chunk bounds do not
    matter to it), with the beta options off (beta is not read)."""
    bh = min(32, next_pow2(c.HV))
    meta = dict(IS_VARLEN=gates_form, BH=bh, BETA_SIGMOID=c.beta_sigmoid and gates_form,
                NEG_EIGVAL=c.neg_eigval and gates_form, num_warps=4)
    if g_out is not None:
        meta.update(GATE_IN_KERNEL=True, HAS_DT_BIAS=c.dt_bias is not None)
    if not gates_form:
        meta["STORE_FAC"] = False
        cu, co, n_slots, n_search = c.q, c.q, c.B * cdiv(c.T, 64), 0  # (placeholders, never read)
    gate_ptrs = (c.A_log, c.g if c.dt_bias is None else c.dt_bias, g_out) if g_out is not None else (c.g,) * 3
    launches.append((_ts.atrex_sm90_gdn_gates, (n_slots, cdiv(c.HV, bh)), (
        c.g, c.beta, w.fac, co, cu, c.T, c.N, c.HV, n_search, *_strides(c.g, c.beta), c.B * c.T, *gate_ptrs),
        meta))


def _chunk_slots(launches, c, slot_map):
    """(cu, co, n_slots, n_search) of the intra grid; varlen calls get the chunk-offsets launch and, with
    ``slot_map``, the chunk -> sequence map (``co`` then holds N + 1 offsets followed by the map). The returned
    ``cu`` is the clamped int32 copy of ``cu_seqlens`` that the chunk-offsets kernel writes (16-byte aligned at
    the end of the same buffer): every later kernel reads it, so no ``cu_seqlens`` value moves an access out of
    bounds."""
    if c.cu is None:
        return c.q, c.q, c.B * cdiv(c.T, 64), 0  # (q: placeholder pointers, never read)
    n_slots = c.T // 64 + c.N
    n_search = max(1, math.ceil(math.log2(c.N + 1)) + 1)
    head = -(-(c.N + 1 + int(slot_map) * n_slots) // 4) * 4
    buf = torch.empty((head + c.N + 1,), dtype=torch.int32, device=c.q.device)
    co, cus = buf, buf[head:]
    launches.append((_ts.atrex_sm90_gdn_chunk_offsets, (1,), (c.cu, cus, co, c.N, c.T),
                     dict(BLOCK=1024, num_warps=4)))
    if slot_map:
        launches.append((_ts.atrex_sm90_gdn_slot_seq, (cdiv(n_slots, 1024),), (co, cus, c.N, n_slots, n_search),
                         dict(BLOCK=1024, num_warps=4)))
    return cus, co, n_slots, n_search


def _intra_per_head(launches, plan, c, w, cu, co, n_slots, n_search):
    """The per-head intra launch (after the gates kernel where ``_gates_form``)."""
    gs, varlen = plan.heads_per_intra, c.cu is not None
    total_t = c.B * c.T
    extra = dict(maxnreg=INTRA_MAXNREG)
    if c.l2norm:
        extra["INV_FP16"] = True  # the L2 norm bounds the merges' operands: fp16 suffices
    if gs > 1:
        extra["GS"] = gs
    if not interpreting():
        extra["FAST_EXP"] = True
    if plan.qside:
        extra["QSIDE"] = True
    if _gates_form(plan, c):  # the gate factors come from the gates kernel, launched beside the bookkeeping
        extra["GATES"] = True
    launches.append((_ti.atrex_sm90_gdn_intra_chunk_v3, (n_slots * c.HV // gs,), (
        c.q, c.k, c.g, c.beta, w.A, w.Aqk, w.gam, w.fac, w.qn, w.kn, cu, co, c.T, c.N, c.HV, c.K, n_search,
        *_strides(c.q, c.k, c.g, c.beta), total_t), dict(
        IS_VARLEN=varlen, G=c.HV // c.H, BK=c.BK, USE_L2NORM=c.l2norm, BETA_SIGMOID=c.beta_sigmoid,
        NEG_EIGVAL=c.neg_eigval, STORE_QKN=c.l2norm, num_warps=INTRA_WARPS, num_stages=INTRA_STAGES, **extra)))


def _intra_generic(launches, c, w, cu, co, n_slots, n_search):
    fast = _fast(c)
    launches.append((_ti.atrex_sm90_gdn_intra_chunk, (n_slots, c.H), (
        c.q, c.k, c.v, c.g, c.beta, w.A, w.Aqk, w.gam, w.qn, w.kn, c.q, c.q, cu, co, w.fac,
        c.T, c.N, c.HV, c.K, c.V, n_search, *_strides(c.q, c.k, c.v, c.g, c.beta), c.B * c.T), dict(
        IS_VARLEN=c.cu is not None, G=c.HV // c.H, BK=c.BK, BVA=max(16, next_pow2(c.V)), USE_L2NORM=c.l2norm,
        BETA_SIGMOID=c.beta_sigmoid, NEG_EIGVAL=c.neg_eigval, INV_PRODUCT=fast, STORE_QKN=fast and c.l2norm,
        STORE_FAC=False, num_warps=INTRA_WARPS, num_stages=INTRA_STAGES, **_dot_precision(c))))


def _h0_args(h0, state_v_first, placeholder):
    """(use_h0, h0, (s_n, s_h, s_k, s_v)) of the state kernels."""
    if h0 is None:
        return False, placeholder, (0, 0, 0, 0)
    s_k, s_v = (h0.stride(3), h0.stride(2)) if state_v_first else (h0.stride(2), h0.stride(3))
    return True, h0, (h0.stride(0), h0.stride(1), s_k, s_v)


def _rows_args(c, qn, kn):
    """(ROWS, QW, VW, s_qr, s_kr, s_vr) of the TMA state kernels (the operands are describable: the plan checked)."""
    views = [rows_view(x, c.B, c.T, h, d) for x, h, d in ((qn, c.H, c.K), (kn, c.H, c.K), (c.v, c.HV, c.V))]
    if any(x is None for x in views):
        raise ValueError("nvidia.gdn_sm90: the plan's state kernel needs TMA-describable q/k/v rows")
    return (c.B * c.T, c.H * c.K, c.HV * c.V, views[0][1][0], views[1][1][0], views[2][1][0])


def _segments(launches, plan, c, w):
    """The segment pass and the composition: segment initial states into ``hs`` and the final state into ``ht``.
    Returns (hs, the segments' cu_seqlens) for the state pass that forms the outputs."""
    nseg, lseg = plan.segments
    dev, total_t = c.q.device, c.B * c.T
    na = nseg if c.ht is not None else nseg - 1  # (the last segment's transition serves the final state only)
    hs = torch.empty((nseg, c.HV, c.K, c.V), dtype=torch.float32, device=dev)
    cu_seg = torch.empty((nseg + 1,), dtype=torch.int32, device=dev)
    r = torch.empty((c.B, na, c.HV, c.K, c.V + c.K), dtype=torch.float32, device=dev)
    rows, qw, vw, _s_qr, s_kr, s_vr = _rows_args(c, w.kn, w.kn)
    launches.append((_gluon("atrex_sm90_gdn_state_segments_gl"), (cdiv(c.V + c.K, SEG_BV), c.B * na * c.HV), (
        w.kn, c.v, w.A, w.fac, r, cu_seg, c.T, lseg, nseg, na, c.HV, c.K, c.V, c.B * nseg + 1, total_t, rows, qw, vw,
        s_kr, s_vr), dict(G=c.HV // c.H, BK=c.BK, BV=SEG_BV, STAGES=2, num_warps=4)))
    use_h0, h0, h0_strides = _h0_args(c.h0, c.state_v_first, hs)
    ht = c.ht
    if ht is None:
        ht_strides = (0, 0, 0, 0)
    elif c.state_v_first:
        ht_strides = (ht.stride(0), ht.stride(1), ht.stride(3), ht.stride(2))
    else:
        ht_strides = ht.stride()
    launches.append((_ts.atrex_sm90_gdn_segment_scan, (cdiv(c.V, SEG_SCAN_BV), c.B * c.HV), (
        r, h0, hs, ht if ht is not None else hs, nseg, na, c.HV, c.K, c.V, *h0_strides, *ht_strides),
        dict(BK=c.BK, BVS=SEG_SCAN_BV, USE_H0=use_h0, STORE_HT=ht is not None, num_warps=8)))
    return hs, cu_seg


def _h0_prefetch(use_h0, h0_strides):
    """rc / rc2 prefetch the first item's initial state where one of its k / v strides is 1."""
    s_k, s_v = h0_strides[2], h0_strides[3]
    return dict(H0PF=1, H0_KC=s_k == 1) if use_h0 and 1 in (s_k, s_v) else {}


def _state(launches, plan, c, w, s):
    """The state/output launch. ``s`` = (n_seqs, is_varlen, cu, h0, state_v_first, ht) of the state pass."""
    sN, varlen, cu, h0, v_first, ht = s
    use_h0, h0, h0_strides = _h0_args(h0, v_first, c.q)
    o, total_t, BV = c.o, c.B * c.T, plan.block_v
    common = (h0, o, ht if ht is not None else o, cu, c.scale, c.T, c.HV, c.K, c.V)
    meta = dict(IS_VARLEN=varlen, G=c.HV // c.H, BK=c.BK, BV=BV, USE_H0=use_h0, STORE_HT=ht is not None,
                STATE_V_FIRST=v_first)
    grid = (cdiv(c.V, BV), sN * c.HV)
    if plan.gluon or plan.state == "tma":
        ops = (w.qn, w.kn, c.v, w.A, w.Aqk, w.fac, *common, *o.stride()[:3], *h0_strides, total_t,
               *_rows_args(c, w.qn, w.kn), sN * c.HV)
        if plan.state in ("rc", "rc2"):
            rc2 = plan.state == "rc2"
            kern = _gluon("atrex_sm90_gdn_state_output_gl_rc2" if rc2 else "atrex_sm90_gdn_state_output_gl_rc")
            n_items = sN * c.HV * (1 if rc2 else cdiv(c.V, BV))
            opts = dict(num_warps=4, STAGES=plan.stages, OUT_REGS=RC2_OUT_REGS if rc2 else RC_OUT_REGS,
                        **_h0_prefetch(use_h0, h0_strides))
            if plan.qside and not rc2:
                opts["QSIDE"] = True
            if plan.qside and c.q.dtype == torch.bfloat16:
                opts["QNORM_MMA"] = True  # (fp16 squares could overflow)
            if plan.out_tma:
                opts["OUT_TMA"] = True
            launches.append((kern, (min(n_items, c.sm_count),), ops, dict(meta, **opts)))
        elif plan.state == "ws":
            opts = dict(num_warps=4, STAGES=plan.stages, OUT_REGS=WS_QSIDE_OUT_REGS if plan.qside else WS_OUT_REGS)
            if plan.qside:
                opts["QSIDE"] = True
            launches.append((_gluon("atrex_sm90_gdn_state_output_gl_ws"), grid, ops, dict(meta, **opts)))
        else:
            opts = dict(num_warps=plan.warps, num_stages=plan.stages, **({"SPLIT_XU": True} if plan.split_xu else {}))
            launches.append((_t1_safe(_tst.atrex_sm90_gdn_state_output_tma, c.T), grid, ops,
                             dict(meta, **opts)))
    elif plan.state == "triton":
        opts = dict(num_warps=plan.warps, num_stages=plan.stages, **({"SPLIT_XU": True} if plan.split_xu else {}))
        launches.append((_t1_safe(_tst.atrex_sm90_gdn_state_output_v2, c.T), grid, (
            w.qn, w.kn, c.v, w.fac, w.A, w.Aqk, *common, *_strides(w.qn, w.kn, c.v, o), *h0_strides, total_t),
            dict(meta, **opts)))
    else:
        fast = _fast(c)
        launches.append((_t1_safe(_tst.atrex_sm90_gdn_state_output, c.T), grid, (
            w.qn, w.kn, c.v, c.beta, w.gam, w.A, w.Aqk, c.q, c.q, h0, o, ht if ht is not None else o, cu,
            c.scale, c.T, c.HV, c.K, c.V, *_strides(w.qn, w.kn, c.v, c.beta, o), *h0_strides, total_t),
            dict(meta, USE_L2NORM=c.l2norm and not fast, BETA_SIGMOID=c.beta_sigmoid, NEG_EIGVAL=c.neg_eigval,
                 FAST=fast, num_warps=plan.warps, num_stages=plan.stages, **_dot_precision(c))))


def launches(plan: GdnPlan, c: Call) -> list:
    """Every launch of the call, in order."""
    if c.q.dtype == torch.float32 and ((plan.intra, plan.state) != ("generic", "generic") or c.BK > 128):
        raise ValueError(f"nvidia.gdn_sm90: fp32 q/k/v run the generic pair with K <= 128 only, not "
                         f"{plan.intra}/{plan.state} with K = {c.K}")
    out = []
    w = _workspace(plan, c)
    per_head = plan.intra == "per_head"
    cu, co, n_slots, n_search = _chunk_slots(out, c, slot_map=per_head)
    gates_form = _gates_form(plan, c)
    g_out = None
    if c.A_log is not None:  # fla's gate transform first; every later launch reads its result as g
        g_out = torch.empty((c.B, c.T, c.HV), dtype=torch.float32, device=c.q.device)
    if gates_form or g_out is not None:
        _gates(out, c, w, cu, co, n_slots, n_search, gates_form, g_out)
    if g_out is not None:
        c = c._replace(g=g_out)
    if per_head:
        _intra_per_head(out, plan, c, w, cu, co, n_slots, n_search)
    else:
        _intra_generic(out, c, w, cu, co, n_slots, n_search)
    if plan.segments is not None:
        hs, cu_seg = _segments(out, plan, c, w)
        s = (plan.segments[0], True, cu_seg, hs, False, None)
    else:
        s = (c.N, c.cu is not None, cu, c.h0, c.state_v_first, c.ht)
    _state(out, plan, c, w, s)
    if plan.pdl and not interpreting():
        out = [(kern, grid, args, dict(meta, PDL=True, launch_pdl=True)) if kern.__name__ in _PDL_KERNELS
               else (kern, grid, args, meta) for kern, grid, args, meta in out]
    return out
