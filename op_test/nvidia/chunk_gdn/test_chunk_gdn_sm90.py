"""Target test of ``nvidia.gdn_sm90`` (ATREX chunked Gated-DeltaNet, Triton) on SM90 hardware."""

import _gdn_cases as _t

_t.skip_unless((9, 0), "sm90")

from _gdn_cases import (  # noqa: E402,F401
                         test_capture_unwarmed_raises_then_prewarm_captures,
                         test_cases,
                         test_cases_variants,
                         test_cases_wy_form,
                         test_dispatch_selects_gdn_sm90_and_matches_launcher,
                         test_fp16_default_takes_the_fast_kernels,
                         test_fp16_inverse_guard_positive_g,
                         test_fused_rc,
                         test_fused_rc_graph_capture,
                         test_fused_rc_rings_across_items,
                         test_gluon_rc_rings_across_items,
                         test_gluon_state_kernel,
                         test_gluon_ws_fac_smem_same_bits,
                         test_gluon_ws_rings_and_empty_sequences,
                         test_graph_capture_replay_changed_cu_seqlens,
                         test_intra_diag16,
                         test_intra_gates,
                         test_intra_gva_share,
                         test_intra_mask_out_matches_default,
                         test_intra_slot_map,
                         test_kernel_names_in_profiler,
                         test_split_and_carry,
                         test_split_state_pass_graph_capture,
                         test_state_split_xu_decay0_probe,
                         test_t1_replay_of_the_faulting_order,
                         test_t1_shapes_between_other_kernels,
                         test_ut_inverse_accuracy_and_acc_merge,
)

