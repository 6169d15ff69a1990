"""Value-dependent preconditions (docs/errors.md, "Value checks"): monotone offsets, lengths within
capacity, valid block ids, matching CPU mirrors.

On CPU tensors they always run: the values are in host memory, so reading them costs microseconds and
no device sync, and the reference would otherwise index out of range or wrap -1 silently. On an
accelerator they read device values, so they run only with ``ATREX_CHECK_VALUES=1``; never during
CUDA-graph capture."""

from __future__ import annotations

import math

import torch

from atrex import env as _env
from atrex.errors import AtrexValueError


def wanted(call) -> bool:
    """Whether the value preconditions are checked for this validated call."""
    if call.capturing:
        return False
    return call.device.type == "cpu" or _env.settings().check_values


def _host(t: torch.Tensor) -> list:
    if t.device.type == "cpu":  # integer metadata: tolist() reads host memory, no copy and no aten op
        return t.tolist()
    return t.detach().to("cpu", torch.int64).tolist()


def _offsets(name: str, cu: list[int], total: int, exact: bool) -> None:
    if cu[0] != 0:
        raise AtrexValueError(name, f"{name}[0] = {cu[0]}", "offsets starting at 0")
    for i in range(len(cu) - 1):
        if cu[i + 1] < cu[i]:
            raise AtrexValueError(name, f"{name}[{i + 1}] = {cu[i + 1]} < {name}[{i}] = {cu[i]}",
                                  "non-decreasing offsets")
    if (cu[-1] != total) if exact else (cu[-1] > total):
        raise AtrexValueError(name, f"{name}[-1] = {cu[-1]}", f"{'==' if exact else '<='} {total} (tokens given)")


def check_attention_values(call) -> None:
    cu_q = _host(call.cu_seqlens_q)
    _offsets("cu_seqlens_q", cu_q, call.total_q, exact=False)
    q_lens = [cu_q[i + 1] - cu_q[i] for i in range(call.batch)]
    if q_lens and max(q_lens) > call.max_seqlen_q:
        raise AtrexValueError("max_seqlen_q", call.max_seqlen_q, f">= the longest query ({max(q_lens)})")
    if call.paged:
        used = _host(call.seqused_k)
        num_blocks, width = call.k.shape[0], call.block_table.shape[1]
        for b, n in enumerate(used):
            if n < 0 or n > width * call.page_size:
                raise AtrexValueError("seqused_k", f"seqused_k[{b}] = {n}",
                                      f"0..{width * call.page_size} (block_table width x page_size)")
        if used and max(used) > call.max_seqlen_k:
            raise AtrexValueError("max_seqlen_k", call.max_seqlen_k, f">= the longest KV ({max(used)})")
        table = _host(call.block_table)
        for b, n in enumerate(used):
            ids = table[b][: math.ceil(n / call.page_size)]
            if ids and (min(ids) < 0 or max(ids) >= num_blocks):
                bad = next(i for i, x in enumerate(ids) if x < 0 or x >= num_blocks)
                raise AtrexValueError("block_table", f"block_table[{b}, {bad}] = {ids[bad]}",
                                      f"block ids in [0, {num_blocks}) (num_blocks of k) for the first "
                                      "ceil(seqused_k / page_size) entries of each row")
    else:
        cu_k = _host(call.cu_seqlens_k)
        _offsets("cu_seqlens_k", cu_k, call.k.shape[0], exact=False)
        k_lens = [cu_k[i + 1] - cu_k[i] for i in range(call.batch)]
        if k_lens and max(k_lens) > call.max_seqlen_k:
            raise AtrexValueError("max_seqlen_k", call.max_seqlen_k, f">= the longest KV ({max(k_lens)})")


def check_gdn_values(call) -> None:
    if call.cu_seqlens is None:
        return
    cu = _host(call.cu_seqlens)
    _offsets("cu_seqlens", cu, call.seq_len, exact=True)
    if call.cu_seqlens_cpu is not None and _host(call.cu_seqlens_cpu) != cu:
        raise AtrexValueError("cu_seqlens_cpu", "values differing from cu_seqlens", "an exact CPU mirror")
