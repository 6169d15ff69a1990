"""Target test of ``the GDN Triton kernels`` (ATREX chunked Gated-DeltaNet, Triton) on SM103 hardware (same Triton kernels, not yet tuned there)."""

import _gdn_cases as _t

_t.skip_unless((10, 3), "sm103")

from _gdn_cases import (  # noqa: E402,F401
                         test_cases,
                         test_cases_variants,
                         test_cases_wy_form,
                         test_fast_launch_replays_the_triton_launches,
                         test_fp16_default_takes_the_fast_kernels,
                         test_fused_rc,
                         test_fused_rc_graph_capture,
                         test_fused_rc_rings_across_items,
                         test_gates_book_same_bookkeeping,
                         test_graph_capture_replay_changed_cu_seqlens,
                         test_intra_diag16,
                         test_intra_gates,
                         test_intra_gva_share,
                         test_intra_mask_out_matches_default,
                         test_intra_slot_map,
                         test_kernel_names_in_profiler,
                         test_one_sequence_varlen_takes_the_fixed_length_kernels,
                         test_split_and_carry,
                         test_split_state_pass_graph_capture,
                         test_state_split_xu_decay0_probe,
                         test_t1_replay_of_the_faulting_order,
                         test_t1_shapes_between_other_kernels,
                         test_ut_inverse_accuracy_and_acc_merge,
)
