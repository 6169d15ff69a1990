"""CPU tier: the launches of ``nvidia.gdn_sm90`` for fla 0.6's forward options (``launch.gdn_fwd(plan_only=True)``
on CPU tensors, nothing compiled or launched): fla's in-kernel gate in the gates kernel, fp32 q/k/v on the generic
pair, and the unchanged launches of calls without them."""

import pytest
import torch

pytest.importorskip("triton")

from atrex_nvidia.chunk_gdn.sm90 import launch as L
from atrex_nvidia.chunk_gdn.sm90 import plan as P


def planned(T=256, B=1, H=2, HV=4, K=128, V=None, dtype=torch.bfloat16, cu=None, gate=None, plan=None,
            sm_count=132, l2norm=True):
    """(plan, [(kernel name without the prefix, grid, args, meta)], inputs) of one call; ``gate``: None, "bias" or
    "nobias" (fla's in-kernel gate with or without dt_bias)."""
    V = V or K
    e = torch.empty
    x = dict(q=e(B, T, H, K, dtype=dtype), k=e(B, T, H, K, dtype=dtype), v=e(B, T, HV, V, dtype=dtype),
             g=e(B, T, HV), beta=e(B, T, HV, dtype=dtype), A_log=e(HV), dt_bias=e(HV) if gate == "bias" else None,
             cu=None if cu is None else torch.tensor(cu, dtype=torch.int32))
    p, launches = L.gdn_fwd(x["q"], x["k"], x["v"], x["g"], x["beta"], scale=0.1, initial_state=None,
                            output_final_state=True, use_qk_l2norm_in_kernel=l2norm, state_v_first=False,
                            cu_seqlens=x["cu"], use_gate_in_kernel=gate is not None, A_log=x["A_log"],
                            dt_bias=x["dt_bias"], sm_count=sm_count, plan=plan, plan_only=True)
    return p, [(k.__name__.replace("atrex_sm90_gdn_", ""), grid, args, meta) for k, grid, args, meta in launches], x


def names(launches):
    return [n for n, *_ in launches]


def launch_of(launches, name):
    (hit,) = [ln for ln in launches if ln[0] == name]
    return hit


# ---- fla's in-kernel gate ----


@pytest.mark.parametrize("gate", ["bias", "nobias"])
def test_gate_transform_before_an_intra_kernel_that_forms_the_gate_rows(gate):
    """Two value heads per intra program (fixed length): a transform-only gates launch over every batch row's
    fixed-length slots writes the transformed g (fp32 ``[B, T, HV]``), and the intra kernel reads it as its g."""
    p, launches, x = planned(B=2, T=130, H=2, HV=4, gate=gate)
    assert p.heads_per_intra == 2 and names(launches)[:2] == ["gates", "intra_chunk_v3"], names(launches)
    _, grid, args, meta = launches[0]
    assert grid == (2 * 3, 1)
    assert meta["GATE_IN_KERNEL"] and meta["HAS_DT_BIAS"] == (gate == "bias") and meta["STORE_FAC"] is False
    assert not meta["IS_VARLEN"] and not meta["BETA_SIGMOID"] and "GATES" not in launches[1][3]
    a_log, dt_bias, g_out = args[-3:]
    assert args[0] is x["g"] and a_log is x["A_log"] and (dt_bias is x["dt_bias"] if gate == "bias" else True)
    assert g_out.shape == (2, 130, 4) and g_out.dtype == torch.float32 and g_out.is_contiguous()
    assert launches[1][2][2] is g_out and launches[1][2][3] is x["beta"]  # (the intra kernel's g, then beta)


def test_gate_in_the_full_gates_launch_of_varlen_one_head_programs():
    """Varlen with one value head per intra program: the one gates launch transforms g and writes the factor planes
    from it (the intra kernel's GATES form), with the beta options; later kernels read the transformed g."""
    p, launches, x = planned(T=300, H=4, HV=4, cu=[0, 1, 100, 300], gate="bias")
    assert names(launches)[:4] == ["chunk_offsets", "slot_seq", "gates", "intra_chunk_v3"], names(launches)
    _, _, args, meta = launch_of(launches, "gates")
    assert meta["IS_VARLEN"] and meta["GATE_IN_KERNEL"] and meta["HAS_DT_BIAS"] and "STORE_FAC" not in meta
    assert args[0] is x["g"] and launch_of(launches, "intra_chunk_v3")[3]["GATES"]
    assert launch_of(launches, "intra_chunk_v3")[2][2] is args[-1]


def test_gate_on_the_generic_pair_and_on_rc_plans():
    """The generic pair (K = 100, varlen): a transform-only launch (fixed-length slots over the one batch row; no
    slot map); rc2's PDL chain includes the gates launch."""
    _, launches, _ = planned(T=300, H=2, HV=2, K=100, cu=[0, 5, 300], gate="nobias")
    assert names(launches) == ["chunk_offsets", "gates", "intra_chunk", "state_output"], names(launches)
    _, grid, args, meta = launch_of(launches, "gates")
    assert grid == (5, 1) and not meta["IS_VARLEN"] and meta["STORE_FAC"] is False
    assert launch_of(launches, "intra_chunk")[2][3] is args[-1]
    p, launches, _ = planned(T=640, H=32, HV=32, cu=[64 * i for i in range(11)], gate="bias")
    if p.state in ("rc", "rc2") and p.pdl:
        assert launch_of(launches, "gates")[3].get("PDL") is True


def test_without_the_gate_the_launches_are_unchanged():
    """use_gate_in_kernel=False: A_log is ignored, no gates launch where none ran before, and the varlen gates
    launch keeps its meta (no new constexpr in its key)."""
    _, launches, _ = planned(B=2, T=130)
    assert "gates" not in names(launches)
    _, launches, _ = planned(T=300, H=4, HV=4, cu=[0, 1, 100, 300])
    assert set(launch_of(launches, "gates")[3]) == {"IS_VARLEN", "BH", "BETA_SIGMOID", "NEG_EIGVAL", "num_warps"}


def test_gate_without_A_log_raises():
    e = torch.empty
    with pytest.raises(ValueError, match="A_log"):
        L.gdn_fwd(e(1, 64, 1, 64), e(1, 64, 1, 64), e(1, 64, 1, 64), e(1, 64, 1), e(1, 64, 1), scale=0.1,
                  initial_state=None, output_final_state=False, use_qk_l2norm_in_kernel=True, state_v_first=False,
                  cu_seqlens=None, use_gate_in_kernel=True, plan_only=True)


# ---- fp32 q/k/v ----


@pytest.mark.parametrize("kw", [dict(K=128), dict(K=64, V=256, cu=[0, 3, 256]), dict(K=100, V=24, l2norm=False)])
def test_fp32_runs_the_generic_pair_with_tf32x3_dots(kw):
    p, launches, _ = planned(dtype=torch.float32, sm_count=1, **kw)  # (sm_count 1: the many-program BV 64)
    assert (p.intra, p.state) == ("generic", "generic") and p.block_v <= P.FP32_MAX_BV, p
    for n in ("intra_chunk", "state_output"):
        assert launch_of(launches, n)[3]["DOT_PRECISION"] == "tf32x3"


def test_16_bit_generic_launches_keep_their_meta():
    _, launches, _ = planned(K=100)
    assert all("DOT_PRECISION" not in meta for *_, meta in launches)


def test_fp32_refuses_other_plans_and_k_over_128():
    """The launcher trusts its caller, but an explicit per-head plan or K > 128 with fp32 inputs is refused
    before any launch (the check declines K > 128 with fp32; the per-head and Gluon kernels are 16-bit)."""
    bf16 = planned()[0]
    assert bf16.intra == "per_head"
    with pytest.raises(ValueError, match="generic pair"):
        planned(dtype=torch.float32, plan=bf16)
    with pytest.raises(ValueError, match="K <= 128"):
        planned(dtype=torch.float32, K=256)
