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


def test_operator_template_same_bits_and_graph_replay(monkeypatch):
    """atrex.chunk_gated_delta_rule at the host-time goal's shape (T = 64, H = 16, HV = 32, as vLLM calls it): a
    class's later calls run the kept template (no Triton JIT dispatch; from the third on through the runner the core
    bound, ``ImplSpec.bind``) with the first call's bits, for new inputs of the class too (against their own first
    call), and a CUDA graph captured through it replays them. On a Triton
    whose C launch convention ATREX reads, the template's calls never enter Triton's launcher object: its kernels
    launch through their C entry, the one with in-kernel TMA descriptors with its global scratch in the template's
    workspace (the stream's kept one in eager calls, the graph's own under capture)."""
    import torch
    from triton.runtime import jit

    import atrex
    from atrex.api import chunk_gdn
    from atrex.inputs import gdn_inputs
    from atrex_nvidia.chunk_gdn.sm90 import runner
    from testlib import bound_ids, c_launch_expected, count_launcher_calls

    def make(seed):
        kw = gdn_inputs(None, batch=1, seq_len=64, num_heads=16, num_v_heads=32, head_k_dim=128, head_v_dim=128,
                        device="cuda", seed=seed, state_v_first=True)
        kw.update(use_qk_l2norm_in_kernel=True, output_final_state=True)
        return kw

    a, b = make(0), make(1)
    runs, orig = [], jit.JITFunction.run

    def counting(self, *x, **k):
        runs.append(self.__name__)
        return orig(self, *x, **k)

    monkeypatch.setattr(jit.JITFunction, "run", counting)
    launcher_calls = count_launcher_calls(monkeypatch)
    runner.WARM.clear()
    chunk_gdn.MEMO.clear()  # (the bound-runner assertion below is about this test's calls only)
    first_a = atrex.chunk_gated_delta_rule(**a)
    assert runs
    runs.clear()
    launcher_calls.clear()
    again_a, tmpl_b = atrex.chunk_gated_delta_rule(**a), atrex.chunk_gated_delta_rule(**b)
    kept_a = atrex.chunk_gated_delta_rule(**a)  # (b, kept_a: the runner the core bound, its kept template)
    torch.cuda.synchronize()
    assert runs == [] and runner.WARM.plans() == 1, runs
    template = next(iter(runner.WARM._plans.values()))
    assert template.go is not None and "nvidia.gdn_sm90" in bound_ids(chunk_gdn.MEMO)
    if c_launch_expected():
        assert launcher_calls == [], "a template's launch went through Triton's launcher object"
        assert not template.scoped and all(ln.direct.scratch is None or ln.scratch is not None
                                           for ln in template.launches)
        assert template.kept is not None  # (the bound runner's generated whole run: kept_a went through it)
    runner.WARM.clear()
    first_b = atrex.chunk_gated_delta_rule(**b)
    assert all(torch.equal(x, y) for x, y in zip(again_a, first_a))
    assert all(torch.equal(x, y) for x, y in zip(kept_a, first_a))
    assert [x.stride() for x in kept_a if x is not None] == [x.stride() for x in first_a if x is not None]
    assert all(torch.equal(x, y) for x, y in zip(tmpl_b, first_b))
    runs.clear()
    launcher_calls.clear()  # first_b compiled through Triton's JIT path
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        o_g, h_g = atrex.chunk_gated_delta_rule(**b)
    assert runs == [], runs
    assert launcher_calls == [] or not c_launch_expected(), "a captured launch went through Triton's launcher"
    graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(o_g, first_b[0]) and torch.equal(h_g, first_b[1])
    for n in ("q", "k", "v", "g", "beta", "initial_state"):
        b[n].copy_(a[n])
    graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(o_g, first_a[0]) and torch.equal(h_g, first_a[1])
