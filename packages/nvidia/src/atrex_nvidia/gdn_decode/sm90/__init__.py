"""``nvidia.gdn_decode_sm90``: the pool-indexed Gated-DeltaNet decode / MTP step for SM90 (Triton kernel
``atrex_sm90_gdn_decode``). ``impl`` holds check/run/prewarm, ``table`` the domain, ``launch`` the tile choice
and the capture record, ``kernels`` the Triton code."""
