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


def test_declines_non_contiguous_inputs():
    kw = gdn_inputs(seq_len=70)
    kw["v"] = kw["v"].transpose(1, 2).contiguous().transpose(1, 2)
    call = normalize_gdn_call(**kw)._replace(target=SM90)
    assert ("layout", "v") in codes(call)


def test_declines_options_outside_domain():
    call = mk()
    assert ("option", "use_gate_in_kernel") in codes(call._replace(use_gate_in_kernel=True))
    assert ("option", "allow_neg_eigval") in codes(call._replace(allow_neg_eigval=True))
    assert impl.check(call._replace(allow_neg_eigval=True, use_beta_sigmoid_in_kernel=True)).ok


def test_every_reason_listed_at_once():
    call = mk(target=SM100, head_k_dim=264)._replace(use_gate_in_kernel=True)
    assert {c for c, _ in codes(call)} == {"target", "head_dim", "option"}


def test_prewarm_under_capture_raises_before_running():
    call = mk()._replace(capturing=True)
    with OpRecorder() as rec, pytest.raises(AtrexCaptureError, match="prewarm"):
        impl.prewarm(call)
    assert rec.ops == []
