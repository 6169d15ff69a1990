"""Target test of ``nvidia.gdn_decode_sm90`` (pool-indexed Gated-DeltaNet decode / MTP, Triton) on SM90: the
matrix against the float64 oracle, padded and untouched slots bitwise unchanged, MTP accepted-token offsets, in
place vs returned state, graph capture and replay with changed indices and contents, the capture error,
kernel names."""

import pytest
import torch

if not torch.cuda.is_available() or torch.cuda.get_device_capability() != (9, 0):
    found = torch.cuda.get_device_capability() if torch.cuda.is_available() else "no CUDA device"
    pytest.skip(f"gdn_decode sm90 target test needs a CUDA device with compute capability (9, 0) (found {found})",
                allow_module_level=True)

import atrex
from atrex.errors import AtrexCaptureError
from atrex.inputs import gdn_decode_inputs
from atrex.reference.oracle import gdn_decode_oracle, rel_rmse

IMPL = "nvidia.gdn_decode_sm90"
BOUND = 5e-3


def inputs(seq_lens=None, **kw):
    kw.setdefault("seed", 11)
    return gdn_decode_inputs(seq_lens, device="cuda", **kw)


def check_step(kw, *, bound=BOUND):
    """Run the operator once; compare with the oracle, and check padded / untouched slots and padded outputs."""
    pool0 = kw["initial_state"].clone()
    ref_o, ref_s = gdn_decode_oracle(**{**kw, "initial_state": pool0})
    assert atrex.explain_fused_recurrent_gated_delta_rule(**kw).chosen == IMPL
    o, s = atrex.fused_recurrent_gated_delta_rule(**kw)
    torch.cuda.synchronize()
    assert o.dtype == kw["q"].dtype and torch.isfinite(o.float()).all()
    e_o, e_s = rel_rmse(ref_o, o), rel_rmse(ref_s, s)
    assert e_o <= bound and e_s <= bound, (e_o, e_s)
    idx = kw["ssm_state_indices"]
    if kw["inplace_final_state"]:
        assert s is kw["initial_state"]
        live = {int(x) for x in idx.flatten().tolist() if x >= 0}
        untouched = [i for i in range(pool0.shape[0]) if i not in live]
        assert torch.equal(s[untouched], pool0[untouched]), "a padded or unused slot was written"
    else:
        assert torch.equal(kw["initial_state"], pool0) and s.dtype == torch.float32
    # padded sequences (whole row < 0): outputs exactly 0
    rows = idx.reshape(idx.shape[0], -1).tolist()
    cu = kw["cu_seqlens"].tolist() if kw["cu_seqlens"] is not None else None
    for n, row in enumerate(rows):
        if all(x < 0 for x in row):
            span = o[0, cu[n]:cu[n + 1]] if cu is not None else o[n]
            assert torch.count_nonzero(span) == 0
    return o, s


@pytest.mark.parametrize("dim", [64, 128, 256])
@pytest.mark.parametrize("tokens", [1, 2, 4])
@pytest.mark.parametrize("v_first", [True, False], ids=["vfirst", "kfirst"])
@pytest.mark.parametrize("pool", ["fp32", "bf16"])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "fp16"])
def test_matrix(dtype, pool, v_first, tokens, dim):
    kw = inputs([tokens] * 6, num_heads=2, num_v_heads=8, head_k_dim=dim, head_v_dim=dim, dtype=dtype, pool=pool,
                state_v_first=v_first, mtp=tokens > 1, padded=2)
    check_step(kw)


@pytest.mark.parametrize("name, extra", [
    ("returned", dict(inplace=False)),
    ("returned-mtp", dict(inplace=False, mtp=True)),
    ("no-l2norm", dict(l2norm=False)),
    ("no-beta", dict(beta=False)),
    ("mha", dict(num_heads=8, num_v_heads=8)),
    ("k64-v128", dict(head_k_dim=64, head_v_dim=128)),
])
def test_options(name, extra):
    p = dict(num_heads=2, num_v_heads=8, head_k_dim=128, head_v_dim=128, padded=1)
    p.update(extra)
    check_step(inputs([1, 3, 2, 4, 1], **p))


def test_fixed_batch_without_cu_seqlens():
    check_step(inputs(None, batch=5, seq_len=3, mtp=True, num_heads=2, num_v_heads=4, head_k_dim=128,
                      head_v_dim=128, padded=1))
    check_step(inputs(None, batch=4, seq_len=1, num_heads=2, num_v_heads=4, head_k_dim=64, head_v_dim=64))


def test_mtp_accepted_offsets_and_negative_write_entries():
    kw = inputs([4, 4, 4], mtp=True, num_heads=1, num_v_heads=4, head_k_dim=128, head_v_dim=128)
    kw["num_accepted_tokens"] = torch.tensor([1, 3, 4], dtype=torch.int32, device="cuda")
    kw["ssm_state_indices"][1, 2] = -1  # start slot of sequence 1 stays; its third write is skipped
    kw["ssm_state_indices"][2, 0] = -1
    check_step(kw)


def test_out_of_range_entries_are_padding_without_value_checks():
    kw = inputs([1, 1, 1], num_heads=1, num_v_heads=2, head_k_dim=64, head_v_dim=64)
    p = kw["initial_state"].shape[0]
    kw["ssm_state_indices"] = torch.tensor([p + 5, -3, 2], dtype=torch.int32, device="cuda")
    pool0 = kw["initial_state"].clone()
    o, pool = atrex.fused_recurrent_gated_delta_rule(**kw)
    torch.cuda.synchronize()
    assert torch.count_nonzero(o[0, :2]) == 0 and torch.count_nonzero(o[0, 2]) > 0
    assert [i for i in range(p) if not torch.equal(pool[i], pool0[i])] == [2]


def test_strided_pool_view_and_qkv_views():
    """A pool that is a view into a larger cache (slot stride > slot size) and q/k sliced from one buffer."""
    kw = inputs([1, 2, 1], mtp=True, num_heads=2, num_v_heads=4, head_k_dim=64, head_v_dim=64)
    pool = kw["initial_state"]
    big = torch.zeros(pool.shape[0], 2, *pool.shape[1:], device="cuda")
    big[:, 0] = pool
    kw["initial_state"] = big[:, 0]
    mixed = torch.cat([kw["q"], kw["k"]], dim=-1)  # [1, T, 2, 128]: q and k are strided views of it
    kw["q"], kw["k"] = mixed[..., :64], mixed[..., 64:]
    check_step(kw)
    assert torch.count_nonzero(big[:, 1]) == 0


def test_graph_capture_replay_with_changed_indices_and_contents():
    kw = inputs([2] * 8, mtp=True, num_heads=2, num_v_heads=8, head_k_dim=128, head_v_dim=128, padded=1)
    assert atrex.prewarm("fused_recurrent_gated_delta_rule", [kw]) == [(IMPL, "compiled")]
    static = {n: x for n, x in kw.items()}
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        o_g, _ = atrex.fused_recurrent_gated_delta_rule(**static)
    for seed in (21, 22):
        new = inputs([2] * 8, mtp=True, num_heads=2, num_v_heads=8, head_k_dim=128, head_v_dim=128, padded=2,
                     seed=seed)
        for n, x in new.items():
            if isinstance(x, torch.Tensor):
                static[n].copy_(x)
        pool0 = static["initial_state"].clone()
        ref_o, ref_s = gdn_decode_oracle(**{**static, "initial_state": pool0})
        g.replay()
        torch.cuda.synchronize()
        assert rel_rmse(ref_o, o_g) <= BOUND and rel_rmse(ref_s, static["initial_state"]) <= BOUND


def test_unwarmed_capture_raises_then_prewarm_captures():
    from atrex_nvidia.gdn_decode.sm90 import launch

    # K=32, V=16, HV=3: a specialisation no other test launches
    kw = inputs([1, 1], num_heads=1, num_v_heads=3, head_k_dim=32, head_v_dim=16)
    n_warm = len(launch.WARM)
    pool0 = kw["initial_state"].clone()
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with pytest.raises(AtrexCaptureError, match="prewarm"), torch.cuda.graph(g):
        atrex.fused_recurrent_gated_delta_rule(**kw)
    torch.cuda.synchronize()
    assert len(launch.WARM) == n_warm and torch.equal(kw["initial_state"], pool0)
    assert atrex.prewarm("fused_recurrent_gated_delta_rule", [kw]) == [(IMPL, "compiled")]
    assert torch.equal(kw["initial_state"], pool0), "prewarm wrote the caller's pool"
    g2 = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g2):
        o_g, _ = atrex.fused_recurrent_gated_delta_rule(**kw)
    ref_o, ref_s = gdn_decode_oracle(**{**kw, "initial_state": pool0})
    g2.replay()
    torch.cuda.synchronize()
    assert rel_rmse(ref_o, o_g) <= BOUND and rel_rmse(ref_s, kw["initial_state"]) <= BOUND


def test_kernel_names_in_profiler():
    import torch.profiler as tp

    kw = inputs([1, 2, 1], mtp=True, num_heads=2, num_v_heads=4, head_k_dim=128, head_v_dim=128)
    atrex.fused_recurrent_gated_delta_rule(**kw)
    with tp.profile(activities=[tp.ProfilerActivity.CUDA]) as prof:
        atrex.fused_recurrent_gated_delta_rule(**kw)
        torch.cuda.synchronize()
    names = {e.key for e in prof.key_averages() if e.device_type == torch.autograd.DeviceType.CUDA}
    kernels = {n for n in names if not n.lower().startswith(("memcpy", "memset"))}
    assert kernels and all(n.startswith("atrex_sm90_gdn_decode") for n in kernels), kernels


def test_plan_path_same_bits_and_graph_replay(monkeypatch):
    """The plan path (a class's later calls: the compiled kernel launched directly, no Triton JIT dispatch) gives
    the first call's bits, for new inputs of the class too (against their own first call), and a CUDA graph captured
    through it replays them; later calls run the runner the core bound for the class (``ImplSpec.bind``). On a
    Triton whose C launch convention ATREX reads, the plan's calls never enter Triton's launcher object (its
    generated launch calls the C entry)."""
    from triton.runtime import jit

    from atrex.api import gdn_decode
    from atrex_nvidia.gdn_decode.sm90 import launch
    from testlib import bound_ids, c_launch_expected, count_launcher_calls

    shape = dict(mtp=True, num_heads=2, num_v_heads=8, head_k_dim=128, head_v_dim=128, padded=1)
    a, b = inputs([2] * 6, **shape), inputs([2] * 6, seed=12, **shape)
    pools = {id(kw): kw["initial_state"].clone() for kw in (a, b)}
    runs, orig = [], jit.JITFunction.run

    def counting(self, *x, **k):
        runs.append(self.__name__)
        return orig(self, *x, **k)

    monkeypatch.setattr(jit.JITFunction, "run", counting)
    launcher_calls = count_launcher_calls(monkeypatch)

    def call(kw):
        kw["initial_state"].copy_(pools[id(kw)])  # every call starts from the same pool
        o, s = atrex.fused_recurrent_gated_delta_rule(**kw)
        return o.clone(), s.clone()

    launch.WARM.clear()
    gdn_decode.MEMO.clear()  # (the bound-runner assertion below is about this test's calls only)
    first_a = call(a)
    assert runs
    runs.clear()
    launcher_calls.clear()
    again_a, plan_b, kept_a = call(a), call(b), call(a)  # b, kept_a: the runner the core bound (its kept plan)
    torch.cuda.synchronize()
    assert runs == [] and launch.WARM.plans() == 1, runs
    assert next(iter(launch.WARM._plans.values())).go is not None and IMPL in bound_ids(gdn_decode.MEMO)
    assert all(torch.equal(x, y) for x, y in zip(kept_a, first_a))
    assert [x.stride() for x in kept_a] == [x.stride() for x in first_a]  # (outputs allocated as the first call's)
    if c_launch_expected():
        assert launcher_calls == [], "a plan's launch went through Triton's launcher object"
    launch.WARM.clear()
    first_b = call(b)
    assert all(torch.equal(x, y) for x, y in zip(again_a, first_a))
    assert all(torch.equal(x, y) for x, y in zip(plan_b, first_b))
    runs.clear()
    b["initial_state"].copy_(pools[id(b)])
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        o_g, _ = atrex.fused_recurrent_gated_delta_rule(**b)
    assert runs == [], runs
    b["initial_state"].copy_(pools[id(b)])
    graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(o_g, first_b[0]) and torch.equal(b["initial_state"], first_b[1])
