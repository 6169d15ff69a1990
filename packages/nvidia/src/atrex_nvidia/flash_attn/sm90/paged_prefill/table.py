"""``nvidia.paged_prefill_sm90`` domain on nvidia/sm90, read by ``impl.check``: exactly the shared paged domain
(``..paged_domain``: fp16/bf16/fp8 e4m3, D 8..256 in multiples of 8, any page size >= 1 with keys gathered per
row (tuned for 16..128), bf16/fp32 sinks).

Everything else of the vLLM contract is accepted: any query length (prefill, chunked prefill, mixed prefill +
decode), any Hq % Hk == 0, causal (bottom-right), any window, softcap, LSE, out=, strided (HND-permuted,
interleaved) K/V views, column-sliced block tables, any alignment, num_splits (never splits: 1 honoured, 0 and
n > 1 are hints), deterministic (no atomics, one program per output row).
"""
