"""A stand-in for FlashInfer's attention wrappers on CPU tensors, written from FlashInfer 0.7.2's documented
conventions (CSR page metadata, NHD caches, left window, LSE base 2 unless lse_base="ln"), for the CPU tests of
atrex.validation.baselines_flashinfer. The math is ATREX's float64 oracle, one sequence at a time."""

import math

import torch

from atrex.reference.oracle import attention_oracle


class _Wrapper:
    def __init__(self, workspace, kv_layout="NHD", use_cuda_graph=False, backend="auto", use_tensor_cores=False,
                 **bufs):
        assert kv_layout == "NHD"
        self._backend = backend

    def _plan(self, qo, kv_starts, causal, window_left, logits_soft_cap, sm_scale):
        self.qo, self.kv_starts = qo.tolist(), kv_starts
        self.opts = dict(causal=causal, window_size=(window_left, 0 if causal else -1), softcap=logits_soft_cap,
                         softmax_scale=sm_scale)
        if self._backend == "auto":
            self._backend = "fa2"  # never "fa3" here: the auto rows are measured

    def _attend(self, q, seqs, sinks, return_lse, lse_base):
        out = torch.zeros(q.shape, dtype=q.dtype)
        lse = torch.full((q.shape[0], q.shape[1]), float("-inf"))
        for b, (k, v) in enumerate(seqs):
            s, e = self.qo[b], self.qo[b + 1]
            o, l_ = attention_oracle(q[s:e], k, v, torch.tensor([0, e - s]), cu_seqlens_k=torch.tensor([0, len(k)]),
                                     s_aux=sinks, **self.opts)
            out[s:e] = o.to(q.dtype)
            lse[s:e] = l_.t().float()
        if lse_base != "ln":
            lse = lse / math.log(2.0)
        return (out, lse) if return_lse else out


class _Paged(_Wrapper):
    def plan(self, qo, indptr, indices, last, hq, hk, d, page, causal=False, window_left=-1, logits_soft_cap=0.0,
             sm_scale=None, **kw):
        self.pages = [indices[indptr[b]:indptr[b + 1]].tolist() for b in range(len(indptr) - 1)]
        self.lens = [(len(p) - 1) * page + int(n) for p, n in zip(self.pages, last.tolist())]
        self._plan(qo, None, causal, window_left, logits_soft_cap, sm_scale)

    def run(self, q, kv, sinks=None, return_lse=False, lse_base="log2"):
        k_cache, v_cache = kv
        seqs = [(k_cache[p].flatten(0, 1)[:n], v_cache[p].flatten(0, 1)[:n]) for p, n in zip(self.pages, self.lens)]
        return self._attend(q, seqs, sinks, return_lse, lse_base)


class BatchPrefillWithPagedKVCacheWrapper(_Paged):
    pass


class BatchDecodeWithPagedKVCacheWrapper(_Paged):
    def plan(self, indptr, indices, last, hq, hk, d, page, q_len_per_req=1, **kw):
        qo = torch.arange(len(last) + 1) * q_len_per_req
        super().plan(qo, indptr, indices, last, hq, hk, d, page, causal=q_len_per_req > 1, **kw)

    def run(self, q, kv, sinks=None, return_lse=False):
        return super().run(q, kv, sinks, return_lse, "log2")


class BatchPrefillWithRaggedKVCacheWrapper(_Wrapper):
    def plan(self, qo, kv_indptr, hq, hk, d, causal=False, window_left=-1, logits_soft_cap=0.0, sm_scale=None,
             **kw):
        self._plan(qo, kv_indptr.tolist(), causal, window_left, logits_soft_cap, sm_scale)

    def run(self, q, k, v, return_lse=False, lse_base="log2"):
        c = self.kv_starts
        seqs = [(k[c[b]:c[b + 1]], v[c[b]:c[b + 1]]) for b in range(len(c) - 1)]
        return self._attend(q, seqs, None, return_lse, lse_base)
