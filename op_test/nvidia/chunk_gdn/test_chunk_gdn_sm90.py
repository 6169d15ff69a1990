"""Target test of ``nvidia.gdn_sm90`` (ATREX chunked Gated-DeltaNet, Triton and Gluon) on SM90 hardware.

Every plan path (state ws / rc / rc2 / tma / triton / generic, intra per_head / generic, the sequence-parallel
segments) against the float64 recurrence; see ``_gdn_gpu.py``. fla 0.6's forward options (in-kernel gate, beta
sigmoid, fp32 q/k/v, chunk_size) on fla's own test cases: ``_gdn_gpu_fla.py``."""

import _gdn_cases as _t

_t.skip_unless((9, 0), "sm90")

from _gdn_gpu import (  # noqa: E402,F401
    test_all_sequences_empty,
    test_capture_unwarmed_raises_then_prewarm_captures,
    test_compiled_kernel_replay_same_bits,
    test_default_dispatch,
    test_dispatch_selects_gdn_sm90_and_matches_launcher,
    test_forced_plan,
    test_fp16_inverse_guard_positive_g,
    test_fp16_takes_the_per_head_kernels,
    test_graph_capture_replay_changed_cu_seqlens,
    test_kernel_names_in_profiler,
    test_one_sequence_varlen_equals_fixed_length,
    test_pdl_same_bits_eager_and_in_chained_graphs,
    test_rings_across_items_on_three_ctas,
    test_segment_scan_composes_in_fp32,
    test_sequence_parallel_graph_capture,
    test_sequence_parallel_plan,
    test_split_and_carry,
    test_t1_replay_of_the_faulting_order,
    test_t1_shapes_between_other_kernels,
)
from _gdn_gpu_fla import (  # noqa: E402,F401
    test_fla_chunk_shapes_fp32,
    test_fla_fp32,
    test_fla_gate_in_kernel,
    test_fla_gate_in_kernel_gqa,
    test_fla_gate_in_kernel_varlen,
    test_gate_graph_capture_replays_new_gate_values,
    test_operator_gate_prewarm_then_capture,
    test_operator_takes_fla_options_on_gdn_sm90,
)
