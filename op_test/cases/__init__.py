"""Case tables shared by the tests and the benchmarks (``import cases.flash_attn``)."""
