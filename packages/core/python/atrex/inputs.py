"""Input builders shared by the CLI (explain, demo, prewarm), the tests and the benchmarks.

Each returns the keyword arguments of the operator call, built the way vLLM / fla build them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

DTYPES = {
    "bf16": torch.bfloat16,
    "bfloat16": torch.bfloat16,
    "fp16": torch.float16,
    "float16": torch.float16,
    "fp32": torch.float32,
    "float32": torch.float32,
    "fp8": getattr(torch, "float8_e4m3fn", None),
    "fp8_e4m3": getattr(torch, "float8_e4m3fn", None),
    "fp8_e5m2": getattr(torch, "float8_e5m2", None),
}


def attn_inputs(
    q_lens: Sequence[int],
    k_lens: Sequence[int],
    *,
    num_heads_q: int = 8,
    num_heads_k: int = 2,
    head_dim: int = 64,
    dtype: torch.dtype = torch.bfloat16,
    page_size: int | None = 16,
    device="cpu",
    causal: bool = True,
    window_size=None,
    softcap: float = 0.0,
    sinks: bool = False,
    return_lse: bool = False,
    num_blocks: int | None = None,
    shuffle_blocks: bool = True,
    fp8_descales: bool = True,
    seed: int = 0,
    out: bool = False,
) -> dict:
    """A vLLM-style call. Paged when ``page_size`` is set (shuffled block ids, -1 past the used
    pages), else non-paged with ``cu_seqlens_k``. fp8 dtypes get per-(b, hk) descales."""
    gen = torch.Generator().manual_seed(seed)
    batch = len(q_lens)
    fp8 = dtype in (getattr(torch, "float8_e4m3fn", None), getattr(torch, "float8_e5m2", None))
    mk_dtype = torch.bfloat16 if fp8 else dtype

    def rnd(*shape):
        return torch.randn(*shape, generator=gen, dtype=torch.float32).to(mk_dtype)

    tq = sum(q_lens)
    q = rnd(tq, num_heads_q, head_dim)
    cu_q = torch.tensor([0, *torch.tensor(list(q_lens)).cumsum(0).tolist()], dtype=torch.int32)
    kw: dict = {}
    if page_size:
        pages = [math.ceil(n / page_size) for n in k_lens]
        width = max([*pages, 1])
        total = sum(pages)
        nb = max(num_blocks or 0, total + 1)
        k = rnd(nb, page_size, num_heads_k, head_dim)
        v = rnd(nb, page_size, num_heads_k, head_dim)
        ids = torch.randperm(nb, generator=gen) if shuffle_blocks else torch.arange(nb)
        table = torch.full((batch, width), -1, dtype=torch.int32)
        pos = 0
        for b, n in enumerate(pages):
            table[b, :n] = ids[pos:pos + n].to(torch.int32)
            pos += n
        kw.update(block_table=table, seqused_k=torch.tensor(list(k_lens), dtype=torch.int32))
    else:
        tk = sum(k_lens)
        k = rnd(tk, num_heads_k, head_dim)
        v = rnd(tk, num_heads_k, head_dim)
        kw["cu_seqlens_k"] = torch.tensor([0, *torch.tensor(list(k_lens)).cumsum(0).tolist()], dtype=torch.int32)
    if fp8:
        q, k, v = (x.to(dtype) for x in (q, k, v))
        if fp8_descales:
            for name in ("q_descale", "k_descale", "v_descale"):
                kw[name] = (0.5 + torch.rand(batch, num_heads_k, generator=gen)).float()
    if sinks:
        kw["s_aux"] = torch.randn(num_heads_q, generator=gen).to(torch.bfloat16)
    kw.update(
        q=q, k=k, v=v, cu_seqlens_q=cu_q, max_seqlen_q=max(q_lens, default=0), max_seqlen_k=max(k_lens, default=0),
        causal=causal, window_size=window_size, softcap=softcap, return_softmax_lse=return_lse,
    )
    if out:
        kw["out"] = torch.empty(tq, num_heads_q, head_dim, dtype=torch.bfloat16 if fp8 else dtype)
    return {n: (x.to(device) if isinstance(x, torch.Tensor) else x) for n, x in kw.items()}


def gdn_inputs(
    seq_lens: Sequence[int] | None = None,
    *,
    batch: int = 1,
    seq_len: int = 256,
    num_heads: int = 4,
    num_v_heads: int = 8,
    head_k_dim: int = 64,
    head_v_dim: int = 64,
    dtype: torch.dtype = torch.bfloat16,
    gate_dtype: torch.dtype = torch.float32,
    beta_dtype: torch.dtype | None = None,
    initial_state: str | None = "fp32",
    state_v_first: bool = False,
    l2norm: bool = True,
    cu_dtype: torch.dtype = torch.int32,
    output_final_state: bool = True,
    device="cpu",
    seed: int = 0,
) -> dict:
    """A vLLM/fla-style call: varlen when ``seq_lens`` is given (B = 1), else ``[batch, seq_len]``.
    g = logsigmoid(randn) (negative log decay), beta = sigmoid(randn)."""
    gen = torch.Generator().manual_seed(seed)
    if seq_lens is not None:
        batch, seq_len = 1, sum(seq_lens)
        n = len(seq_lens)
        cu = torch.tensor([0, *torch.tensor(list(seq_lens)).cumsum(0).tolist()], dtype=cu_dtype)
    else:
        n = batch
        cu = None

    def rnd(*shape, dt=dtype):
        return torch.randn(*shape, generator=gen).to(dt)

    kw = dict(
        q=rnd(batch, seq_len, num_heads, head_k_dim),
        k=rnd(batch, seq_len, num_heads, head_k_dim),
        v=rnd(batch, seq_len, num_v_heads, head_v_dim),
        g=torch.nn.functional.logsigmoid(torch.randn(batch, seq_len, num_v_heads, generator=gen)).to(gate_dtype),
        beta=torch.sigmoid(torch.randn(batch, seq_len, num_v_heads, generator=gen)).to(beta_dtype or dtype),
        output_final_state=output_final_state,
        use_qk_l2norm_in_kernel=l2norm,
        state_v_first=state_v_first,
        cu_seqlens=cu,
    )
    if not l2norm:  # keep the recurrence stable without normalisation
        kw["q"] = (kw["q"].float() / head_k_dim ** 0.5).to(dtype)
        kw["k"] = (kw["k"].float() / head_k_dim ** 0.5).to(dtype)
    if initial_state:
        shape = (n, num_v_heads, head_v_dim, head_k_dim) if state_v_first else (n, num_v_heads, head_k_dim, head_v_dim)
        kw["initial_state"] = (0.1 * torch.randn(*shape, generator=gen)).to(DTYPES[initial_state])
    return {n_: (x.to(device) if isinstance(x, torch.Tensor) else x) for n_, x in kw.items()}


def gdn_decode_inputs(
    seq_lens: Sequence[int] | None = None,
    *,
    batch: int = 4,
    seq_len: int = 1,
    num_heads: int = 4,
    num_v_heads: int = 8,
    head_k_dim: int = 64,
    head_v_dim: int = 64,
    dtype: torch.dtype = torch.bfloat16,
    pool: str = "fp32",
    state_v_first: bool = True,
    mtp: bool = False,
    padded: int = 0,
    extra_slots: int = 3,
    l2norm: bool = True,
    inplace: bool = True,
    beta: bool = True,
    device="cpu",
    seed: int = 0,
) -> dict:
    """A vLLM-style decode / MTP step: packed varlen when ``seq_lens`` is given (B = 1, as vLLM calls it),
    else ``[batch, seq_len]``. Slots are a random permutation of a pool with ``extra_slots`` spare slots per
    sequence; ``mtp`` gives ``[N, T_max]`` indices and random ``num_accepted_tokens``; the last ``padded``
    sequences get slot -1 everywhere."""
    gen = torch.Generator().manual_seed(seed)
    if seq_lens is not None:
        n, b, t = len(seq_lens), 1, sum(seq_lens)
        t_max = max([*seq_lens, 1])
        cu = torch.tensor([0, *torch.tensor(list(seq_lens)).cumsum(0).tolist()], dtype=torch.int32)
    else:
        n, b, t, t_max, cu = batch, batch, seq_len, max(seq_len, 1), None
    width = t_max if mtp else 1
    p = n * width + extra_slots * n + 1
    slots = torch.randperm(p, generator=gen)[: n * width].to(torch.int32).reshape(n, width)
    if padded:
        slots[n - padded:] = -1
    kw = dict(
        q=torch.randn(b, t, num_heads, head_k_dim, generator=gen).to(dtype),
        k=torch.randn(b, t, num_heads, head_k_dim, generator=gen).to(dtype),
        v=torch.randn(b, t, num_v_heads, head_v_dim, generator=gen).to(dtype),
        g=torch.nn.functional.logsigmoid(torch.randn(b, t, num_v_heads, generator=gen)).float(),
        beta=torch.sigmoid(torch.randn(b, t, num_v_heads, generator=gen)).to(dtype) if beta else None,
        inplace_final_state=inplace,
        cu_seqlens=cu,
        ssm_state_indices=slots if mtp else slots[:, 0].contiguous(),
        use_qk_l2norm_in_kernel=l2norm,
        state_v_first=state_v_first,
    )
    if mtp:
        kw["num_accepted_tokens"] = torch.randint(1, width + 1, (n,), generator=gen, dtype=torch.int32)
    if not l2norm:  # keep the recurrence stable without normalisation
        kw["q"] = (kw["q"].float() / head_k_dim ** 0.5).to(dtype)
        kw["k"] = (kw["k"].float() / head_k_dim ** 0.5).to(dtype)
    shape = (p, num_v_heads, head_v_dim, head_k_dim) if state_v_first else (p, num_v_heads, head_k_dim, head_v_dim)
    kw["initial_state"] = (0.1 * torch.randn(*shape, generator=gen)).to(DTYPES[pool])
    return {n_: (x.to(device) if isinstance(x, torch.Tensor) else x) for n_, x in kw.items()}
