"""Target test of the sm90 (H100/H200/H20) attention implementations.

``nvidia.decode_splitkv`` (ATREX's split-KV paged decode, ``_decode_cases.py``) and
``nvidia.paged_prefill_sm90`` (ATREX's paged attention for any query length, ``_prefill_gpu_cases.py``):
each test skips without a CUDA device of capability (9, 0); FA4 is not needed (the prefill routing test
holds with or without it). ``nvidia.fa4`` (FlashAttention-4 through ATREX,
``_fa_cases.py``, shared by the four arch files): collected when the device is sm90. Without an sm90
device one placeholder test reports the skip; with one, a flash-attn-4 that does not import (a required
dependency of atrex-nvidia) is a failing test, never a skip. The FA4 cases run against whichever
supported release is installed (b19 or b36): their ids start with it, and ``test_fa4_release`` prints it
and checks the adapter uses that release's table.
"""

import _decode_cases as _dc
import _fa_cases as _c
import pytest
import torch
from _decode_cases import (  # noqa: F401
    _on_sm90,
    test_decode_capture_unwarmed_raises,
    test_decode_cases,
    test_decode_deterministic,
    test_decode_graph_replay_changed_seqused_and_table,
    test_decode_grid_pages_gqa,
    test_decode_poisoned_workspace,
    test_decode_profiler_kernel_names,
)
from _prefill_gpu_cases import (  # noqa: F401
    test_prefill_capture_unwarmed_raises,
    test_prefill_cases,
    test_prefill_default_dispatch,
    test_prefill_deterministic,
    test_prefill_graph_replay_changed_lengths,
    test_prefill_profiler_kernel_names,
    test_prefill_vllm_matrix,
)

FA4_SKIP = _c.hardware_skip_reason((9, 0))  # no sm90 device: skip the FA4 cases only
FA4_ERROR = None if FA4_SKIP else _c.fa4_import_error("sm90")

if FA4_SKIP is None and FA4_ERROR is None:
    _c.skip_unless((9, 0), "sm90")  # sets the arch; neither skips nor fails here
    from _fa_cases import (  # noqa: F401
                           force_fa4,
                           test_bitwise_equal_to_fa4_direct,
                           test_boundary_sweep,
                           test_capture_unwarmed_raises_before_launch,
                           test_cases,
                           test_cases_b36_table,
                           test_fast_path_keeps_fa4_specializations_apart,
                           test_graph_decode_replay_changed_seqused_and_table,
                           test_graph_prefill_replay_changed_cu_seqlens,
                           test_profiler_kernel_names,
    )

    def test_fa4_release():
        from atrex_nvidia.flash_attn import fa4
        from atrex_nvidia.flash_attn.common_utils import fa4_domain

        print(f"flash-attn-4 {_c.FA4_VERSION} ({_c.FA4_TAG})")
        assert fa4_domain.fa4_requirement() is None, fa4_domain.fa4_requirement()
        assert fa4_domain.fa4_table_version() == _c.FA4_VERSION
        assert fa4.domains()["sm90"].fa4_version == _c.FA4_VERSION
elif FA4_SKIP is None:
    def test_fa4_importable_on_sm90():
        """An sm90 host whose flash-attn-4 does not import: the FA4 cases cannot be collected, and that fails."""
        pytest.fail(FA4_ERROR, pytrace=False)
else:
    @pytest.mark.skip(reason=f"{FA4_SKIP} (sm90)")
    def test_fa4_sm90():
        """Placeholder: the FA4 cases are not collected here (see the skip reason)."""


# ---- launch plans: the plan path (a class's later calls) against the first call ------------------------------

_PLAN_CASES = {  # (launcher module, first call's kwargs, a call of the same class with new inputs and lengths)
    "nvidia.decode_splitkv": ("decode_splitkv", dict(q_lens=(1, 1, 1), k_lens=(1328, 18, 463), page_size=16,
                                                     num_heads_q=8, num_heads_k=2, out=True, return_lse=True),
                              dict(k_lens=(463, 1328, 18), seed=3)),
    "nvidia.paged_prefill_sm90": ("paged_prefill", dict(q_lens=(33, 17), k_lens=(300, 64), page_size=16,
                                                        num_heads_q=8, num_heads_k=2, out=True, return_lse=True),
                                  dict(q_lens=(17, 33), k_lens=(64, 300), seed=3)),
}


@pytest.mark.skipif(not _on_sm90(), reason="needs a CUDA device of capability (9, 0) (sm90)")
@pytest.mark.parametrize("impl", sorted(_PLAN_CASES))
def test_plan_path_same_bits_and_graph_replay(impl, monkeypatch):
    """The plan path (the compiled kernel launched directly, no Triton JIT dispatch) gives the first call's bits,
    for new inputs and lengths of the class too (against their own first call), and a CUDA graph captured through
    it replays them, also after the inputs are overwritten with another call's. A class's third call with the same
    lengths runs the runner the core bound for them (``ImplSpec.bind``). On a Triton whose C launch
    convention ATREX reads, the plan's calls never enter Triton's launcher object (its generated launch calls the C
    entry); the decode case splits its keys, so its eager calls take the partials from the stream's kept
    workspace and the graph's from its own."""
    import importlib

    from triton.runtime import jit

    import atrex
    from atrex.api import _fa_fast
    from atrex.validation.host import forced
    from testlib import bound_ids, c_launch_expected, count_launcher_calls

    mod_name, first_kw, other = _PLAN_CASES[impl]
    launch = importlib.import_module(f"atrex_nvidia.flash_attn.sm90.{mod_name}.launch")
    a, b = _dc.make(first_kw), _dc.make(dict(first_kw, **other))
    runs, orig = [], jit.JITFunction.run

    def counting(self, *x, **k):
        runs.append(self.__name__)
        return orig(self, *x, **k)

    monkeypatch.setattr(jit.JITFunction, "run", counting)
    launcher_calls = count_launcher_calls(monkeypatch)

    def call(kw):
        out, lse = atrex.flash_attn_varlen_func(**kw)
        return _dc.bits(out), lse.clone()

    with forced("flash_attn", impl):
        launch.WARM.clear()
        first_a = call(a)
        assert runs, "the first call of a class goes through Triton"
        runs.clear()
        launcher_calls.clear()
        again_a, plan_b, kept_a = call(a), call(b), call(a)  # kept_a: the runner the core bound (its kept plan)
        torch.cuda.synchronize()
        assert runs == [] and launch.WARM.plans() == 1, runs
        plan = next(iter(launch.WARM._plans.values()))
        assert plan.go is not None and impl in bound_ids(_fa_fast.MEMO)
        assert torch.equal(kept_a[0], first_a[0]) and torch.equal(kept_a[1], first_a[1])
        if impl == "nvidia.decode_splitkv":
            assert plan.grid[1] > 1, "the decode case is meant to split its keys"
        if c_launch_expected():
            assert launcher_calls == [], "a plan's launch went through Triton's launcher object"
        launch.WARM.clear()
        first_b = call(b)
        assert torch.equal(again_a[0], first_a[0]) and torch.equal(again_a[1], first_a[1])
        assert torch.equal(plan_b[0], first_b[0]) and torch.equal(plan_b[1], first_b[1])
        runs.clear()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            _, lse_g = atrex.flash_attn_varlen_func(**b)
        assert runs == [], runs
        b["out"].zero_()
        graph.replay()
        torch.cuda.synchronize()
        assert torch.equal(_dc.bits(b["out"]), first_b[0]) and torch.equal(lse_g, first_b[1])
        for n in ("q", "k", "v", "seqused_k", "block_table", "cu_seqlens_q"):
            b[n].copy_(a[n])  # the same shapes: a's inputs through b's graph
        graph.replay()
        torch.cuda.synchronize()
        assert torch.equal(_dc.bits(b["out"]), first_a[0]) and torch.equal(lse_g, first_a[1])


@pytest.mark.skipif(not _on_sm90(), reason="needs a CUDA device of capability (9, 0) (sm90)")
@pytest.mark.parametrize("impl", sorted(_PLAN_CASES))
def test_plan_kept_while_max_seqlen_k_grows(impl, monkeypatch):
    """Eager decode steps grow ``max_seqlen_k`` by one each: within the split rule's bucket (decode) or always
    (prefill, whose plan never reads it) the class's plan serves them without Triton's JIT, with the same bits."""
    import importlib

    from triton.runtime import jit

    import atrex
    from atrex.validation.host import forced

    mod_name, first_kw, _ = _PLAN_CASES[impl]
    launch = importlib.import_module(f"atrex_nvidia.flash_attn.sm90.{mod_name}.launch")
    kw = _dc.make(first_kw)
    runs, orig = [], jit.JITFunction.run

    def counting(self, *x, **k):
        runs.append(self.__name__)
        return orig(self, *x, **k)

    monkeypatch.setattr(jit.JITFunction, "run", counting)
    with forced("flash_attn", impl):
        launch.WARM.clear()
        first = _dc.bits(atrex.flash_attn_varlen_func(**kw)[0])
        runs.clear()
        for grow in (1, 2, 3):
            out = atrex.flash_attn_varlen_func(**dict(kw, max_seqlen_k=kw["max_seqlen_k"] + grow))[0]
            assert torch.equal(_dc.bits(out), first), grow
        assert runs == [] and launch.WARM.plans() == 1, runs
