"""FlashInfer (0.7.x, ``flashinfer-python``) as ``atrex bench`` baselines: a comparison, never an ATREX
dependency (imported lazily, inside each maker). Facts used here, from FlashInfer 0.7.2's sources:

- ``flashinfer.gdn_prefill.chunk_gated_delta_rule``: packed ``[T, H, D]`` q/k/v (no batch axis),
  ``cu_seqlens`` of any integer dtype (required, zero-length sequences allowed); ``g`` is the decay
  *factor* alpha in (0, 1] (the kernel takes its log), ``g`` / ``beta`` ``[T, HV]`` fp32; state
  ``[N, HV, V, K]`` (K last); one head size (K = V; the SM90 kernel: 128 only); fp16/bf16 inputs; GQA
  or GVA (``HV = r * H``).
- ``flashinfer.gdn_decode``: raw gate inputs (``g = -exp(A_log) * softplus(a + dt_bias)``, softplus
  threshold 20; ``beta = sigmoid(b)``), ``a`` / ``b`` in q's dtype; fp32 pool ``[P, HV, V, K]``;
  ``gated_delta_rule_decode_pretranspose`` for T = 1 (slot -1 skipped, output 0),
  ``gated_delta_rule_mtp`` for T > 1 (``ssm_state_indices [B, T]`` int32 writes the state after token t
  to its slot, as vLLM's MTP layout does). ``[B, T]`` per call: every sequence of one length.
- Attention wrappers: ``plan()`` on CSR page metadata (indptr / indices / last_page_len), ``run()`` per
  call; NHD caches ``[pages, page_size, Hk, D]`` as vLLM's; window left only (right 0 under causal);
  ``logits_soft_cap``; ``sinks`` fp32 on the paged paths; LSE base 2 unless ``lse_base="ln"``.

As vLLM does once per step, ``plan()`` runs in the maker; the timed callable is ``run()``."""

from __future__ import annotations

import functools
import math

import torch

from atrex.validation.baselines import Baseline, Skip, needs, start_slots

WHAT = "flashinfer (flashinfer-python)"
_LN2 = math.log(2.0)


# ---- Gated DeltaNet ------------------------------------------------------------------------------

def chunk_gdn(kw: dict, target, graph: bool = False) -> Baseline | Skip:
    """``flashinfer.gdn_prefill.chunk_gated_delta_rule`` on the case's call: packed layout, alpha =
    exp(g), fp32 gates, the initial state in K-last layout; the output state read back into ATREX's."""
    miss = needs(target, "flashinfer", WHAT)
    if miss:
        return miss
    q, k, v = kw["q"], kw["k"], kw["v"]
    b, t, h, kd = q.shape
    hv, vd = v.shape[2], v.shape[3]
    if kd != vd or kd != 128:
        return Skip(f"K={kd}, V={vd} (FlashInfer's SM90 GDN prefill: K = V = 128)")
    if q.dtype not in (torch.float16, torch.bfloat16):
        return Skip(f"q dtype {q.dtype} (FlashInfer: fp16/bf16)")
    if hv % h:
        return Skip(f"H={h}, HV={hv}")
    opts = [n for n in ("use_gate_in_kernel", "use_beta_sigmoid_in_kernel", "allow_neg_eigval") if kw.get(n)]
    if opts:  # fla's in-kernel gate / beta options: FlashInfer takes the final gates only
        return Skip(f"{', '.join(opts)} (FlashInfer takes alpha and beta as given)")
    from flashinfer.gdn_prefill import chunk_gated_delta_rule as fi

    cu = kw.get("cu_seqlens")
    cu = (torch.arange(b + 1, device=q.device, dtype=torch.int64) * t) if cu is None else cu.to(torch.int64)
    lens = (cu[1:] - cu[:-1]).tolist()
    v_first = kw.get("state_v_first", False)
    h0 = kw.get("initial_state")
    if h0 is not None:
        h0 = (h0 if v_first else h0.transpose(-1, -2)).float().contiguous()
    args = dict(g=kw["g"].float().exp().reshape(b * t, hv).contiguous(),
                beta=kw["beta"].float().reshape(b * t, hv).contiguous(), scale=kw.get("scale"),
                initial_state=h0, output_final_state=True, cu_seqlens=cu,
                use_qk_l2norm_in_kernel=kw.get("use_qk_l2norm_in_kernel", False), max_seqlen=max([*lens, 1]))
    q2, k2, v2 = (x.reshape(b * t, *x.shape[2:]).contiguous() for x in (q, k, v))

    def result(res):
        o, s = res
        return o.reshape(b, t, hv, vd), (s if v_first else s.transpose(-1, -2))

    return Baseline(lambda: fi(q2, k2, v2, **args), result=result)


def decode_gates(g: torch.Tensor, beta: torch.Tensor | None, dtype) -> tuple:
    """FlashInfer's decode gate inputs for ATREX's ``g`` (log decay) and ``beta``, with ``A_log = 0`` and
    ``dt_bias = 0``: ``a = softplus^-1(-g)``, ``b = logit(beta)``, both rounded to ``dtype`` as FlashInfer
    takes them. Returns ``(a, b, g_eff, beta_eff)``: the gates FlashInfer then applies (fp32), which the
    reference is given for the correctness check."""
    y = (-g.float()).clamp_min(1e-6)
    a = (y + torch.log(-torch.expm1(-y))).to(dtype)  # log(exp(y) - 1), stable
    if beta is None:
        b = torch.full_like(a, 30.0)  # sigmoid(30) is 1.0 in fp32
    else:
        p = beta.float().clamp(1e-6, 1 - 1e-6)
        b = torch.log(p / (1 - p)).to(dtype)
    af = a.float()
    g_eff = -torch.where(af > 20.0, af, torch.nn.functional.softplus(af))
    return a, b, g_eff, torch.sigmoid(b.float())


def _decode_shape(kw: dict) -> tuple[int, int] | Skip:
    """(N, T): the number of sequences and their one length (FlashInfer's decode takes ``[B, T]``)."""
    cu = kw.get("cu_seqlens")
    if cu is None:
        return kw["q"].shape[0], kw["q"].shape[1]
    lens = (cu[1:] - cu[:-1]).tolist()
    if len(set(lens)) != 1 or lens[0] == 0:
        return Skip(f"sequence lengths {sorted(set(lens))} (FlashInfer's decode takes [B, T], T >= 1)")
    return len(lens), lens[0]


def gdn_decode(kw: dict, target, graph: bool = False) -> Baseline | Skip:
    """``flashinfer.gdn_decode`` on a gdn_decode call: T = 1 through ``gated_delta_rule_decode_pretranspose``
    with the pool and per-sequence slots; T > 1 through ``gated_delta_rule_mtp`` with the start slots and
    (2-D indices) the per-token slots. A fresh copy of the pool is updated in place, as ATREX's is."""
    miss = needs(target, "flashinfer", WHAT)
    if miss:
        return miss
    q, pool = kw["q"], kw["initial_state"]
    kd, vd, hv = q.shape[-1], kw["v"].shape[-1], kw["v"].shape[2]
    if not kw.get("state_v_first", True):
        return Skip("K-first pool (FlashInfer's pool decode takes [P, HV, V, K])")
    if pool.dtype != torch.float32:
        return Skip(f"{pool.dtype} pool (mapped: fp32; FlashInfer's bf16 path redirects padding to slot 0)")
    if kd < 128 or vd < 128 or q.dtype not in (torch.float16, torch.bfloat16):
        return Skip(f"K={kd}, V={vd}, {q.dtype} (FlashInfer: K, V >= 128, fp16/bf16)")
    shape = _decode_shape(kw)
    if isinstance(shape, Skip):
        return shape
    n, t = shape
    import flashinfer.gdn_decode as fid

    start = start_slots(kw).to(torch.int32)
    idx = kw.get("ssm_state_indices")
    per_token = idx is not None and idx.dim() == 2 and t > 1
    if t > 1 and bool((start < 0).any()):
        return Skip("padded MTP sequences")
    a, b, g_eff, beta_eff = decode_gates(kw["g"], kw.get("beta"), q.dtype)
    x = {name: kw[name].reshape(n, t, *kw[name].shape[2:]) for name in ("q", "k", "v")}
    a, b = a.reshape(n, t, hv), b.reshape(n, t, hv)
    zeros = torch.zeros(hv, dtype=torch.float32, device=q.device)
    mine = pool.clone()
    common = dict(A_log=zeros, a=a, dt_bias=zeros, b=b, scale=kw.get("scale"),
                  use_qk_l2norm=kw.get("use_qk_l2norm_in_kernel", False))
    if t == 1:
        def fn():
            return fid.gated_delta_rule_decode_pretranspose(x["q"], x["k"], x["v"], None, initial_state=mine,
                                                            initial_state_indices=start, **common)
    else:
        tok = idx[:, :t].to(torch.int32).contiguous() if per_token else None

        def fn():
            return fid.gated_delta_rule_mtp(x["q"], x["k"], x["v"], mine, start, ssm_state_indices=tok,
                                            disable_state_update=False, **common)
    ref_kw = {**kw, "g": g_eff.reshape(kw["g"].shape), "beta": beta_eff.reshape(kw["g"].shape)}
    inplace = kw.get("inplace_final_state", True)
    o_shape = (*kw["q"].shape[:2], hv, vd)
    return Baseline(fn, result=lambda res: (res[0].reshape(o_shape), res[1] if inplace else None), ref_kw=ref_kw)


# ---- attention -----------------------------------------------------------------------------------

@functools.cache
def _workspace(device: str) -> torch.Tensor:
    """One zeroed 128 MB float workspace per device, shared by the wrappers (run one at a time)."""
    return torch.zeros(128 << 20, dtype=torch.uint8, device=device)


def paged_kv_csr(block_table: torch.Tensor, seqused_k: torch.Tensor, page: int) -> tuple:
    """vLLM's ``block_table [B, W]`` / ``seqused_k [B]`` as FlashInfer's CSR page metadata: ``indptr [B+1]``,
    ``indices [indptr[-1]]`` (the used pages, in order), ``last_page_len [B]`` (1..page; 0 without keys),
    int32 on the table's device."""
    lens = seqused_k.cpu().tolist()
    table = block_table.cpu()
    pages = [-(-n // page) for n in lens]
    indptr = [0]
    for p in pages:
        indptr.append(indptr[-1] + p)
    indices = torch.cat([table[i, :p] for i, p in enumerate(pages)]) if pages else table.new_zeros(0)
    last = [n - (p - 1) * page if p else 0 for n, p in zip(lens, pages)]
    dev = block_table.device
    return (torch.tensor(indptr, dtype=torch.int32, device=dev), indices.to(torch.int32).to(dev),
            torch.tensor(last, dtype=torch.int32, device=dev))


def attn_common(kw: dict, target) -> dict | Skip:
    """The plan arguments every FlashInfer attention path shares, or why the call cannot be expressed."""
    miss = needs(target, "flashinfer", WHAT)
    if miss:
        return miss
    q, k, v = kw["q"], kw["k"], kw["v"]
    if q.dtype not in (torch.float16, torch.bfloat16):
        return Skip(f"q dtype {q.dtype} (mapped: fp16/bf16; fp8 descales are per (sequence, head) here)")
    if v.shape[-1] != q.shape[-1]:
        return Skip("head_dim_v != head_dim")
    causal = bool(kw.get("causal", False))
    left, right = kw.get("window_size") or (-1, -1)
    if not causal and right >= 0:
        return Skip(f"window right {right} without causal (FlashInfer: left window only)")
    k_lens = kw["seqused_k"] if kw.get("block_table") is not None else kw["cu_seqlens_k"].diff()
    if bool((k_lens == 0).any()):
        return Skip("a sequence without keys")
    return dict(num_qo_heads=q.shape[1], num_kv_heads=k.shape[-2], causal=causal, window_left=max(left, -1),
                logits_soft_cap=float(kw.get("softcap") or 0.0), sm_scale=kw.get("softmax_scale"),
                q_data_type=q.dtype, kv_data_type=k.dtype)


def _attn_result(kw: dict, lse_scale: float = 1.0):
    """FlashInfer's ``out`` / ``(out, lse [T, H])`` as ATREX's ``(out, lse [H, T])`` (natural log)."""
    def read(res):
        if isinstance(res, tuple):
            return res[0], (res[1].float() * lse_scale).transpose(0, 1)
        return res, None
    return read


def _sinks(kw: dict):
    s = kw.get("s_aux")
    return None if s is None else s.float().contiguous()


def decode(kw: dict, target, graph: bool = False, tensor_cores: bool = False) -> Baseline | Skip:
    """``BatchDecodeWithPagedKVCacheWrapper``: paged calls whose sequences all have the same query length
    (1, or more with tensor cores, causal), as a decode step is."""
    c = attn_common(kw, target)
    if isinstance(c, Skip):
        return c
    if kw.get("block_table") is None:
        return Skip("non-paged KV (the decode wrapper is paged)")
    q_lens = set(kw["cu_seqlens_q"].diff().tolist())
    if len(q_lens) != 1 or 0 in q_lens:
        return Skip(f"query lengths {sorted(q_lens)} (the decode wrapper: one length per step)")
    q_len = q_lens.pop()
    if q_len > 1 and not (tensor_cores and c["causal"]):
        return Skip(f"{q_len} queries per sequence (needs tensor cores and causal)")
    import flashinfer

    page = kw["k"].shape[1]
    indptr, indices, last = paged_kv_csr(kw["block_table"], kw["seqused_k"], page)
    bufs = dict(paged_kv_indptr_buffer=indptr, paged_kv_indices_buffer=indices,
                paged_kv_last_page_len_buffer=last) if graph else {}
    w = flashinfer.BatchDecodeWithPagedKVCacheWrapper(_workspace(str(kw["q"].device)), "NHD", use_cuda_graph=graph,
                                                      use_tensor_cores=tensor_cores, **bufs)
    w.plan(indptr, indices, last, c["num_qo_heads"], c["num_kv_heads"], kw["q"].shape[-1], page,
           window_left=c["window_left"], logits_soft_cap=c["logits_soft_cap"], sm_scale=c["sm_scale"],
           q_data_type=c["q_data_type"], kv_data_type=c["kv_data_type"], q_len_per_req=q_len)
    q, kv, sinks, lse = kw["q"], (kw["k"], kw["v"]), _sinks(kw), bool(kw.get("return_softmax_lse"))
    return Baseline(lambda: w.run(q, kv, sinks=sinks, return_lse=lse), result=_attn_result(kw, _LN2))


def _resolved(w, backend: str, fa3_label: str) -> Skip | None:
    """After ``plan()``: an ``auto`` wrapper that chose FA3 is the same kernel as the fa3 row."""
    if backend == "auto" and getattr(w, "_backend", None) == "fa3":
        return Skip(f"auto chose fa3 here: the same kernel as {fa3_label}")
    return None


def paged(kw: dict, target, graph: bool = False, backend: str = "auto") -> Baseline | Skip:
    """``BatchPrefillWithPagedKVCacheWrapper`` (``backend`` "fa3" or "auto") on a paged call: prefill,
    chunked prefill and decode (FA3's decode path on SM90)."""
    c = attn_common(kw, target)
    if isinstance(c, Skip):
        return c
    if kw.get("block_table") is None:
        return Skip("non-paged KV (see the ragged rows)")
    import flashinfer

    page, dev = kw["k"].shape[1], kw["q"].device
    indptr, indices, last = paged_kv_csr(kw["block_table"], kw["seqused_k"], page)
    qo = kw["cu_seqlens_q"].to(torch.int32)
    bufs = dict(qo_indptr_buf=qo, paged_kv_indptr_buf=indptr, paged_kv_indices_buf=indices,
                paged_kv_last_page_len_buf=last) if graph else {}
    w = flashinfer.BatchPrefillWithPagedKVCacheWrapper(_workspace(str(dev)), "NHD", use_cuda_graph=graph,
                                                       backend=backend, **bufs)
    w.plan(qo, indptr, indices, last, c["num_qo_heads"], c["num_kv_heads"], kw["q"].shape[-1], page,
           causal=c["causal"], sm_scale=c["sm_scale"], window_left=c["window_left"],
           logits_soft_cap=c["logits_soft_cap"], q_data_type=c["q_data_type"], kv_data_type=c["kv_data_type"])
    same = _resolved(w, backend, "flashinfer_paged_fa3")
    if same:
        return same
    q, kv, sinks, lse = kw["q"], (kw["k"], kw["v"]), _sinks(kw), bool(kw.get("return_softmax_lse"))
    extra = {"lse_base": "ln"} if lse else {}
    return Baseline(lambda: w.run(q, kv, sinks=sinks, return_lse=lse, **extra), result=_attn_result(kw))


def ragged(kw: dict, target, graph: bool = False, backend: str = "auto") -> Baseline | Skip:
    """``BatchPrefillWithRaggedKVCacheWrapper`` (``backend`` "fa3" or "auto") on a non-paged varlen call."""
    c = attn_common(kw, target)
    if isinstance(c, Skip):
        return c
    if kw.get("block_table") is not None:
        return Skip("paged KV (see the paged rows)")
    if kw.get("s_aux") is not None:
        return Skip("sinks (the ragged wrapper's run() takes none)")
    import flashinfer

    qo, kvp = kw["cu_seqlens_q"].to(torch.int32), kw["cu_seqlens_k"].to(torch.int32)
    bufs = dict(qo_indptr_buf=qo, kv_indptr_buf=kvp) if graph else {}
    w = flashinfer.BatchPrefillWithRaggedKVCacheWrapper(_workspace(str(kw["q"].device)), "NHD",
                                                        use_cuda_graph=graph, backend=backend, **bufs)
    w.plan(qo, kvp, c["num_qo_heads"], c["num_kv_heads"], kw["q"].shape[-1], causal=c["causal"],
           sm_scale=c["sm_scale"], window_left=c["window_left"], logits_soft_cap=c["logits_soft_cap"],
           q_data_type=c["q_data_type"], kv_data_type=c["kv_data_type"])
    same = _resolved(w, backend, "flashinfer_ragged_fa3")
    if same:
        return same
    q, k, v, lse = kw["q"], kw["k"], kw["v"], bool(kw.get("return_softmax_lse"))
    extra = {"lse_base": "ln"} if lse else {}
    return Baseline(lambda: w.run(q, k, v, return_lse=lse, **extra), result=_attn_result(kw))


#: flash_attn baselines, in column order (labels start with "flashinfer": `--peer-path` finds them by it)
ATTENTION = {
    "flashinfer_decode": functools.partial(decode, tensor_cores=False),
    "flashinfer_decode_tc": functools.partial(decode, tensor_cores=True),
    "flashinfer_paged_fa3": functools.partial(paged, backend="fa3"),
    "flashinfer_paged": functools.partial(paged, backend="auto"),
    "flashinfer_ragged_fa3": functools.partial(ragged, backend="fa3"),
    "flashinfer_ragged": functools.partial(ragged, backend="auto"),
}
