"""NVIDIA attention implementations (``flash_attn_varlen``).

``nvidia.fa4`` (module :mod:`atrex_nvidia.flash_attn.fa4`) adapts FlashAttention-4 b19 (CuTe DSL) to
the vLLM contract on sm90, sm100, sm103 and sm120. Nothing here is imported by plugin discovery.
"""
