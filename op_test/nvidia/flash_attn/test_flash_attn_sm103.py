"""Target test of ``nvidia.fa4`` (FlashAttention-4 b19 or b36 through ATREX) on sm103 (B300-class).

Skips at module level without a CUDA device of capability (10, 3); with one, a flash_attn.cute that does
not import fails the module (a broken host, not a skip).
The cases live in ``_fa_cases.py`` (shared by the four arch files).
"""

import _fa_cases as _c

_c.skip_unless((10, 3), "sm103")

from _fa_cases import (  # noqa: E402,F401
                       force_fa4,
                       test_bitwise_equal_to_fa4_direct,
                       test_boundary_sweep,
                       test_capture_unwarmed_raises_before_launch,
                       test_cases,
                       test_graph_decode_replay_changed_seqused_and_table,
                       test_graph_prefill_replay_changed_cu_seqlens,
                       test_profiler_kernel_names,
)
