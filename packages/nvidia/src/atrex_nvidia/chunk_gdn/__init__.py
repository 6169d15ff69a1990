"""Chunked Gated-DeltaNet (CONTRACTS.md §2) kernels for NVIDIA targets."""
