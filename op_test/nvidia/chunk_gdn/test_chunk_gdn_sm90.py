"""Target test of ``nvidia.gdn_sm90`` (ATREX chunked Gated-DeltaNet, Triton) on SM90 hardware."""

import _gdn_cases as _t

_t.skip_unless((9, 0), "sm90")

from _gdn_cases import (  # noqa: E402,F401
                         test_capture_unwarmed_raises_then_prewarm_captures,
                         test_cases,
                         test_cases_variants,
                         test_cases_wy_form,
                         test_dispatch_selects_gdn_sm90_and_matches_launcher,
                         test_graph_capture_replay_changed_cu_seqlens,
                         test_kernel_names_in_profiler,
                         test_split_and_carry,
                         test_split_state_pass_graph_capture,
)


def test_t1_after_the_tma_state_kernel_replay():
    """Regression test for the open intermittent device fault (BENCH_H200.md, round 6): in 2 of 5 parallel runs of
    this file on the H200, an xdist worker hit an illegal memory access first reported at ``T1-state_tma``. Before
    it, that worker had run T64, T65_noL2 and T130_B2_gva_bf16h0 (whose state kernel takes TMA operands, in-kernel
    descriptors). This replays that order several times in one process, with a sync after each call, and checks
    every result against the float64 recurrence. It fails (a device error, which poisons the process) for as long
    as the fault recurs in this order."""
    import torch
    from _gdn_cases import GPU_CASES, run_case

    from atrex_nvidia.chunk_gdn.sm90 import launch

    cases = dict(GPU_CASES)
    for _ in range(4):
        for cid in ("T64", "T65_noL2", "T130_B2_gva_bf16h0", "T1"):
            eo, eh, bound = run_case(launch.gdn_fwd, cid, cases[cid], "cuda")
            torch.cuda.synchronize()
            assert eo <= bound and eh <= bound, (cid, eo, eh, bound)
