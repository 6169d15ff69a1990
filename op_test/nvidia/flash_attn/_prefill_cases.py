"""Cases of ``nvidia.paged_prefill_sm90``: the interpreter cases of ``test_paged_prefill_cpu.py`` and the
input builder shared with the GPU cases (``_prefill_gpu_cases.py``).

A case is a dict of ``atrex.inputs.attn_inputs`` options plus: ``layout`` (``hnd`` / ``interleaved``),
``poison`` (a fill value for page tails beyond seqused_k and unreferenced blocks), ``sink_dtype``,
``expand_descales`` (stride-0 descales as vLLM passes them), ``unit_descales``, ``pad_rows`` (query rows
past ``cu_seqlens_q[B]``, CUDA-graph padding), ``oob_blocks`` (block ids outside the cache in the pages a
sequence uses: the kernel clamps them), ``seqused_over`` (a ``seqused_k`` beyond the table's reach: clamped
to it), ``cache_blocks`` (the pages moved to scattered ids of a cache of that many blocks, built on the
device, every other block NaN; the oracle keeps the small cache), and for the interpreter ``cfg`` (a tile configuration passed to ``launch.prefill``, small tiles so that tiny shapes
reach several query tiles, key tiles and GQA chunks) and ``twice`` (run again, bitwise equal).
"""

import torch

F16, BF16 = torch.float16, torch.bfloat16
FP8 = getattr(torch, "float8_e4m3fn", None)

#: small tiles: 16 rows, 16 keys (the interpreter's tiny shapes then reach every edge of the plan)
SMALL = (16, 16, 4, 1)


def build(case: dict, device="cpu") -> tuple[dict, dict]:
    """(kwargs for the kernel, kwargs for the oracle / reference) of ``case``, on ``device``. They differ only
    where the kernel's clamping defines the result: out-of-range block ids and seqused_k past the table."""
    from atrex.inputs import attn_inputs
    from atrex.validation.verify import poison_pages

    c = {k: v for k, v in case.items() if k not in ("cfg", "twice")}
    q_lens, k_lens = c.pop("q_lens"), c.pop("k_lens")
    layout, poison, sink_dtype = c.pop("layout", None), c.pop("poison", None), c.pop("sink_dtype", None)
    expand, unit = c.pop("expand_descales", False), c.pop("unit_descales", False)
    pad_rows, oob, over = c.pop("pad_rows", 0), c.pop("oob_blocks", False), c.pop("seqused_over", False)
    cache_blocks = c.pop("cache_blocks", None)
    c.setdefault("head_dim", 64)
    kw = attn_inputs(list(q_lens), list(k_lens), **c)
    if layout == "hnd":  # [nb, Hk, bs, D] physical, viewed as [nb, bs, Hk, D]
        kw["k"], kw["v"] = (x.permute(0, 2, 1, 3).contiguous().permute(0, 2, 1, 3) for x in (kw["k"], kw["v"]))
    elif layout == "interleaved":  # one buffer [nb, 2, bs, Hk, D]
        kv = torch.stack([kw["k"], kw["v"]], dim=1)
        kw["k"], kw["v"] = kv[:, 0], kv[:, 1]
    if poison is not None:
        kw = poison_pages(kw, poison)
    if sink_dtype is not None:
        kw["s_aux"] = kw["s_aux"].to(sink_dtype)
    for n in ("q_descale", "k_descale", "v_descale"):
        if n in kw and unit:
            kw[n] = torch.ones_like(kw[n])
        if n in kw and expand:
            kw[n] = kw[n][:1, :1].expand(kw[n].shape)
    if pad_rows:
        kw["q"] = torch.cat([kw["q"], kw["q"][:pad_rows]])
        if kw.get("out") is not None:
            kw["out"] = torch.cat([kw["out"], kw["out"][:pad_rows]])
    ref = dict(kw)
    if oob:
        kw["block_table"], ref["block_table"] = _oob_table(kw["block_table"], kw["k"].shape[0])
    if over:
        kw["seqused_k"], ref["seqused_k"], ref["block_table"] = _seqused_over(kw, ref)
    kw, ref = _to(kw, device), _to(ref, device)
    if cache_blocks:
        kw = _big_cache(kw, cache_blocks)
    return kw, ref


def _to(kw: dict, device) -> dict:
    return {n: (x.to(device) if isinstance(x, torch.Tensor) else x) for n, x in kw.items()}


def _big_cache(kw: dict, num_blocks: int) -> dict:
    """The same call with its K/V blocks at scattered ids of a ``num_blocks`` cache (the highest ids
    included) whose other blocks hold NaN, allocated on the call's device."""
    k, v, table = kw["k"], kw["v"], kw["block_table"]
    ids = torch.randperm(num_blocks - 1, generator=torch.Generator().manual_seed(num_blocks))[: k.shape[0]]
    ids[0] = num_blocks - 1  # (the permutation holds ids below it only: no repeat)
    ids = ids.to(k.device)

    def nan_cache(x):
        shape = (num_blocks, *x.shape[1:])
        if x.element_size() == 1:  # 0x7f is NaN in float8_e4m3fn
            big = torch.full(shape, 0x7F, dtype=torch.uint8, device=x.device).view(x.dtype)
        else:
            big = torch.full(shape, float("nan"), dtype=x.dtype, device=x.device)
        big[ids] = x
        return big

    new_table = torch.where(table >= 0, ids[table.clamp_min(0).long()].to(torch.int32), table)
    return {**kw, "k": nan_cache(k), "v": nan_cache(v), "block_table": new_table}


def _oob_table(table, num_blocks):
    """A table whose first page of every sequence points outside the cache (alternately past the end and
    negative), and the table of what the kernel reads instead (ids clamped into [0, num_blocks))."""
    bad = table.clone()
    for b in range(bad.shape[0]):
        if bad[b, 0] >= 0:
            bad[b, 0] = num_blocks + 3 + b if b % 2 == 0 else -7 - b
    return bad, bad.clamp(0, num_blocks - 1)


def _seqused_over(kw, ref):
    """seqused_k of the first sequence far beyond the table's reach; the kernel reads the whole table row
    (width * page_size keys), so the reference gets that length and the row with -1 entries made real."""
    used = kw["seqused_k"].clone()
    width, page = kw["block_table"].shape[1], kw["k"].shape[1]
    used[0] = 1 << 30
    ref_used = used.clone()
    ref_used[0] = width * page
    table = ref["block_table"].clone()
    table[0] = table[0].clamp_min(0)  # -1 past the used pages: the kernel clamps it to block 0
    return used, ref_used, table


#: the interpreter cases (tiny shapes; every one also checked against the torch reference)
INTERP_CASES = {
    "d128_gqa4_p16_chunked": dict(q_lens=(5, 1, 40), k_lens=(30, 17, 100), head_dim=128, dtype=F16,
                                  return_lse=True, twice=True),
    "d40_mha_p1_window": dict(q_lens=(3, 20), k_lens=(3, 70), head_dim=40, page_size=1, num_heads_q=4,
                              num_heads_k=4, dtype=BF16, window_size=(10, 0), return_lse=True),
    "fp8_d72_p7_softcap_sinks": dict(q_lens=(7, 33), k_lens=(50, 90), head_dim=72, page_size=7, dtype=FP8,
                                     softcap=20.0, sinks=True, return_lse=True),
    "fp8_unit_descales_p16": dict(q_lens=(9, 2), k_lens=(40, 77), page_size=16, dtype=FP8, unit_descales=True),
    "fp8_stride0_descales_nan_tails": dict(q_lens=(12, 3), k_lens=(45, 33), head_dim=128, page_size=32, dtype=FP8,
                                           expand_descales=True, poison=float("nan"), return_lse=True),
    "fp8_no_descales": dict(q_lens=(6,), k_lens=(77,), page_size=16, dtype=FP8, fp8_descales=False),
    "nan_tails_p16_gqa8_bf16": dict(q_lens=(4, 19), k_lens=(37, 50), page_size=16, num_heads_q=16, num_heads_k=2,
                                    dtype=BF16, poison=float("nan"), return_lse=True, twice=True),
    "inf_tails_p5_sinks_fp32": dict(q_lens=(3, 8), k_lens=(23, 41), page_size=5, dtype=F16, poison=float("inf"),
                                    sinks=True, sink_dtype=torch.float32, return_lse=True),
    "window_lr_noncausal_small_tiles": dict(q_lens=(37, 20), k_lens=(200, 20), head_dim=48, dtype=BF16,
                                            causal=False, window_size=(40, 7), sinks=True, return_lse=True,
                                            cfg=SMALL),
    "window_left_only_small_tiles": dict(q_lens=(37, 20), k_lens=(120, 20), head_dim=48, dtype=BF16,
                                         causal=False, window_size=(40, -1), return_lse=True, cfg=SMALL),
    "window_right_only_small_tiles": dict(q_lens=(37, 20), k_lens=(120, 20), head_dim=48, dtype=F16,
                                          causal=False, window_size=(-1, 7), return_lse=True, cfg=SMALL),
    "causal_sq_gt_sk_empty_seqs": dict(q_lens=(0, 37, 5, 9), k_lens=(10, 80, 0, 3), head_dim=32, dtype=F16,
                                       return_lse=True, cfg=SMALL),
    "gqa32_chunks_sinks": dict(q_lens=(3, 2), k_lens=(50, 9), head_dim=16, page_size=4, num_heads_q=32,
                               num_heads_k=1, dtype=F16, sinks=True, return_lse=True, cfg=SMALL),
    "gqa6_odd_group_p5": dict(q_lens=(9, 2), k_lens=(50, 9), head_dim=24, page_size=5, num_heads_q=12,
                              num_heads_k=2, dtype=F16, cfg=SMALL),
    "d256_p64_lse": dict(q_lens=(20, 3), k_lens=(90, 40), head_dim=256, page_size=64, num_heads_q=4,
                         num_heads_k=2, dtype=BF16, return_lse=True),
    "hnd_layout_p48": dict(q_lens=(10, 3), k_lens=(100, 31), page_size=48, dtype=F16, layout="hnd",
                           return_lse=True),
    "interleaved_kv_p16": dict(q_lens=(10, 3), k_lens=(60, 31), page_size=16, dtype=BF16, layout="interleaved"),
    "graph_padding_rows": dict(q_lens=(4, 6), k_lens=(30, 40), head_dim=16, dtype=F16, pad_rows=5,
                               return_lse=True),
    "oob_block_ids_clamped": dict(q_lens=(4, 6, 2), k_lens=(30, 40, 20), head_dim=16, dtype=F16, oob_blocks=True),
    "seqused_past_table_clamped": dict(q_lens=(4, 6), k_lens=(30, 40), head_dim=16, dtype=F16,
                                       seqused_over=True),
    "out_given_d80_p32": dict(q_lens=(17, 2), k_lens=(70, 5), head_dim=80, page_size=32, dtype=F16, out=True),
    "decode_like_q1_gqa8": dict(q_lens=(1, 1, 1), k_lens=(50, 17, 1), num_heads_q=16, num_heads_k=2, dtype=BF16,
                                return_lse=True),
    "softcap_window_p128": dict(q_lens=(25, 4), k_lens=(150, 30), page_size=128, dtype=F16, softcap=30.0,
                                window_size=(30, 0), return_lse=True),
}
