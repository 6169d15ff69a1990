"""Target test of the GDN Triton kernels (``nvidia.gdn_sm90``'s launcher called directly) on SM120 hardware: the
Triton paths (state tma / triton / generic, both intra kernels) against the float64 recurrence; the Gluon paths are
SM90's and skip here. fla 0.6's in-kernel gate and beta sigmoid through the launcher on fla's test cases
(``_gdn_gpu_fla.py``); its fp32 tests are not run here: the fp32 generic tiles need up to about 200 KiB of shared
memory per block on SM90, twice what an SM120 block has (the public operator dispatches to nvidia.gdn_sm90 on SM90
only)."""

import _gdn_cases as _t

_t.skip_unless((12, 0), "sm120")

from _gdn_gpu import (  # noqa: E402,F401
    test_all_sequences_empty,
    test_compiled_kernel_replay_same_bits,
    test_default_dispatch,
    test_forced_triton_plan,
    test_fp16_inverse_guard_positive_g,
    test_graph_capture_replay_changed_cu_seqlens,
    test_kernel_names_in_profiler,
    test_one_sequence_varlen_equals_fixed_length,
    test_segment_scan_composes_in_fp32,
    test_split_and_carry,
    test_t1_replay_of_the_faulting_order,
    test_t1_shapes_between_other_kernels,
)
from _gdn_gpu_fla import (  # noqa: E402,F401
    test_fla_gate_in_kernel,
    test_fla_gate_in_kernel_gqa,
    test_fla_gate_in_kernel_varlen,
    test_gate_graph_capture_replays_new_gate_values,
)
