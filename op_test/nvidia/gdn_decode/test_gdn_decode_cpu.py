"""CPU tier of ``nvidia.gdn_decode_sm90``: registration, the check table (both sides of every rule, no aten
op), the tile rule, the capture guard, and the Triton kernel itself under ``TRITON_INTERPRET=1`` against the
float64 oracle (in a subprocess: the variable must be set before ``triton.jit`` decorates and must not leak)."""

import pytest
import torch

from atrex.api.gdn_decode import normalize_gdn_decode_call
from atrex.dispatch.registry import get_registry
from atrex.dispatch.target import DeviceTarget
from atrex.errors import AtrexCaptureError
from atrex.inputs import gdn_decode_inputs
from atrex.plugin import validate_manifest
from atrex_nvidia import _plugin
from atrex_nvidia.gdn_decode.sm90 import impl, launch
from testlib import OpRecorder, run_result_script

SM90 = DeviceTarget("nvidia", "sm90", "NVIDIA H200", (9, 0), "cuda 13.0", 132, False, 0)
SM100 = DeviceTarget("nvidia", "sm100", "NVIDIA B200", (10, 0), "cuda 13.0", 148, False, 0)


def mk(seq_lens=(1, 1), target=SM90, **kw):
    kw.setdefault("head_k_dim", 64)
    kw.setdefault("head_v_dim", 64)
    return normalize_gdn_decode_call(**gdn_decode_inputs(list(seq_lens), **kw))._replace(target=target)


def reasons(call):
    rec = OpRecorder()
    with rec:
        elig = impl.check(call)
    assert rec.ops == [], f"check ran tensor ops: {rec.ops}"
    return {(r.code, r.argument) for r in elig.reasons}


def test_registered_on_sm90_only():
    man = _plugin.plugin()
    assert validate_manifest(man, "nvidia") == []
    spec = next(s for s in man.impls if s.id == "nvidia.gdn_decode_sm90")
    assert spec.op == "fused_recurrent_gated_delta_rule" and spec.archs == ("nvidia/sm90",) and spec.prewarm
    order = [i.id for i in get_registry().all_candidates("fused_recurrent_gated_delta_rule", "nvidia/sm90")]
    assert order == ["nvidia.gdn_decode_sm90", "core.reference"]
    assert "nvidia.gdn_decode_sm90" not in [i.id for i in get_registry().all_candidates(
        "fused_recurrent_gated_delta_rule", "nvidia/sm100")]


def test_kernel_names_prefixed():
    from atrex_nvidia.gdn_decode.sm90 import kernels

    names = [n for n, f in vars(kernels).items() if hasattr(f, "run") and hasattr(f, "fn")]
    assert names and all(n.startswith("atrex_sm90_gdn_decode") for n in names)


@pytest.mark.parametrize("kw", [
    dict(dtype=torch.float16), dict(pool="bf16"), dict(state_v_first=False), dict(head_k_dim=16, head_v_dim=256),
    dict(head_k_dim=256, head_v_dim=256), dict(head_k_dim=128, head_v_dim=128), dict(mtp=True), dict(padded=1),
    dict(inplace=False), dict(beta=False), dict(l2norm=False), dict(num_heads=1, num_v_heads=8),
])
def test_accepts(kw):
    assert reasons(mk(**kw)) == set()


@pytest.mark.parametrize("kw, want", [
    (dict(dtype=torch.float32), {("dtype", "q")}),
    (dict(head_k_dim=100), {("head_dim", "q")}),
    (dict(head_v_dim=512), {("head_dim", "v")}),
    (dict(head_k_dim=8, head_v_dim=48), {("head_dim", "q"), ("head_dim", "v")}),
    (dict(target=SM100), {("target", "q")}),
])
def test_declines_with_every_reason(kw, want):
    assert reasons(mk(**kw)) == want


def test_tile_rule_is_graph_static_and_fills_small_batches():
    assert launch.tile_config(1, 32, 128, 128, 132) == (8, 1)
    assert launch.tile_config(256, 32, 128, 128, 132) == (32, 4)
    assert launch.tile_config(256, 32, 256, 256, 132) == (32, 8)
    assert launch.tile_config(4, 2, 64, 16, None)[0] == 8


def test_unwarmed_capture_raises_before_any_tensor_op():
    call = mk()._replace(capturing=True)
    launch.clear_compiled()
    rec = OpRecorder()
    with pytest.raises(AtrexCaptureError, match="prewarm"), rec:
        launch.decode(call)
    assert rec.ops == []
    with pytest.raises(AtrexCaptureError):
        impl.prewarm(call)


INTERP = r"""
import json, torch
import triton_interp_bf16; triton_interp_bf16.install()
from atrex.api.gdn_decode import normalize_gdn_decode_call
from atrex.dispatch.target import DeviceTarget
from atrex.inputs import gdn_decode_inputs
from atrex.reference.oracle import gdn_decode_oracle, rel_rmse
from atrex_nvidia.gdn_decode.sm90 import impl
SM90 = DeviceTarget("nvidia", "sm90", "NVIDIA H200", (9, 0), "cuda 13.0", 132, False, 0)
CASES = [
    dict(seq_lens=[1, 1, 1, 1], padded=1, num_heads=2, num_v_heads=4, head_k_dim=32, head_v_dim=32),
    dict(seq_lens=[3, 1, 2], mtp=True, padded=1, pool="bf16", num_heads=1, num_v_heads=2, head_k_dim=64,
         head_v_dim=32),
    dict(seq_lens=[2, 0, 2], mtp=True, inplace=False, state_v_first=False, num_heads=1, num_v_heads=2,
         head_k_dim=16, head_v_dim=16, dtype=torch.float16, beta=False),
    dict(seq_lens=None, batch=2, seq_len=2, l2norm=False, state_v_first=False, num_heads=1, num_v_heads=1,
         head_k_dim=16, head_v_dim=64),
    # cu_seqlens[-1] past the packed tokens (no GPU value check): the kernel clamps it, the oracle sees the clamp
    dict(seq_lens=[2, 1, 3], bad_cu_end=True, num_heads=1, num_v_heads=2, head_k_dim=16, head_v_dim=16),
]
out = []
for c in CASES:
    bad_cu_end = c.pop("bad_cu_end", False)
    kw = gdn_decode_inputs(c.pop("seq_lens"), seed=3, **c)
    pool0 = kw["initial_state"].clone()
    ref_o, ref_s = gdn_decode_oracle(**{**kw, "initial_state": pool0.clone()})
    call = normalize_gdn_decode_call(**kw)._replace(target=SM90)
    if bad_cu_end:
        cu = kw["cu_seqlens"].clone()
        cu[-1] += 50
        call = call._replace(cu_seqlens=cu)
    assert impl.check(call).ok
    o, s = impl.run(call)
    idx = kw["ssm_state_indices"]
    live = {int(x) for x in idx.flatten() if x >= 0}
    untouched = [i for i in range(pool0.shape[0]) if i not in live]
    same = bool(torch.equal(kw["initial_state"][untouched], pool0[untouched]))
    if not kw["inplace_final_state"]:
        same = same and bool(torch.equal(kw["initial_state"], pool0))
    out.append(dict(o=rel_rmse(ref_o, o), s=rel_rmse(ref_s, s), same=same, inplace=s is kw["initial_state"],
                    want_inplace=kw["inplace_final_state"], finite=bool(torch.isfinite(o.float()).all())))
print("RESULT " + json.dumps(out))
"""


def test_kernel_under_the_triton_interpreter_matches_the_oracle():
    import pathlib

    here = pathlib.Path(__file__).resolve().parents[2]
    res = run_result_script(INTERP, set_env={"TRITON_INTERPRET": "1", "PYTHONPATH": str(here)}, timeout=300,
                            what="gdn_decode interpreter")
    for i, r in enumerate(res):
        assert r["o"] < 5e-3 and r["s"] < 5e-3, (i, r)
        assert r["same"] and r["finite"] and r["inplace"] == r["want_inplace"], (i, r)
