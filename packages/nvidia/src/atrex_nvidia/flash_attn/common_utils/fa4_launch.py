"""Launching FA4 (b19 or b36) for a normalized call, with a per-configuration cache of compiled kernels.

FA4's own Python path (``_flash_attn_fwd``) re-derives tiles, hashes the softcap closure's source and
builds its compile key on every call (73-121 us of host time on the H200 host). ATREX calls it only
once per configuration (the *slow path*): that call compiles (or finds) the kernel and runs it, and
the compiled object FA4 looked up is recorded under an ATREX key built from the call's static
properties. Later calls of the same configuration (the *fast path*) call that compiled object
directly with the runtime tensors: the same binary with the same arguments FA4 itself passes, so
results are bitwise identical to FA4's path.

The ATREX key holds everything that changes FA4's binary (its compile key, restricted to the
options the adapter uses) and more (page size and softcap value exactly), so it is never coarser
than FA4's: dtype, D, GQA ratio, paged/page size, mask kind and which window bounds are present,
softcap value, sink and LSE presence, descale presence, FA4 arch, and on 10.x the q_stage choice
that reads ``max_seqlen_q``. With b36 the key also holds the two flags its compile key adds for
ATREX's calls: whether the varlen batch is above 256 (FA4 then passes a per-call block-count prefix
sum, recomputed here on the fast path with FA4's own helper) and whether max_seqlen_q * G fits one
q_stage * tile_m block (``is_static_persistent``). The set of keys is the record of warmed
specializations: under CUDA graph capture a missing key raises :class:`AtrexCaptureError` before any
allocation or launch.

The compiled kernel's positional arguments are FA4's own call in each release: b19 passes
``(..., window_left, window_right, sink[, descales], None, aux)``; b36 appends the prefix sum
(9.x/12.x: ``cu_total_m_blocks, None``; 10.x: ``None x4, cu_total_m_blocks, None,
blocks_to_batch, max_seqlen_q``).
"""

from __future__ import annotations

import threading

import torch

from atrex.errors import AtrexCaptureError

from .fa4_domain import FA4_B19, FA4_MODULE, Fa4Domain, fa4_window

__all__ = ["clear_compiled", "prewarm_call", "run_call", "spec_key", "warmed_keys"]

_lock = threading.Lock()
_compiled: dict[tuple, object] = {}  # ATREX key -> FA4 compiled kernel (tvm-ffi callable)
_iface = None
_aux_none = None
_descale_cls = None


def _fa4():
    global _iface, _aux_none, _descale_cls
    if _iface is None:
        import importlib

        iface = importlib.import_module(FA4_MODULE)
        from flash_attn.cute.flash_fwd_sm100 import DescaleTensors
        from flash_attn.cute.utils import AuxData

        _aux_none = AuxData(None, None)
        _descale_cls = DescaleTensors
        _iface = iface
    return _iface


def spec_key(call, dom: Fa4Domain) -> tuple:
    """The ATREX specialization key of ``call`` (host values only)."""
    mask, wl, wr = fa4_window(call)
    g = call.num_heads_q // call.num_heads_k
    q_stage = _q_stage(call, dom)
    key = (dom.fa4_arch, call.dtype, call.head_dim, call.head_dim_v, g, call.page_size, mask,
           wl is None, wr is None, call.softcap, call.s_aux is not None, call.return_lse,
           call.q_descale is not None, call.k_descale is not None, call.v_descale is not None, q_stage)
    if dom.fa4_version == FA4_B19:
        return key
    one_m_block = call.max_seqlen_q * g <= max(q_stage, 1) * dom.tile_m(call.head_dim)
    return (*key, dom.fa4_version, call.s_aux.dtype if call.s_aux is not None else None,
            call.batch > dom.cu_hint_batch_above, one_m_block)


def _q_stage(call, dom: Fa4Domain) -> int:
    """FA4's q_stage on 10.x (2 if max_seqlen_q * G > tile_m (128) else 1; D = 256 is not served
    there with b36), 0 elsewhere (q_stage 1, not part of the key)."""
    if dom.fa4_arch // 10 == 10:
        return 2 if call.max_seqlen_q * (call.num_heads_q // call.num_heads_k) > 128 else 1
    return 0


def warmed_keys() -> tuple[tuple, ...]:
    return tuple(_compiled)


def clear_compiled() -> None:
    with _lock:
        _compiled.clear()


def _descales(call):
    """fp8 descales as FA4 needs them: fp32 [B, Hk], materialised when strides are not plain
    (vLLM passes stride-0 expands; CuTe rejects zero strides). None for fp16/bf16 (core drops them)."""
    out = []
    for t in (call.q_descale, call.k_descale, call.v_descale):
        if t is not None and not t.is_contiguous():
            t = t.contiguous()
        out.append(t)
    return out


class _Recorder:
    """Stands in for FA4's compile cache during one slow-path call and remembers the compiled
    object FA4 launched (``cache[key](*args)`` is how FA4 calls it)."""

    def __init__(self, inner):
        self.inner = inner
        self.fn = None

    def __contains__(self, key):
        return key in self.inner

    def __getitem__(self, key):
        fn = self.inner[key]
        self.fn = fn
        return fn

    def __setitem__(self, key, fn):
        self.inner[key] = fn

    def __getattr__(self, name):
        return getattr(self.inner, name)


def _run_fa4(call, out, dom: Fa4Domain, key: tuple | None):
    """FA4's own path (keywords only), recording the compiled kernel under ``key``. Returns the LSE."""
    iface = _fa4()
    _, wl, wr = fa4_window(call)
    qd, kd, vd = _descales(call)
    kwargs = dict(
        q=call.q, k=call.k, v=call.v,
        cu_seqlens_q=call.cu_seqlens_q, cu_seqlens_k=call.cu_seqlens_k, seqused_k=call.seqused_k,
        max_seqlen_q=call.max_seqlen_q, max_seqlen_k=call.max_seqlen_k,  # host ints, always given
        page_table=call.block_table,
        softmax_scale=call.softmax_scale, causal=call.causal, softcap=call.softcap,
        window_size_left=wl, window_size_right=wr,  # each -1 -> None separately
        learnable_sink=call.s_aux,
        num_splits=1,  # SM90: FA4 has no split-KV; elsewhere ATREX's graph-static choice
        pack_gqa=None, _arch=dom.fa4_arch,
        return_lse=call.return_lse, out=out,
        q_descale=qd, k_descale=kd, v_descale=vd,
    )
    fwd = iface._flash_attn_fwd
    with _lock:
        rec = _Recorder(fwd.compile_cache)
        fwd.compile_cache = rec
        try:
            res = fwd(**kwargs)
        finally:
            fwd.compile_cache = rec.inner
        if key is not None and rec.fn is not None:
            _compiled[key] = rec.fn
    return _fix_sink_lse(call, res[1])  # b19 returns 2 or 4 values, b36 5: index, never unpack


def _fix_sink_lse(call, lse):
    """FA4 b19 returns LSE NaN (output 0) for a row that sees no key when a sink is given (observed on
    the H200 for a zero-length KV sequence); the contract's value is the sink logit (C§1.4). One
    elementwise kernel, only with sinks and LSE; capture-safe (no host read)."""
    if lse is not None and call.s_aux is not None:
        torch.where(torch.isnan(lse), call.s_aux.float()[:, None], lse, out=lse)
    return lse


def _empty_kv(call, out):
    """No KV at all (0 tokens / 0 blocks): every row sees no key -> output 0, LSE -inf or the sink."""
    out.zero_()
    if not call.return_lse:
        return None
    if call.s_aux is not None:
        return call.s_aux.float()[:, None].expand(call.num_heads_q, call.total_q).contiguous()
    return torch.full((call.num_heads_q, call.total_q), float("-inf"), dtype=torch.float32, device=call.device)


def run_call(call, out, dom: Fa4Domain):
    """Run ``call`` into ``out``; returns the LSE ``[Hq, Tq]`` fp32 when asked, else None."""
    key = spec_key(call, dom)
    fn = _compiled.get(key)
    if fn is None:
        if call.capturing:
            raise AtrexCaptureError(
                f"nvidia.fa4: the FA4 specialization {key} for this call is not compiled and CUDA-graph "
                "capture is active; prewarm first (atrex.prewarm('flash_attn_varlen', [call kwargs]) "
                "or one eager call with the same static shape) before capturing")
        if call.k.shape[0] == 0:
            return _empty_kv(call, out)
        return _run_fa4(call, out, dom, key)
    if call.k.shape[0] == 0:
        return _empty_kv(call, out)
    _, wl, wr = fa4_window(call)
    lse = None
    if call.return_lse:
        lse = torch.empty((call.num_heads_q, call.total_q), dtype=torch.float32, device=call.device)
    q, k, v = call.q, call.k, call.v
    if call.is_fp8:  # FA4 passes fp8 as raw bytes (DLPack export) to the kernel compiled for fp8
        q, k, v = q.view(torch.uint8), k.view(torch.uint8), v.view(torch.uint8)
    elif q.requires_grad or k.requires_grad or v.requires_grad:
        q, k, v = q.detach(), k.detach(), v.detach()
    ten_x = dom.fa4_arch // 10 == 10
    if ten_x:
        if dom.hd256_dedicated and call.head_dim == 256:  # FA4 makes these fully contiguous first
            q, k, v = (x if x.is_contiguous() else x.contiguous() for x in (q, k, v))
        qd, kd, vd = _descales(call)
        desc = None if qd is None and kd is None and vd is None else _descale_cls(qd, kd, vd)
    args = (q, k, v, out, lse, call.softmax_scale, call.cu_seqlens_q, call.cu_seqlens_k, None, call.seqused_k,
            call.block_table, wl, wr, call.s_aux)
    if dom.fa4_version == FA4_B19:
        if ten_x:
            fn(*args, desc, None, _aux_none)
        else:
            fn(*args, None, _aux_none)
    else:
        cu_total, blocks_to_batch = _cu_hint(call, dom)
        if ten_x:
            fn(*args, desc, None, _aux_none, None, None, None, None, cu_total, None, blocks_to_batch,
               call.max_seqlen_q)
        else:
            fn(*args, None, _aux_none, cu_total, None)
    if call.s_aux is not None and lse is not None:
        return _fix_sink_lse(call, lse)
    return lse


def _cu_hint(call, dom: Fa4Domain):
    """b36: ``(cu_total_m_blocks, blocks_to_batch)`` as FA4 computes them for this call (both None
    for batches up to ``dom.cu_hint_batch_above``), with FA4's own helpers and its arguments for
    ATREX's calls (no block sparsity, no split-KV, 1-CTA tiles, pack_gqa = G > 1)."""
    if call.batch <= dom.cu_hint_batch_above:
        return None, None
    g = call.num_heads_q // call.num_heads_k
    tile_m, q_stage = dom.tile_m(call.head_dim), max(_q_stage(call, dom), 1)
    cu_total, _ = _iface._compute_tile_cumsum(
        cu_seqlens=call.cu_seqlens_q, tile_size=tile_m, q_stage=q_stage, cluster_shape_m=1,
        qhead_per_kvhead=g, pack_gqa=g > 1)
    blocks_to_batch = None
    if dom.fa4_arch // 10 == 10 and _iface.USE_BLOCKS_TO_BATCH:  # passed only on 10.x
        n = _iface._blocks_to_batch_size(call.total_q, call.batch, tile_m, g, g > 1)
        blocks_to_batch = _iface._compute_blocks_to_batch(cu_total, n, cu_total.device)
    return cu_total, blocks_to_batch


def prewarm_call(call, dom: Fa4Domain) -> None:
    """Compile (by one run into scratch buffers) the FA4 specialization of ``call``."""
    key = spec_key(call, dom)
    if key in _compiled or call.total_q == 0 or call.k.shape[0] == 0:
        return
    if call.capturing:
        raise AtrexCaptureError("nvidia.fa4: prewarm during CUDA-graph capture; prewarm before capturing")
    out = torch.empty((call.total_q, call.num_heads_q, call.head_dim_v), dtype=call.out_dtype, device=call.device)
    _run_fa4(call, out, dom, key)

