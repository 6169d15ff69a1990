"""CPU tier: ``nvidia.gdn_sm90``'s registration and check domain, both sides of
each rule. Calls are normalized on CPU tensors and given a faked SM90 target; no kernel runs."""

import pytest
import torch

from atrex.api.chunk_gdn import normalize_gdn_call
from atrex.dispatch.target import DeviceTarget
from atrex.errors import AtrexCaptureError
from atrex.inputs import gdn_inputs
from atrex.plugin import validate_manifest
from atrex_nvidia import _plugin
from atrex_nvidia.chunk_gdn.sm90 import impl
from testlib import OpRecorder

SM90 = DeviceTarget("nvidia", "sm90", "NVIDIA H200", (9, 0), "cuda 13.0", 132, False, 0)
SM100 = DeviceTarget("nvidia", "sm100", "NVIDIA B200", (10, 0), "cuda 13.0", 148, False, 0)


def mk(target=SM90, **kw):
    kw.setdefault("seq_len", 70)
    return normalize_gdn_call(**gdn_inputs(**kw))._replace(target=target)


def codes(call):
    return sorted({(r.code, r.argument) for r in impl.check(call).reasons})


def test_registered_for_sm90_only():
    assert validate_manifest(_plugin.plugin(), "nvidia") == []
    (spec,) = [s for s in _plugin.IMPLS if s.id == "nvidia.gdn_sm90"]
    assert spec.op == "chunk_gated_delta_rule" and spec.archs == ("nvidia/sm90",)
    assert spec.check.endswith("chunk_gdn.sm90.impl:check") and spec.prewarm


@pytest.mark.parametrize("kw", [
    dict(num_heads=16, num_v_heads=32, head_k_dim=128, head_v_dim=128),       # Qwen3-Next
    dict(seq_lens=[0, 1, 63, 64, 65], cu_dtype=torch.int64, state_v_first=True),
    dict(dtype=torch.float16, gate_dtype=torch.bfloat16, initial_state="bf16"),
    dict(head_k_dim=60, head_v_dim=100, initial_state=None, l2norm=False),
    dict(head_k_dim=256, head_v_dim=256, batch=2),
    dict(dtype=torch.float32, head_k_dim=128, head_v_dim=128),                # fp32: the generic pair
    dict(dtype=torch.float32, seq_lens=[0, 5, 70], head_k_dim=48, head_v_dim=24, l2norm=False),
])
def test_accepts_domain(kw):
    call = mk(**kw)
    with OpRecorder() as rec:
        elig = impl.check(call)
    assert elig.ok, str(elig)
    assert rec.ops == []  # host-only: no aten op, no allocation, no read


def test_declines_other_arch_with_reason():
    assert codes(mk(target=SM100)) == [("target", "q")]


def test_declines_head_dims_over_256():
    assert ("head_dim", "k") in codes(mk(head_k_dim=264))
    assert ("head_dim", "v") in codes(mk(head_v_dim=264))


def test_fp32_head_k_dim_up_to_128():
    """fp32 q/k/v run the generic pair, whose intra kernel at K = 256 needs more shared memory than a block has."""
    assert impl.check(mk(dtype=torch.float32, head_k_dim=128, head_v_dim=256)).ok
    assert codes(mk(dtype=torch.float32, head_k_dim=144)) == [("head_dim", "k")]
    assert impl.check(mk(dtype=torch.bfloat16, head_k_dim=144)).ok


def test_declines_non_contiguous_inputs():
    kw = gdn_inputs(seq_len=70)
    kw["v"] = kw["v"].transpose(1, 2).contiguous().transpose(1, 2)
    call = normalize_gdn_call(**kw)._replace(target=SM90)
    assert ("layout", "v") in codes(call)


def test_declines_options_outside_domain():
    call = mk()
    assert ("option", "allow_neg_eigval") in codes(call._replace(allow_neg_eigval=True))
    assert impl.check(call._replace(allow_neg_eigval=True, use_beta_sigmoid_in_kernel=True)).ok


def _gate(call, a_log=None, dt_bias=None):
    hv = call.num_v_heads
    return call._replace(use_gate_in_kernel=True, A_log=torch.zeros(hv) if a_log is None else a_log,
                         dt_bias=dt_bias)


@pytest.mark.parametrize("chunk_size", [16, 32, 64])
def test_accepts_fla_gate_options_and_chunk_size(chunk_size):
    """fla 0.6's forward options: the in-kernel gate (A_log, optional dt_bias, fp32 / bf16 / fp16), the beta
    sigmoid with negative eigenvalues, fp32 q/k/v, chunk_size 16 / 32 / 64 (a hint; the kernels use 64)."""
    for kw in (dict(), dict(dtype=torch.float32), dict(seq_lens=[3, 0, 70])):
        call = mk(**kw)._replace(chunk_size=chunk_size, use_beta_sigmoid_in_kernel=True, allow_neg_eigval=True)
        for a_dt, b in ((torch.float32, None), (torch.bfloat16, torch.zeros(8, dtype=torch.float16))):
            gated = _gate(call, torch.zeros(8, dtype=a_dt), b)
            with OpRecorder() as rec:
                elig = impl.check(gated)
            assert elig.ok, str(elig)
            assert rec.ops == []


def test_declines_gate_parameters_outside_domain():
    call = mk()
    assert ("layout", "A_log") in codes(_gate(call, torch.zeros(16)[::2]))
    assert ("layout", "dt_bias") in codes(_gate(call, dt_bias=torch.zeros(16)[::2]))
    assert ("dtype", "A_log") in codes(_gate(call, torch.zeros(8, dtype=torch.float64)))


def test_every_reason_listed_at_once():
    call = _gate(mk(target=SM100, head_k_dim=264), torch.zeros(16)[::2])
    assert {c for c, _ in codes(call)} == {"target", "head_dim", "layout"}


def test_prewarm_under_capture_raises_before_running():
    call = mk()._replace(capturing=True)
    with OpRecorder() as rec, pytest.raises(AtrexCaptureError, match="prewarm"):
        impl.prewarm(call)
    assert rec.ops == []
