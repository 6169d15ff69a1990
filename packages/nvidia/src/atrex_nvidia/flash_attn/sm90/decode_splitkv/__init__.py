"""``nvidia.decode_splitkv``: ATREX's split-KV paged decode attention for SM90 (Triton kernels
``atrex_sm90_decode_*``). ``impl`` holds check/run/prewarm, ``table`` the domain, ``launch`` the
tile and split choices (``plan`` / ``decode`` take overrides for tuning sweeps), ``kernels`` the Triton code."""
