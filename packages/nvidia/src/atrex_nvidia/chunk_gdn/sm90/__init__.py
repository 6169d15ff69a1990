"""SM90 (Hopper) chunked Gated-DeltaNet forward: Triton kernels ``atrex_sm90_gdn_*``."""
