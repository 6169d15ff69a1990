"""``nvidia.decode_splitkv`` domain on nvidia/sm90 as data, read by ``impl.check``: the shared paged domain
(``..paged_domain``: fp16/bf16/fp8 e4m3, D 8..256 in multiples of 8, any page size >= 1, bf16/fp32 sinks) for
decode and MTP shapes."""

#: query tokens per sequence (decode and MTP shapes; longer queries go to ``nvidia.paged_prefill_sm90``)
MAX_SEQLEN_Q = 16
#: everything else of the vLLM contract is accepted: any Hq % Hk == 0, causal (bottom-right), any
#: window, softcap, LSE, out=, strided (HND-permuted, interleaved) K/V views, column-sliced block
#: tables, num_splits (0 = auto and graph-static, 1 honoured, n > 1 an upper bound), deterministic.
