"""Chunked Gated-DeltaNet forward kernels for NVIDIA targets (the contract: docs/chunk_gated_delta_rule.md)."""
