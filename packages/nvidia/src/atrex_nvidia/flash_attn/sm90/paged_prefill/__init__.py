"""``nvidia.paged_prefill_sm90``: ATREX's paged varlen attention for any query length on SM90 (Triton
kernel ``atrex_sm90_paged_prefill``). ``impl`` holds check/run/prewarm, ``table`` the domain, ``launch``
the tile choice and grid, ``kernels`` the Triton code."""
