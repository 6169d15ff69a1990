"""Target test of the sm90 (H100/H200/H20) attention implementations.

``nvidia.decode_splitkv`` (ATREX's split-KV paged decode, ``_decode_cases.py``): each test skips without
a CUDA device of capability (9, 0); FA4 is not needed. ``nvidia.fa4`` (FlashAttention-4 b19 through
ATREX, ``_fa_cases.py``, shared by the four arch files): collected only when the device is sm90 and
``flash_attn.cute`` imports; otherwise one placeholder test reports the skip reason.
"""

import _fa_cases as _c
import pytest
from _decode_cases import (  # noqa: F401
    test_decode_capture_unwarmed_raises,
    test_decode_cases,
    test_decode_deterministic,
    test_decode_graph_replay_changed_seqused_and_table,
    test_decode_grid_pages_gqa,
    test_decode_poisoned_workspace,
    test_decode_profiler_kernel_names,
)

try:
    _c.skip_unless((9, 0), "sm90")
    FA4_SKIP = None
except pytest.skip.Exception as exc:  # no sm90 device or no FA4: skip the FA4 cases only
    FA4_SKIP = str(exc)

if FA4_SKIP is None:
    from _fa_cases import (  # noqa: F401
                           force_fa4,
                           test_bitwise_equal_to_fa4_direct,
                           test_boundary_sweep,
                           test_capture_unwarmed_raises_before_launch,
                           test_cases,
                           test_graph_decode_replay_changed_seqused_and_table,
                           test_graph_prefill_replay_changed_cu_seqlens,
                           test_profiler_kernel_names,
    )
else:
    @pytest.mark.skip(reason=FA4_SKIP)
    def test_fa4_sm90():
        """Placeholder: the FA4 cases are not collected here (see the skip reason)."""
