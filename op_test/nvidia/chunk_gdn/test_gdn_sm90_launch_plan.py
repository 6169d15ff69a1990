"""CPU tier: which kernels and configurations ``nvidia.gdn_sm90``'s launcher plans for a call.

``gdn_fwd`` builds its launch list from shapes, strides, dtypes and alignment only, so the plan can be
inspected on CPU tensors: ``_launch_all`` is replaced by a recorder and nothing is compiled or launched.
Covers the round-5 selection rules (state kernel "auto": tma for the few-program configuration when the
tensors can be described by TMA, v2 otherwise; the intra register cap; the split state pass), both sides of
each rule.
"""

import pytest
import torch

pytest.importorskip("triton")

from atrex_nvidia.chunk_gdn.sm90 import launch as L

# The state kernel "auto" plans where TMA applies with few programs: since round 9 the warp-specialised Gluon kernel
# where this Triton supports it (>= 3.6; CI's lock has 3.9), else the Triton tma kernel.
TMA = "atrex_sm90_gdn_state_output_tma"
GL_WS = "atrex_sm90_gdn_state_output_gl_ws"
FEW = GL_WS if L._gluon_ws_supported() else TMA
GL_RC = "atrex_sm90_gdn_state_output_gl_rc"
GL_RC2 = "atrex_sm90_gdn_state_output_gl_rc2"
V2 = "atrex_sm90_gdn_state_output_v2"


@pytest.fixture
def plan(monkeypatch):
    """Call ``gdn_fwd`` and return its planned launches as [(kernel name, grid, args, meta)] (and split flag)."""
    seen = {}

    def record(dev, launches, o, ht, sig=None, split=False):
        # "launches" leaves out the gates kernel (round 17, INTRA_V3_GATES), so that the other tests see the v3
        # launch where they did before; "all" has it
        seen["all"] = [(kern.__name__, grid, args, meta) for kern, grid, args, meta in launches]
        seen["launches"] = [x for x in seen["all"] if x[0] != "atrex_sm90_gdn_gates"]
        seen["split"] = split
        return o, ht

    monkeypatch.setattr(L, "_launch_all", record)

    def run(T=256, B=1, H=2, HV=4, K=128, V=None, dtype=torch.bfloat16, cu_seqlens=None, q=None, l2norm=True,
            sm_count=132, initial_state=None, state_v_first=False, cu_cpu=False):
        V = V or K
        gen = torch.Generator().manual_seed(0)
        r = lambda *s: torch.randn(*s, generator=gen)
        q = r(B, T, H, K).to(dtype) if q is None else q
        k, v = r(B, T, H, K).to(dtype), r(B, T, HV, V).to(dtype)
        g, beta = -torch.rand(B, T, HV, generator=gen), torch.rand(B, T, HV, generator=gen).to(dtype)
        cu = None if cu_seqlens is None else torch.tensor(cu_seqlens, dtype=torch.int32)
        L.gdn_fwd(q, k, v, g, beta, scale=0.1, initial_state=initial_state, output_final_state=True,
                  use_qk_l2norm_in_kernel=l2norm, state_v_first=state_v_first, cu_seqlens=cu, sm_count=sm_count,
                  cu_seqlens_cpu=cu.clone() if cu_cpu else None)
        return seen

    return run


def state_kernel(seen):
    names = [n for n, *_ in seen["launches"] if "state_output" in n]
    assert len(names) in (1, 2), names
    return names[-1]


def _ws_out_regs():
    """gl_ws's output-partition registers at the default knobs: with GL_WS_QSIDE (on since r98) GL_WS_OUT2_REGS under
    GL_WS_OUT2 (on since r114), else GL_WS_QSIDE_OUT_REGS; without it GL_WS_OUT_REGS less the 16 its loader takes
    with GL_WS_FAC_SMEM."""
    if L.GL_WS_QSIDE:
        return L.GL_WS_OUT2_REGS if L.GL_WS_OUT2 and L.GL_WS_FAC_SMEM else L.GL_WS_QSIDE_OUT_REGS
    return L.GL_WS_OUT_REGS - 16 * L.GL_WS_FAC_SMEM


def test_few_programs_take_the_tma_state_kernel_with_in_kernel_descriptors(plan, monkeypatch):
    """The 3-stage (few-program) configuration: the warp-specialised Gluon kernel (3 load slots, 4 chain warps) with
    the tma launch's in-kernel descriptors; with STATE_AUTO_GL_WS off, under the Triton interpreter, or without a
    Triton that supports it, the Triton tma kernel (4 warps, 3 stages)."""
    seen = plan(T=8192 // 32, H=16, HV=32)  # 32 programs x 4 V-blocks: the 3-stage configuration
    name, grid, args, meta = seen["launches"][-1]
    assert name == FEW and meta["DEVICE_DESC"] is True and grid == (4, 32) and meta["num_warps"] == 4
    if FEW == GL_WS:
        assert meta["STAGES"] == 3 and meta["OUT_REGS"] == _ws_out_regs() and "num_stages" not in meta
        assert meta.get("QSIDE", False) is bool(L.GL_WS_QSIDE) and meta.get("QSCALE", False) is bool(L.GL_WS_QSCALE)
    intra = seen["launches"][0]
    assert intra[0] == "atrex_sm90_gdn_intra_chunk_v3" and intra[3]["GS"] == 2 and intra[3]["maxnreg"] == 168
    assert intra[3]["MASK_OUT"] is True
    for knob, env in ((dict(STATE_AUTO_GL_WS=False), None), ({}, "1")):
        with monkeypatch.context() as m:
            for a, val in knob.items():
                m.setattr(L, a, val)
            if env:
                m.setenv("TRITON_INTERPRET", env)
            name, grid, args, meta = plan(T=8192 // 32, H=16, HV=32)["launches"][-1]
            assert name == TMA and (meta["num_warps"], meta["num_stages"]) == (4, 3) and meta["DEVICE_DESC"] is True
    with monkeypatch.context() as m:
        m.setattr(L, "_gluon_ws_supported", lambda: False)
        assert state_kernel(plan(T=8192 // 32, H=16, HV=32)) == TMA


def test_many_programs_take_the_register_chain_kernel(plan, monkeypatch):
    """More BV = 32 state programs than SMs (round 10): "auto" plans gl_rc, persistent (one CTA per SM, items looped),
    BV 64, GL_RC_STAGES load slots, in-kernel descriptors. Outside its rule or domain: v2 (STATE_AUTO_GL_RC off, the
    Triton interpreter, a Triton without Gluon's warp_specialize, V not a multiple of 64). At the boundary (programs ==
    SMs) the few-program kernel stays. (One chain per CTA: GL_RC_TWO_CHAINS, "auto"'s gl_rc2 at V = 128 since r91, off
    here; test_rc_two_chains_takes_whole_heads_where_gl_rc_has_qside_and_v128 plans it.)"""
    monkeypatch.setattr(L, "GL_RC_TWO_CHAINS", False)
    cu = [64 * 4 * i for i in range(17)]  # 16 sequences x 32 heads x 4 V-blocks of 32: 2048 programs
    name, grid, args, meta = plan(T=cu[-1], H=32, HV=32, cu_seqlens=cu)["launches"][-1]
    if L._gluon_ws_supported():
        assert name == GL_RC and grid == (132,) and meta["BV"] == 64 and meta["STAGES"] == L.GL_RC_STAGES
        assert meta["DEVICE_DESC"] is True and meta["num_warps"] == 4 and args[-2] == 16 * 32  # N_NH
        assert not meta.get("SCHED") and args[-1] is args[9]  # (GL_RC_SCHEDULE off: sched unread, cu in its place)
        with monkeypatch.context() as m:
            m.setattr(L, "GL_RC_PERSISTENT", False)
            assert plan(T=cu[-1], H=32, HV=32, cu_seqlens=cu)["launches"][-1][1] == (2 * 16 * 32,)
        # boundary: 32 heads x 4 V-blocks = 128 programs; more than the SMs only below 128 SMs
        assert state_kernel(plan(T=256, H=16, HV=32, sm_count=128)) == FEW
        name, grid, *_ = plan(T=256, H=16, HV=32, sm_count=127)["launches"][-1]
        assert name == GL_RC and grid == (64,)  # 64 items of BV 64 < 127 SMs
        assert state_kernel(plan(T=cu[-1], H=32, HV=32, V=32, cu_seqlens=cu)) == V2  # V < 64
        assert state_kernel(plan(T=cu[-1], H=32, HV=32, V=96, cu_seqlens=cu)) == V2  # a partial V block
    for knob, env in ((dict(STATE_AUTO_GL_RC=False), None), ({}, "1"), (dict(_gluon_ws_supported=lambda: False), None)):
        with monkeypatch.context() as m:
            for a, val in knob.items():
                m.setattr(L, a, val)
            if env:
                m.setenv("TRITON_INTERPRET", env)
            assert state_kernel(plan(T=cu[-1], H=32, HV=32, cu_seqlens=cu)) == V2


def test_fewer_than_64_rows_keep_state_v2(plan):
    assert state_kernel(plan(T=63)) == "atrex_sm90_gdn_state_output_v2"
    assert state_kernel(plan(T=64)) == FEW


def test_k_not_a_power_of_two_keeps_state_v2(plan):
    assert state_kernel(plan(K=80)) == "atrex_sm90_gdn_state_output_v2"  # BK = 128 != K
    assert state_kernel(plan(K=64)) == FEW


def test_misaligned_or_unmergeable_q_keeps_state_v2(plan):
    T, H, K = 256, 2, 128
    base = torch.randn(1 * T * H * K + 8).bfloat16()
    q = base[8:].view(1, T, H, K)  # 16-byte aligned: tma
    assert state_kernel(plan(T=T, q=q, l2norm=False)) == FEW
    q = base[1:1 + T * H * K].view(1, T, H, K)  # 2-byte offset: not describable
    assert state_kernel(plan(T=T, q=q, l2norm=False)) == "atrex_sm90_gdn_state_output_v2"
    full = torch.randn(2, 2 * T, H, K).bfloat16()
    q = full[:, :T]  # batch stride != T * time stride
    assert state_kernel(plan(T=T, B=2, q=q, l2norm=False)) == "atrex_sm90_gdn_state_output_v2"


def test_forced_v2_does_not_take_tma(plan, monkeypatch):
    monkeypatch.setattr(L, "STATE_IMPL", "v2")
    assert state_kernel(plan()) == "atrex_sm90_gdn_state_output_v2"
    assert state_kernel(plan(dtype=torch.float16)) == "atrex_sm90_gdn_state_output_v2"


V1_INTRA, V1_STATE = "atrex_sm90_gdn_intra_chunk", "atrex_sm90_gdn_state_output"


def kernels(seen):
    return [n for n, *_ in seen["launches"] if "chunk_offsets" not in n and "slot_seq" not in n]


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_fast_path_for_16_bit_inputs_with_k_and_v_multiples_of_16(plan, monkeypatch, dtype):
    """Round 16: fp16 calls take the same kernels as bf16 ones (intra v3, then the few- or many-program state kernel)
    where K and V are multiples of 16; elsewhere, or with FAST_PATH False, both take the operand-scaled v1 pair."""
    few = plan(T=8192 // 32, H=16, HV=32, dtype=dtype)
    assert kernels(few) == ["atrex_sm90_gdn_intra_chunk_v3", FEW]
    assert few["launches"][0][3]["GS"] == 2 and few["launches"][0][3]["INV_FP16"] is True
    cu = [64 * 4 * i for i in range(17)]
    many = kernels(plan(T=cu[-1], H=32, HV=32, cu_seqlens=cu, dtype=dtype))
    assert many == ["atrex_sm90_gdn_intra_chunk_v3", GL_RC2 if L._gluon_ws_supported() else V2]  # (V = 128: r91)
    assert kernels(plan(dtype=dtype, l2norm=False))[0] == "atrex_sm90_gdn_intra_chunk_v3"
    for kw in (dict(K=60), dict(K=64, V=100)):
        assert kernels(plan(dtype=dtype, **kw)) == [V1_INTRA, V1_STATE], kw
    monkeypatch.setattr(L, "FAST_PATH", False)
    assert kernels(plan(dtype=dtype)) == [V1_INTRA, V1_STATE]


def test_fast_path_not_for_other_dtypes():
    assert not L._use_fast(torch.empty(1, dtype=torch.float32), 128, 128)
    assert L._use_fast(torch.empty(1, dtype=torch.float16), 128, 128)
    assert not L._use_fast(torch.empty(1, dtype=torch.float16), 120, 128)


def test_split_state_pass_off_by_default_and_four_pieces_from_16384_when_on(plan, monkeypatch):
    monkeypatch.setattr(L, "SEQ_PARALLEL", False)  # (these few-head calls would take the sequence-parallel plan)
    assert not plan(T=16384, H=1, HV=1, K=16)["split"]  # off by default (round 6: not reproducibly faster)
    monkeypatch.setattr(L, "SPLIT_STATE_PASS", True)
    assert not plan(T=16383)["split"] and len(plan(T=16383)["launches"]) == 2
    seen = plan(T=16384, H=1, HV=1, K=16)
    assert seen["split"] == [2] * 4 and len(seen["launches"]) == 8  # (intra, state) per piece
    monkeypatch.setattr(L, "INTRA_V3_GATES", True)
    seen = plan(T=16384, H=1, HV=1, K=16)
    assert seen["split"] == [3] * 4 and len(seen["all"]) == 12  # (gates, intra, state) per piece
    monkeypatch.setattr(L, "INTRA_V3_GATES", "varlen1")
    assert not plan(T=16384, H=1, HV=1, K=16, cu_seqlens=[0, 8192, 16384])["split"]  # varlen is not split (one
    # sequence is: it is the fixed-length call, ONE_SEQUENCE_FIXED)
    monkeypatch.setattr(L, "SPLIT_STATE_PASS", False)
    assert not plan(T=16384, H=1, HV=1, K=16)["split"]


def test_split_state_pass_plans_two_halves_only_when_enabled_and_not_varlen(plan, monkeypatch):
    monkeypatch.setattr(L, "SEQ_PARALLEL", False)  # (as above)
    monkeypatch.setattr(L, "SPLIT_STATE_PASS", False)
    assert not plan(T=4096)["split"] and len(plan(T=4096)["launches"]) == 2
    monkeypatch.setattr(L, "SPLIT_STATE_PASS", True)
    monkeypatch.setattr(L, "SPLIT_MIN_T", 4096)
    monkeypatch.setattr(L, "SPLIT_PIECES", 2)
    seen = plan(T=4096)
    names = [n for n, *_ in seen["launches"]]
    assert seen["split"] and names == ["atrex_sm90_gdn_intra_chunk_v3", FEW] * 2
    # the halves meet at a chunk boundary: the first state kernel stores the mid state, the second reads it
    first_state, second_state = seen["launches"][1], seen["launches"][3]
    assert first_state[3]["STORE_HT"] and second_state[3]["USE_H0"]
    assert not plan(T=4095)["split"]  # below SPLIT_MIN_T
    assert not plan(T=4096, cu_seqlens=[0, 1000, 4096])["split"]  # varlen is not split


@pytest.mark.parametrize("T,pieces,want", [
    (4096, 2, [0, 2048, 4096]), (4096, 4, [0, 1024, 2048, 3072, 4096]), (1000, 3, [0, 320, 640, 1000]),
    (300, 3, [0, 64, 192, 300]), (150, 8, [0, 64, 150]), (128, 2, [0, 64, 128]),
])
def test_split_bounds_are_chunk_aligned_and_cover_the_sequence(T, pieces, want):
    b = L._split_bounds(T, pieces)
    assert b == want
    assert all(x % 64 == 0 for x in b[:-1]) and all(y - x >= 64 for x, y in zip(b, b[1:-1]))


@pytest.mark.parametrize("pieces", [3, 4])
def test_split_state_pass_chains_every_piece_through_its_mid_state(plan, monkeypatch, pieces):
    monkeypatch.setattr(L, "SPLIT_STATE_PASS", True)
    monkeypatch.setattr(L, "SPLIT_MIN_T", 4096)
    monkeypatch.setattr(L, "SPLIT_PIECES", pieces)
    seen = plan(T=4096)
    names = [n for n, *_ in seen["launches"]]
    assert seen["split"] and names == ["atrex_sm90_gdn_intra_chunk_v3", FEW] * pieces
    states = [launch for launch in seen["launches"] if "state_output" in launch[0]]
    # state kernel args: (..., fac, h0, o, ht, ...) after the five operands; piece j's ht is piece j+1's h0
    h0s = [st[2][6] for st in states]
    hts = [st[2][8] for st in states]
    assert not states[0][3]["USE_H0"] and all(st[3]["USE_H0"] for st in states[1:])
    assert all(st[3]["STORE_HT"] for st in states)
    for j in range(pieces - 1):
        assert hts[j].data_ptr() == h0s[j + 1].data_ptr() and hts[j].dtype == torch.float32
    # each piece's output is a time slice of the call's output, in order
    outs = [st[2][7] for st in states]
    starts = [(o_.data_ptr() - outs[0].data_ptr()) // (o_.stride(1) * o_.element_size()) for o_ in outs]
    assert starts == L._split_bounds(4096, pieces)[:-1] and starts[1] == (4096 // pieces) // 64 * 64


def test_persistent_tma_plans_a_1d_grid_of_at_most_two_ctas_per_sm(plan, monkeypatch):
    monkeypatch.setattr(L, "STATE_TMA_PERSISTENT", True)
    monkeypatch.setattr(L, "STATE_IMPL", "tma")
    cu = [64 * 4 * i for i in range(17)]  # 16 sequences x 32 heads x 4 V-blocks (2-stage configuration)
    name, grid, args, meta = plan(T=cu[-1], H=32, HV=32, cu_seqlens=cu, sm_count=132)["launches"][-1]
    assert name == "atrex_sm90_gdn_state_output_tma" and meta["PERSISTENT"] is True
    assert meta["num_stages"] == 2 and grid == (264,) and args[-1] == 16 * 32
    name, grid, args, meta = plan(T=256, H=16, HV=32, sm_count=132)["launches"][-1]  # 128 programs, 3 stages
    assert meta["PERSISTENT"] is True and meta["num_stages"] == 3 and grid == (128,) and args[-1] == 32
    monkeypatch.setattr(L, "STATE_TMA_PERSISTENT", False)
    name, grid, args, meta = plan(T=256, H=16, HV=32, sm_count=132)["launches"][-1]
    assert meta["PERSISTENT"] is False and grid == (4, 32)


@pytest.fixture
def plan_kernels(monkeypatch):
    """Like ``plan`` but keeps the JIT function objects: [(kernel, meta)] of a call."""
    seen = {}

    def record(dev, launches, o, ht, sig=None, split=False):
        seen["launches"] = [(kern, meta) for kern, grid, args, meta in launches]
        return o, ht

    monkeypatch.setattr(L, "_launch_all", record)

    def run(B, T, K=128, V=None, H=2, HV=4, dtype=torch.bfloat16):
        V = V or K
        z = lambda *s: torch.zeros(*s, dtype=dtype)
        L.gdn_fwd(z(B, T, H, K), z(B, T, H, K), z(B, T, HV, V), torch.zeros(B, T, HV), z(B, T, HV), scale=0.1,
                  initial_state=None, output_final_state=True, use_qk_l2norm_in_kernel=True, state_v_first=False,
                  cu_seqlens=None, sm_count=132)
        return seen["launches"]

    return run


@pytest.mark.parametrize("state_impl", ["auto", "v2", "tma"])
@pytest.mark.parametrize("B,K", [(1, 32), (2, 128), (64, 128), (1, 256)])
def test_t1_calls_take_the_state_kernels_compiled_without_t_specialisation(plan_kernels, monkeypatch, state_impl, B, K):
    """T == 1 (any batch, every state kernel: v2, tma at B*T >= 64, v1 at K = 256) launches the twin from
    ``kernels.NO_T1_SPECIALISATION`` (T, TOTAL_T not specialised: ptxas 12.8 miscompiled the T = 1 constexpr
    specialisation of state v2); T == 2 launches the ordinary kernel."""
    from atrex_nvidia.chunk_gdn.sm90 import kernels as K_
    monkeypatch.setattr(L, "STATE_IMPL", state_impl)
    for T in (1, 2):
        state = [(kern, meta) for kern, meta in plan_kernels(B, T, K=K) if "state_output" in kern.__name__]
        assert len(state) == 1
        kern = state[0][0]
        twins = set(K_.NO_T1_SPECIALISATION.values())
        if kern.__name__ in (GL_WS, GL_RC, GL_RC2):  # "auto", B*T >= 64: the Gluon kernels never specialise T
            assert state_impl == "auto" and {"T", "TOTAL_T"} <= set(kern.do_not_specialize), kern.do_not_specialize
        elif T == 1:
            assert kern in twins and {"T", "TOTAL_T"} <= set(kern.do_not_specialize), (T, kern.__name__)
        elif kern.__name__ == GL_WS:  # "auto", B*T >= 64: the Gluon kernel never specialises T
            assert state_impl == "auto" and {"T", "TOTAL_T"} <= set(kern.do_not_specialize), kern.do_not_specialize
        else:
            assert kern in K_.NO_T1_SPECIALISATION and kern not in twins, (T, kern.__name__)
    if state_impl == "tma" and B == 64:
        assert kern.__name__ == "atrex_sm90_gdn_state_output_tma"  # (the T = 2 call; B*T >= 64 allows TMA)


def test_gluon_ws_state_kernel_where_it_applies_and_fallbacks_elsewhere(plan, monkeypatch):
    """STATE_IMPL "gl_ws" (also "auto"'s few-program choice) is planned for K = 128 on an sm90 target with the tma
    launch's arguments and in-kernel descriptors, 3 load slots at the few-program configuration, 2 at the
    many-program one. Outside its domain it falls back: K = 32 (BK outside {64, 128}) to the Triton tma kernel (as
    STATE_IMPL "tma" would run), T = 1 (B*T < 64: no TMA) to v2, BV 16 to the tma kernel."""
    pytest.importorskip("triton.experimental.gluon")
    monkeypatch.setattr(L, "STATE_IMPL", "gl_ws")
    name, grid, args, meta = plan(T=256, H=16, HV=32)["launches"][-1]
    assert name == GL_WS and meta["num_warps"] == 4 and meta["OUT_REGS"] == _ws_out_regs()
    assert meta["DEVICE_DESC"] is True and meta["STAGES"] == 3 and "num_stages" not in meta
    cu = [64 * 4 * i for i in range(17)]  # many programs: forced gl_ws runs 2 slots
    name, grid, args, meta = plan(T=cu[-1], H=32, HV=32, cu_seqlens=cu)["launches"][-1]
    assert name == GL_WS and meta["STAGES"] == 2
    assert state_kernel(plan(T=256, K=32)) == TMA
    assert state_kernel(plan(T=1, H=16, HV=32)) == "atrex_sm90_gdn_state_output_v2"
    monkeypatch.setattr(L, "STATE_CFG_OVERRIDE", (16, 4, 2))
    assert state_kernel(plan(T=256, H=16, HV=32)) == TMA


def test_gluon_ws_fac_smem_reaches_the_launch(plan, monkeypatch):
    """GL_WS_FAC_SMEM (round 13, on by default) becomes the gl_ws launch's FAC_SMEM constexpr, with 16
    output-partition registers fewer (the loader takes them); off, the launch has neither change (round 12's binary).
    The knob is part of the call signature (a changed knob is a new warm-up key), and it does not reach other state
    kernels. (GL_WS_QSIDE, which needs it, off.)"""
    pytest.importorskip("triton.experimental.gluon")
    monkeypatch.setattr(L, "STATE_IMPL", "gl_ws")
    monkeypatch.setattr(L, "GL_WS_QSIDE", False)

    def meta(**kw):
        name, _, _, m = plan(T=256, H=16, HV=32, **kw)["launches"][-1]
        assert name == GL_WS
        return m
    base = meta()
    assert base["FAC_SMEM"] is True and base["OUT_REGS"] == L.GL_WS_OUT_REGS - 16
    sig0 = L._knobs()
    monkeypatch.setattr(L, "GL_WS_FAC_SMEM", False)
    old = meta()
    assert "FAC_SMEM" not in old and old["OUT_REGS"] == L.GL_WS_OUT_REGS
    assert L._knobs() != sig0
    monkeypatch.setattr(L, "GL_WS_FAC_SMEM", True)
    assert "FAC_SMEM" not in [m for n, _, _, m in plan(T=256, K=32)["launches"] if "state_output" in n][-1]


def test_state_split_xu_for_small_k_calls(plan, monkeypatch):
    """``STATE_SPLIT_XU`` (round 12), default "small" since round 13: the Triton state kernels (tma for K = 16 / 32
    with TMA, v2 for T = 1) get SPLIT_XU for every call with BK <= 32, with or without in-kernel L2 norm; not for K = 64
    (v2 at T = 1 or the tma kernel under "tma") or K = 128. "small_no_l2norm" (round 12's default) keeps it to calls
    without L2 norm, "no_l2norm" extends that to every BK, "never" turns it off, "always" on. The Gluon kernels have
    no such constexpr."""
    def meta(**kw):
        return [m for n, _, _, m in plan(**kw)["launches"] if "state_output" in n][-1]
    assert L.STATE_SPLIT_XU == "small"
    assert meta(T=256, K=16, l2norm=False)["SPLIT_XU"] is True
    assert meta(T=1, K=32, l2norm=False)["SPLIT_XU"] is True
    assert meta(T=256, K=16, l2norm=True)["SPLIT_XU"] is True
    assert meta(T=256, K=32, l2norm=True, cu_seqlens=[0, 100, 101, 166, 166, 256])["SPLIT_XU"] is True
    assert "SPLIT_XU" not in meta(T=1, K=64, l2norm=False)
    assert "SPLIT_XU" not in meta(T=1, K=64, l2norm=True)
    assert "SPLIT_XU" not in meta(T=1, H=16, HV=32, K=128, l2norm=False)
    monkeypatch.setattr(L, "STATE_SPLIT_XU", "small_no_l2norm")
    assert meta(T=256, K=16, l2norm=False)["SPLIT_XU"] is True
    assert "SPLIT_XU" not in meta(T=256, K=16, l2norm=True)
    monkeypatch.setattr(L, "STATE_SPLIT_XU", "no_l2norm")
    assert meta(T=1, K=64, l2norm=False)["SPLIT_XU"] is True
    assert "SPLIT_XU" not in meta(T=1, K=64, l2norm=True)
    monkeypatch.setattr(L, "STATE_SPLIT_XU", "never")
    assert "SPLIT_XU" not in meta(T=256, K=16, l2norm=False)
    monkeypatch.setattr(L, "STATE_SPLIT_XU", "always")
    assert meta(T=1, K=64, l2norm=True)["SPLIT_XU"] is True


@pytest.mark.parametrize("H,HV,gs", [(16, 32, 2), (4, 16, 2), (32, 32, 1), (16, 48, 1), (1, 1, 1), (3, 3, 1)])
def test_intra_v3_value_heads_per_program(plan, H, HV, gs):
    """Round 11: two value heads of one q/k head per intra v3 program under GVA with an even G (the q/k tiles once
    per pair); one head per program without GVA and for odd G. Round 12: the pairs with the masked-product inverse
    (MASK_OUT) at the v3 cap, 168; one-head programs without it. The grid counts programs, so it halves with two
    heads each."""
    seen = plan(T=130, H=H, HV=HV, K=64)
    name, grid, args, meta = seen["launches"][0]
    n_slots = 3  # cdiv(130, 64)
    assert name == "atrex_sm90_gdn_intra_chunk_v3" and grid == (n_slots * HV // gs,)
    assert meta.get("GS", 1) == gs and meta["FAST_EXP"] is True
    assert meta["maxnreg"] == L.INTRA_V3_MAXNREG == 168
    assert meta.get("MASK_OUT", False) is (gs == 2)


def test_intra_v3_gs2_cap_and_mask_out_knobs(plan, monkeypatch):
    """``INTRA_V3_GS2_MAXNREG`` sets the pairs' cap only; ``INTRA_V3_MASK_OUT`` True reaches every v3 program,
    False none (round 11's default: pairs at 232 without it)."""
    monkeypatch.setattr(L, "INTRA_V3_GS2_MAXNREG", 232)
    monkeypatch.setattr(L, "INTRA_V3_MASK_OUT", False)
    assert {(m.get("GS", 1), m["maxnreg"], "MASK_OUT" in m) for m in (
        plan(T=130, H=H, HV=32, K=64)["launches"][0][3] for H in (16, 32))} == {(2, 232, False), (1, 168, False)}
    monkeypatch.setattr(L, "INTRA_V3_MASK_OUT", True)
    assert {(m.get("GS", 1), m["maxnreg"], m.get("MASK_OUT")) for m in (
        plan(T=130, H=H, HV=32, K=64)["launches"][0][3] for H in (16, 32))} == {(2, 232, True), (1, 168, True)}


def test_intra_v3_gva_share_off(plan, monkeypatch):
    """``INTRA_V3_GVA_SHARE = 1``: round 10's one value head per program, at the v3 register cap."""
    monkeypatch.setattr(L, "INTRA_V3_GVA_SHARE", 1)
    name, grid, args, meta = plan(T=130, H=16, HV=32, K=64)["launches"][0]
    assert grid == (3 * 32,) and "GS" not in meta and meta["maxnreg"] == 168


def test_intra_v3_mask_out_knob(plan, monkeypatch):
    """``INTRA_V3_MASK_OUT`` True reaches one-head programs too (the 128-register variant case's configuration)."""
    name, grid, args, meta = plan(T=130, H=32, HV=32, K=64)["launches"][0]
    assert "MASK_OUT" not in meta
    monkeypatch.setattr(L, "INTRA_V3_MASK_OUT", True)
    monkeypatch.setattr(L, "INTRA_V3_MAXNREG", 128)
    name, grid, args, meta = plan(T=130, H=32, HV=32, K=64)["launches"][0]
    assert meta["MASK_OUT"] is True and meta["maxnreg"] == 128


def test_intra_slot_map_reaches_the_launch(plan, monkeypatch):
    """Round 14: ``INTRA_SLOT_MAP`` adds the slot-map launch after the chunk offsets (varlen only), sizes ``co`` for
    the map (N + 1 offsets, then one entry per slot) and sets SLOT_MAP on the v3 launch. Off, the plan is round 13's.
    The knob is part of the call signature; the v2 intra kernel never gets the map."""
    cu = [0, 0, 1, 65, 200]
    names = lambda seen: [n for n, *_ in seen["launches"]]

    def intra(seen):
        return next((a, m) for n, _, a, m in seen["launches"] if "intra" in n)
    seen = plan(T=200, H=2, HV=4, K=64, cu_seqlens=cu)
    assert names(seen)[:3] == ["atrex_sm90_gdn_chunk_offsets", "atrex_sm90_gdn_slot_seq",
                               "atrex_sm90_gdn_intra_chunk_v3"]
    n_slots = 200 // 64 + 4
    _, grid, args, meta = seen["launches"][1]
    assert grid == (1,) and args[2:] == (4, n_slots, 4) and meta["BLOCK"] == 1024 and meta["PACKED"] is False
    a, m = intra(seen)
    assert args[1] is a[10] and args[1].tolist() == cu  # the offsets (the packed map reads them)
    assert a[11] is args[0] and a[11].shape == (4 + 1 + n_slots,) and m["SLOT_MAP"] is True
    assert "SLOT_MAP" not in intra(plan(T=200, H=2, HV=4, K=64))[1]
    sig0 = L._knobs()
    # round 19: "packed", two entries (t0, eos) per slot, SLOT_MAP == 2 on the v3 and gates launches
    with monkeypatch.context() as mp:
        mp.setattr(L, "INTRA_SLOT_MAP", "packed")
        assert L._knobs() != sig0
        seen = plan(T=200, H=4, HV=4, K=64, cu_seqlens=cu)  # one-head programs: the gates kernel runs too
        _, _, args, meta = seen["all"][1]
        assert meta["PACKED"] is True
        a, m = intra(seen)
        assert a[11] is args[0] and a[11].shape == (4 + 1 + 2 * n_slots,) and m["SLOT_MAP"] == 2
        gates = next(mt for n, _, _, mt in seen["all"] if n == "atrex_sm90_gdn_gates")
        assert gates["SLOT_MAP"] == 2
        assert "SLOT_MAP" not in intra(plan(T=200, H=2, HV=4, K=64))[1]
    monkeypatch.setattr(L, "INTRA_SLOT_MAP", False)
    assert L._knobs() != sig0
    seen = plan(T=200, H=2, HV=4, K=64, cu_seqlens=cu)
    assert names(seen)[:2] == ["atrex_sm90_gdn_chunk_offsets", "atrex_sm90_gdn_intra_chunk_v3"]
    a, m = intra(seen)
    assert a[11].shape == (4 + 1,) and "SLOT_MAP" not in m
    monkeypatch.setattr(L, "INTRA_SLOT_MAP", True)
    monkeypatch.setattr(L, "INTRA_IMPL", "v2")
    seen = plan(T=200, H=2, HV=4, K=64, cu_seqlens=cu)
    assert "atrex_sm90_gdn_slot_seq" not in names(seen)
    assert "SLOT_MAP" not in intra(seen)[1]


def test_intra_v3_acc_merge_knob(plan, monkeypatch):
    """``INTRA_V3_ACC_MERGE`` (round 14, default "gs2") becomes the v3 launch's ACC_MERGE constexpr for two-head
    programs only (one-head fixed-length programs measured slower with it); True reaches one-head programs too, False
    none (round 13's launch). Part of the call signature."""
    def acc(H, **kw):
        return plan(T=130, H=H, HV=32, K=64, **kw)["launches"][0][3].get("ACC_MERGE", False)
    assert L.INTRA_V3_ACC_MERGE == "gs2"
    assert acc(16) is True and acc(32) is False
    assert acc(32, cu_seqlens=[0, 1, 65, 130]) is False
    sig0 = L._knobs()
    monkeypatch.setattr(L, "INTRA_V3_ACC_MERGE", True)
    assert L._knobs() != sig0
    assert acc(16) is True and acc(32) is True
    monkeypatch.setattr(L, "INTRA_V3_ACC_MERGE", False)
    assert acc(16) is False and acc(32) is False


def test_intra_v3_gates_knob(plan, monkeypatch):
    """``INTRA_V3_GATES`` (round 17) puts the gates kernel right before the v3 launch, over (chunk slot, block of value
    heads), writing the same factor buffer the state kernel reads, and sets GATES on the v3 launch; not with
    FOLD_QK_NORM (whose planes the v3 kernel forms itself) nor for the v2 intra kernel. The default "varlen1" takes it
    for varlen calls with one-head programs only; False for none. Part of the call signature."""
    names = lambda seen: [n for n, *_ in seen["all"]]
    assert L.INTRA_V3_GATES == "varlen1"
    off = names(plan(T=200, H=2, HV=4, K=64, cu_seqlens=[0, 0, 1, 65, 200]))  # two-head programs (plan reuses its dict)
    one = names(plan(T=200, H=4, HV=4, K=64, cu_seqlens=[0, 0, 1, 65, 200]))
    assert one.index("atrex_sm90_gdn_gates") + 1 == one.index("atrex_sm90_gdn_intra_chunk_v3")
    assert "atrex_sm90_gdn_gates" not in names(plan(T=130, H=32, HV=32, K=128))  # fixed length
    monkeypatch.setattr(L, "INTRA_V3_GATES", False)
    assert "atrex_sm90_gdn_gates" not in names(plan(T=200, H=4, HV=4, K=64, cu_seqlens=[0, 0, 1, 65, 200]))
    sig0 = L._knobs()
    monkeypatch.setattr(L, "INTRA_V3_GATES", True)
    assert L._knobs() != sig0
    for kw, n_slots, heads in ((dict(T=200, H=2, HV=4, K=64, cu_seqlens=[0, 0, 1, 65, 200]), 200 // 64 + 4, 4),
                               (dict(B=2, T=130, H=16, HV=48, K=128), 2 * 3, 48)):
        seen = plan(**kw)
        n = names(seen)
        i = n.index("atrex_sm90_gdn_gates")
        assert n[i + 1] == "atrex_sm90_gdn_intra_chunk_v3"
        _, grid, args, meta = seen["all"][i]
        bh = meta["BH"]
        assert bh == min(32, 1 << (heads - 1).bit_length()) and grid == (n_slots, -(-heads // bh))
        _, _, iargs, imeta = seen["all"][i + 1]
        assert imeta["GATES"] is True and args[2] is iargs[7]  # the factor buffer
        assert meta["IS_VARLEN"] == ("cu_seqlens" in kw) and meta["SLOT_MAP"] == ("cu_seqlens" in kw)
    assert [x for x in off if "gates" in x] == []
    monkeypatch.setattr(L, "FOLD_QK_NORM", True)
    seen = plan(T=200, H=2, HV=4, K=64, cu_seqlens=[0, 0, 1, 65, 200])
    assert "atrex_sm90_gdn_gates" not in names(seen)
    monkeypatch.setattr(L, "FOLD_QK_NORM", False)
    monkeypatch.setattr(L, "INTRA_IMPL", "v2")
    assert "atrex_sm90_gdn_gates" not in names(plan(T=200, H=2, HV=4, K=64))


def test_intra_v3_diag16_knob(plan, monkeypatch):
    """``INTRA_V3_DIAG16`` (round 19) sets DIAG16 on the v3 launch where it takes the fp16 inverse (in-kernel L2 norm):
    True (the default since round 22: r76/r77 on an H100) for every program, "gs1" / "gs2" for one- / two-head programs
    only, False for none; never without L2 norm (the bf16 merges + Newton path). Part of the call signature."""
    intra = lambda seen: next(m for n, _g, _a, m in seen["launches"] if n == "atrex_sm90_gdn_intra_chunk_v3")
    one, two = dict(T=200, H=4, HV=4, K=64), dict(T=200, H=2, HV=4, K=64)
    assert L.INTRA_V3_DIAG16 is True
    assert intra(plan(**one)).get("DIAG16") and intra(plan(**two)).get("DIAG16")
    sig0 = L._knobs()
    for val, want_one, want_two in ((False, False, False), ("gs1", True, False), ("gs2", False, True)):
        monkeypatch.setattr(L, "INTRA_V3_DIAG16", val)
        assert L._knobs() != sig0
        assert bool(intra(plan(**one)).get("DIAG16")) is want_one
        m2 = intra(plan(**two))
        assert m2["GS"] == 2 and bool(m2.get("DIAG16")) is want_two
        assert not intra(plan(**one, l2norm=False)).get("DIAG16")


FUSED = "atrex_sm90_gdn_fused_rc"


def test_fused_rc_plans_one_launch_in_its_domain(plan, monkeypatch):
    """``FUSED_RC`` (round 20): a call in its domain is one launch of the fused Gluon kernel (no chunk-offsets, slot-map,
    gates, intra or state launch), persistent over (V block of 64, sequence x value head) items, at most one CTA per
    SM, with the knob's load slots and register split, the raw q / k / v and g / beta with their strides, cu_seqlens
    passed through. Off (the default) or outside the domain, the call plans what it plans without the knob."""
    if not L._gluon_ws_supported():
        pytest.skip("this Triton has no Gluon warp_specialize (the fused kernel's domain)")
    cu = [0, 0, 1, 65, 300, 1024]
    base = [n for n, *_ in plan(T=1024, H=2, HV=4, cu_seqlens=cu)["all"]]
    assert FUSED not in base
    monkeypatch.setattr(L, "FUSED_RC", True)
    seen = plan(T=1024, H=2, HV=4, cu_seqlens=cu)
    assert [n for n, *_ in seen["all"]] == [FUSED]
    _, grid, args, meta = seen["all"][0]
    assert grid == (5 * 4 * 2,)  # 5 sequences x 4 value heads x 2 V blocks, fewer than the SMs
    assert meta["BK"] == 128 and meta["BV"] == 64 and meta["IS_VARLEN"] and meta["G"] == 2
    assert (meta["STAGES"], meta["AUX_REGS"], meta["OUT_REGS"]) == (L.FUSED_STAGES, L.FUSED_AUX_REGS, L.FUSED_OUT_REGS)
    assert meta["num_warps"] == 4 and not meta["USE_H0"] and meta["STORE_HT"] and not meta["DIAG16"]
    assert meta["REINTERPRET"] in (1, 2)  # Gluon's shared-memory reinterpret, as named in Triton 3.6 / 3.9
    q, k, v, g, beta, h0, o, ht, cu_t = args[:9]
    assert q.shape == (1, 1024, 2, 128) and v.shape == (1, 1024, 4, 128) and g.shape == beta.shape == (1, 1024, 4)
    assert cu_t.tolist() == cu and o.shape == v.shape and ht.shape == (5, 4, 128, 128)
    assert args[-1] == 5 * 4 and args[-7:-1] == (1024, 2 * 128, 4 * 128, 256, 256, 512)  # ROWS .. s_vr, N_NH
    # more items than SMs: one CTA per SM; fixed length, K = 64
    assert plan(T=256, B=200, H=2, HV=4, K=64)["all"][0][1] == (132,)
    assert plan(T=256, B=2, H=2, HV=4, K=64, sm_count=3)["all"][0][1] == (3,)
    # outside the domain: no in-kernel L2 norm, K or V not in it, fewer than 64 rows, the interpreter, no Gluon
    for kw in (dict(l2norm=False), dict(K=32), dict(K=256), dict(K=128, V=96), dict(T=63), dict(K=80)):
        names = [n for n, *_ in plan(**kw)["all"]]
        assert FUSED not in names and any("intra" in n for n in names), (kw, names)
    with monkeypatch.context() as m:
        m.setenv("TRITON_INTERPRET", "1")
        assert FUSED not in [n for n, *_ in plan()["all"]]
    with monkeypatch.context() as m:
        m.setattr(L, "_gluon_ws_supported", lambda: False)
        assert FUSED not in [n for n, *_ in plan()["all"]]
    # "auto": only calls with at least as many items as SMs
    monkeypatch.setattr(L, "FUSED_RC", "auto")
    assert [n for n, *_ in plan(T=1024, H=2, HV=4, cu_seqlens=cu, sm_count=40)["all"]] == [FUSED]  # 40 items
    assert FUSED not in [n for n, *_ in plan(T=1024, H=2, HV=4, cu_seqlens=cu, sm_count=41)["all"]]
    assert [n for n, *_ in plan(T=1024, H=32, HV=32, cu_seqlens=[64 * i for i in range(17)])["all"]] == [FUSED]
    assert FUSED not in [n for n, *_ in plan(T=8192, H=16, HV=32)["all"]]  # 64 items on 132 SMs


def test_host_integer_helpers_equal_triton_s():
    """The launcher's plain-Python ``_cdiv`` and ``_next_pow2`` (round 23: Triton 3.6's are constexpr functions, ~3x
    the host time) give Triton's values over every size a plan uses."""
    import triton
    assert [L._next_pow2(n) for n in range(70000)] == [triton.next_power_of_2(n) for n in range(70000)]
    assert all(L._cdiv(a, b) == triton.cdiv(a, b) for a in range(5000) for b in (1, 7, 16, 32, 64, 1024))


def test_fast_launch_records_only_gpu_calls_with_a_signature(monkeypatch):
    """FAST_LAUNCH keeps compiled kernels only for calls on a GPU with a signature: a CPU plan (interpreter or
    stand-in) leaves the record empty, and ``_launch`` without a slot goes through ``kern[grid]``."""
    from atrex_nvidia.triton_warm import WarmRecord
    monkeypatch.setattr(L, "_COMPILED", {})
    monkeypatch.setattr(L, "WARM", WarmRecord())  # (the fake call's keys stay out of the process's record)
    calls = []

    class Kern:
        __name__ = "k"

        def __getitem__(self, grid):
            return lambda *a, **kw: calls.append((grid, a, kw))

    L._launch(Kern(), (3,), (1, 2), dict(X=4, num_warps=4))
    assert calls == [((3,), (1, 2), dict(X=4, num_warps=4))] and L._COMPILED == {}
    L._launch_all(torch.device("cpu"), [(Kern(), (1,), (5,), {})], None, None, sig=("cpu-sig",))
    assert len(calls) == 2 and L._COMPILED == {}



def test_rc_qside_moves_the_q_side_into_gl_rc(plan, monkeypatch):
    """GL_RC_QSIDE (round 24): where the state pass is gl_rc and q, k are L2-normalised in the kernel, the intra kernel
    takes QSIDE (no q read, no q copy, no Aqk) and gl_rc takes QSIDE (raw q as its q operand, FAST_EXP as the intra
    kernel's decay tile); its Aqk operand is then the A workspace (never read). Not where the state pass is another
    kernel (few programs: gl_ws), without in-kernel L2 norm, with FOLD_QK_NORM, or with the knob off. (One chain per
    CTA: GL_RC_TWO_CHAINS off; gl_ws's own GL_WS_QSIDE off.)"""
    monkeypatch.setattr(L, "GL_RC_TWO_CHAINS", False)
    monkeypatch.setattr(L, "GL_WS_QSIDE", False)
    cu = [64 * 4 * i for i in range(17)]  # 16 sequences x 32 heads: gl_rc
    monkeypatch.setattr(L, "GL_RC_QSIDE", True)
    seen = plan(T=cu[-1], H=32, HV=32, cu_seqlens=cu)
    (iname, _, iargs, imeta), (sname, _, sargs, smeta) = seen["launches"][-2:]
    if not L._gluon_ws_supported():  # (no gl_rc under this Triton: nothing moves)
        assert sname == V2 and "QSIDE" not in imeta
        return
    assert iname == "atrex_sm90_gdn_intra_chunk_v3" and imeta["QSIDE"] is True and imeta["STORE_QKN"] is True
    assert sname == GL_RC and smeta["QSIDE"] is True and smeta["FAST_EXP"] is bool(L.INTRA_V3_FAST_EXP)
    q_raw, A, Aqk_i, qn_i, kn_i = iargs[0], iargs[4], iargs[5], iargs[8], iargs[9]
    assert Aqk_i is A and qn_i is q_raw and kn_i is not iargs[1]  # no Aqk, no q copy; k's copy is written
    assert sargs[0] is q_raw and sargs[1] is kn_i and sargs[3] is A and sargs[4] is A  # (qd, kd, vd, ad, aqd)
    off = dict(GL_RC_QSIDE=False), dict(l2norm=False), dict(FOLD_QK_NORM=True)
    for knob in off:
        with monkeypatch.context() as m:
            for a, val in knob.items():
                if a != "l2norm":
                    m.setattr(L, a, val)
            seen = plan(T=cu[-1], H=32, HV=32, cu_seqlens=cu, l2norm=knob.get("l2norm", True))
            assert all("QSIDE" not in meta for *_, meta in seen["all"]), knob
    seen = plan(T=8192 // 32, H=16, HV=32)  # few programs: gl_ws
    assert state_kernel(seen) == FEW and all("QSIDE" not in meta for *_, meta in seen["all"])


def test_ws_qside_moves_the_q_side_into_gl_ws(plan, monkeypatch):
    """GL_WS_QSIDE (round 25): where the state pass is gl_ws (few programs) with its factor rows in the load slots and
    q, k are L2-normalised in the kernel, the intra kernel takes QSIDE and gl_ws takes QSIDE (raw q as its q operand,
    FAST_EXP as the intra kernel's decay tile, GL_WS_QSIDE_OUT_REGS output registers, GL_WS_OUT2_REGS with GL_WS_OUT2);
    its Aqk operand is then the A workspace (never read). Not where the state pass is gl_rc (many programs), without
    in-kernel L2 norm, without GL_WS_FAC_SMEM, with FOLD_QK_NORM, or with the knob off; gl_rc's own QSIDE is
    independent of it."""
    monkeypatch.setattr(L, "GL_WS_QSIDE", True)
    monkeypatch.setattr(L, "GL_RC_TWO_CHAINS", False)  # (gl_rc with one chain per CTA: its QSIDE launch is planned)
    seen = plan(T=8192 // 32, H=16, HV=32)  # few programs: gl_ws
    (iname, _, iargs, imeta), (sname, _, sargs, smeta) = seen["launches"][-2:]
    if FEW != GL_WS:  # (no gl_ws under this Triton: nothing moves)
        assert "QSIDE" not in imeta and "QSIDE" not in smeta
        return
    assert iname == "atrex_sm90_gdn_intra_chunk_v3" and imeta["QSIDE"] is True and imeta["GS"] == 2
    assert sname == GL_WS and smeta["QSIDE"] is True and smeta["FAC_SMEM"] is True
    assert smeta["FAST_EXP"] is bool(L.INTRA_V3_FAST_EXP) and smeta["OUT_REGS"] == _ws_out_regs()
    q_raw, A, Aqk_i, qn_i, kn_i = iargs[0], iargs[4], iargs[5], iargs[8], iargs[9]
    assert Aqk_i is A and qn_i is q_raw and kn_i is not iargs[1]  # no Aqk, no q copy; k's copy is written
    assert sargs[0] is q_raw and sargs[1] is kn_i and sargs[3] is A and sargs[4] is A  # (qd, kd, vd, ad, aqd)
    for knob in (dict(GL_WS_QSIDE=False), dict(l2norm=False), dict(GL_WS_FAC_SMEM=False), dict(FOLD_QK_NORM=True),
                 dict(STATE_IMPL="tma")):
        with monkeypatch.context() as m:
            for a, val in knob.items():
                if a != "l2norm":
                    m.setattr(L, a, val)
            seen = plan(T=8192 // 32, H=16, HV=32, l2norm=knob.get("l2norm", True))
            assert all("QSIDE" not in meta for *_, meta in seen["all"]), knob
    # many programs: gl_rc, whose QSIDE follows GL_RC_QSIDE alone
    cu = [64 * 4 * i for i in range(17)]
    for rc_knob in (False, True):
        with monkeypatch.context() as m:
            m.setattr(L, "GL_RC_QSIDE", rc_knob)
            seen = plan(T=cu[-1], H=32, HV=32, cu_seqlens=cu)
            assert state_kernel(seen) == GL_RC
            assert all(bool(meta.get("QSIDE")) is rc_knob for *_, meta in seen["launches"][-2:])
    # gl_ws forced for varlen, 32 and 64 columns (few and many programs): QSIDE too
    for n_seq, bv in ((16, 32), (34, 64)):
        cu = [64 * 4 * i for i in range(n_seq + 1)]
        with monkeypatch.context() as m:
            m.setattr(L, "STATE_IMPL", "gl_ws")
            seen = plan(T=cu[-1], H=32, HV=32, cu_seqlens=cu)
            (_, _, _, imeta), (sname, _, _, smeta) = seen["launches"][-2:]
            assert sname == GL_WS and smeta["BV"] == bv and imeta["QSIDE"] is True and smeta["QSIDE"] is True


def test_rc_qreg_is_a_gl_rc_qside_option(plan, monkeypatch):
    """GL_RC_QREG (round 25) adds QREG to gl_rc's QSIDE launch only: not without QSIDE, not to any other kernel (gl_rc
    with one chain per CTA: GL_RC_TWO_CHAINS off)."""
    monkeypatch.setattr(L, "GL_RC_TWO_CHAINS", False)
    cu = [64 * 4 * i for i in range(17)]
    monkeypatch.setattr(L, "GL_RC_QREG", True)
    for rc_knob in (False, True):
        with monkeypatch.context() as m:
            m.setattr(L, "GL_RC_QSIDE", rc_knob)
            seen = plan(T=cu[-1], H=32, HV=32, cu_seqlens=cu)
            if not L._gluon_ws_supported():
                assert all("QREG" not in meta for *_, meta in seen["all"])
                return
            want = [GL_RC] if rc_knob else []
            assert [n for n, *_, meta in seen["all"] if meta.get("QREG")] == want
    seen = plan(T=8192 // 32, H=16, HV=32)
    assert all("QREG" not in meta for *_, meta in seen["all"])


def test_rc_round26_options_ride_on_gl_rc_qside(plan, monkeypatch):
    """Round 26: GL_RC_QSCALE and GL_RC_EARLY_FREE join QREG on gl_rc's QSIDE launch; GL_RC_OUT_TMA goes with QSIDE
    (its shared-memory tile takes the Aqk ring's place) where T > 1. No other kernel, and no launch without QSIDE,
    takes any of them; each knob off removes its option. (gl_rc with one chain per CTA: GL_RC_TWO_CHAINS off; gl_ws's
    own round-26 q side, GL_WS_QSIDE, off.)"""
    monkeypatch.setattr(L, "GL_WS_QSIDE", False)
    cu = [64 * 4 * i for i in range(17)]
    opts = ("QSCALE", "EARLY_FREE", "OUT_TMA")
    assert (L.GL_RC_QSCALE, L.GL_RC_EARLY_FREE, L.GL_RC_OUT_TMA) == (True, True, True)  # (the defaults since r91)
    monkeypatch.setattr(L, "GL_RC_TWO_CHAINS", False)

    def rc_meta(**kw):
        seen = plan(**kw)
        assert all(o not in meta for n, *_, meta in seen["all"] if n != GL_RC for o in opts)
        return next((meta for n, *_, meta in seen["all"] if n == GL_RC), None)
    m = rc_meta(T=cu[-1], H=32, HV=32, cu_seqlens=cu)
    if not L._gluon_ws_supported():  # (no gl_rc under this Triton)
        assert m is None
        return
    assert (m["QSCALE"], m["EARLY_FREE"], m["OUT_TMA"]) == (True, True, True) and "LATE_FAC" not in m
    with monkeypatch.context() as mp:  # (GL_RC_LATE_FACTORS: gl_rc's chain, with or without QSIDE)
        mp.setattr(L, "GL_RC_LATE_FACTORS", True)
        assert rc_meta(T=cu[-1], H=32, HV=32, cu_seqlens=cu)["LATE_FAC"] is True
        mp.setattr(L, "GL_RC_QSIDE", False)
        assert rc_meta(T=cu[-1], H=32, HV=32, cu_seqlens=cu)["LATE_FAC"] is True
    with monkeypatch.context() as mp:
        mp.setattr(L, "GL_RC_QREG", False)
        m = rc_meta(T=cu[-1], H=32, HV=32, cu_seqlens=cu)
        assert "QSCALE" not in m and "EARLY_FREE" not in m and m["OUT_TMA"] is True
    with monkeypatch.context() as mp:
        mp.setattr(L, "GL_RC_QSIDE", False)
        m = rc_meta(T=cu[-1], H=32, HV=32, cu_seqlens=cu)
        assert not any(o in m for o in opts)
    with monkeypatch.context() as mp:
        for name in ("GL_RC_QSCALE", "GL_RC_EARLY_FREE", "GL_RC_OUT_TMA"):
            mp.setattr(L, name, False)
        m = rc_meta(T=cu[-1], H=32, HV=32, cu_seqlens=cu)
        assert (m["QSCALE"], m["EARLY_FREE"], "OUT_TMA" in m) == (False, False, False)
    m = rc_meta(T=cu[-1], H=32, HV=32, cu_seqlens=cu, l2norm=False)  # (no QSIDE without the in-kernel norm)
    assert not any(o in m for o in opts)
    with monkeypatch.context() as mp:
        mp.setattr(L, "STATE_IMPL", "gl_rc")
        assert rc_meta(T=256, B=2, H=16, HV=32)["OUT_TMA"] is True
    assert rc_meta(T=8192 // 32, H=16, HV=32) is None  # (few programs: gl_ws)


def test_ws_qscale_is_a_gl_ws_qside_option(plan, monkeypatch):
    """GL_WS_QSCALE (round 26) adds QSCALE to gl_ws's QSIDE launch only (and QNORM_MMA with GL_WS_QNORM_MMA, bf16;
    gl_rc's GL_RC_QNORM_MMA does not reach gl_ws, round 27); not without GL_WS_QSIDE, not to gl_rc or any other
    kernel."""
    monkeypatch.setattr(L, "GL_WS_QSCALE", True)
    monkeypatch.setattr(L, "GL_WS_QNORM_MMA", True)

    def metas(**kw):
        return [(n, meta) for n, *_, meta in plan(**kw)["all"]]
    for ws_knob in (False, True):
        with monkeypatch.context() as m:
            m.setattr(L, "GL_WS_QSIDE", ws_knob)
            got = metas(T=8192 // 32, H=16, HV=32)
            if not L._gluon_ws_supported():
                assert all("QSCALE" not in meta for _, meta in got)
                return
            assert [(n, meta.get("QNORM_MMA")) for n, meta in got if meta.get("QSCALE")] == (
                [(GL_WS, True)] if ws_knob else [])
    with monkeypatch.context() as m:
        m.setattr(L, "GL_WS_QSIDE", True)
        got = metas(T=8192 // 32, H=16, HV=32, dtype=torch.float16)
        assert [(n, "QNORM_MMA" in meta) for n, meta in got if meta.get("QSCALE")] == [(GL_WS, False)]
        m.setattr(L, "GL_WS_QNORM_MMA", False)
        m.setattr(L, "GL_RC_QNORM_MMA", True)
        got = metas(T=8192 // 32, H=16, HV=32)
        assert [(n, "QNORM_MMA" in meta) for n, meta in got if meta.get("QSCALE")] == [(GL_WS, False)]
    cu = [64 * 4 * i for i in range(17)]  # (gl_rc: its own knobs, not GL_WS_QSCALE)
    assert all("QSCALE" not in meta or n == GL_RC for n, meta in metas(T=cu[-1], H=32, HV=32, cu_seqlens=cu))


def test_ws_out2_is_a_gl_ws_option(plan, monkeypatch):
    """GL_WS_OUT2 (round 32; on since r114) adds OUT2 to gl_ws's launch (with or without the QSIDE output partition;
    with it, each output partition gets GL_WS_OUT2_REGS registers), needs GL_WS_FAC_SMEM and is not taken with
    GL_WS_QNORM_MMA's tensor-core norms; no other kernel gets it. Off: the round-31 launch."""
    def ws_metas(**kw):
        return [meta for n, *_, meta in plan(**kw)["all"] if n == GL_WS]
    assert L.GL_WS_OUT2 is True
    with monkeypatch.context() as m:
        m.setattr(L, "GL_WS_OUT2", False)
        got = ws_metas(T=8192 // 32, H=16, HV=32)
        assert all("OUT2" not in x for x in got)
        assert [x["OUT_REGS"] for x in got] == ([L.GL_WS_QSIDE_OUT_REGS] if got else [])
    got = ws_metas(T=8192 // 32, H=16, HV=32)
    if not L._gluon_ws_supported():
        assert got == []
        return
    assert [(x.get("OUT2"), x.get("QSIDE"), x["OUT_REGS"]) for x in got] == [(True, True, L.GL_WS_OUT2_REGS)]
    with monkeypatch.context() as m:
        m.setattr(L, "GL_WS_QSIDE", False)
        assert [(x.get("OUT2"), x.get("QSIDE", False), x["OUT_REGS"]) for x in ws_metas(T=8192 // 32, H=16, HV=32)] == [
            (True, False, L.GL_WS_OUT_REGS - 16)]
        m.setattr(L, "GL_WS_FAC_SMEM", False)
        assert [x.get("OUT2", False) for x in ws_metas(T=8192 // 32, H=16, HV=32)] == [False]
    with monkeypatch.context() as m:
        m.setattr(L, "GL_WS_QNORM_MMA", True)
        assert [x.get("OUT2", False) for x in ws_metas(T=8192 // 32, H=16, HV=32)] == [False]
    cu = [64 * 4 * i for i in range(17)]  # (many programs: gl_rc2, which has no OUT2)
    assert all("OUT2" not in meta for n, *_, meta in plan(T=cu[-1], H=32, HV=32, cu_seqlens=cu)["all"])


def test_rc_two_chains_takes_whole_heads_where_gl_rc_has_qside_and_v128(plan, monkeypatch):
    """GL_RC_TWO_CHAINS (round 26; "auto"'s default since r91) replaces gl_rc by gl_rc2 where gl_rc has QSIDE and
    V = 128: one item per (sequence, value head), a persistent grid of at most one CTA per SM, 2 load stages, the chain
    and output register counts of its knobs; not without QSIDE, not at V = 64, not for gl_ws. STATE_IMPL "gl_rc"
    forces the one-chain kernel, "gl_rc2" the two-chain one where it applies (gl_rc elsewhere)."""
    assert L.GL_RC_TWO_CHAINS is True
    cu = [64 * 4 * i for i in range(17)]

    def state(**kw):
        return next(x for x in plan(**kw)["launches"] if "state_output" in x[0])
    name, grid, _a, meta = state(T=cu[-1], H=32, HV=32, cu_seqlens=cu)
    if not L._gluon_ws_supported():
        assert name == V2
        return
    assert name == GL_RC2 and grid == (min(16 * 32, 132),) and meta["STAGES"] == 2
    assert (meta["CHAIN_REGS"], meta["OUT_REGS"]) == (L.GL_RC2_CHAIN_REGS, L.GL_RC2_OUT_REGS) and "QSIDE" not in meta
    assert state(T=cu[-1], H=32, HV=32, K=64, cu_seqlens=cu)[0] == GL_RC  # (V = 64: one V block)
    with monkeypatch.context() as m:
        m.setattr(L, "GL_RC_QSIDE", False)
        assert state(T=cu[-1], H=32, HV=32, cu_seqlens=cu)[0] == GL_RC
    with monkeypatch.context() as m:
        m.setattr(L, "GL_RC_TWO_CHAINS", False)
        assert state(T=cu[-1], H=32, HV=32, cu_seqlens=cu)[0] == GL_RC
    assert state(T=8192 // 32, H=16, HV=32)[0] == GL_WS
    with monkeypatch.context() as m:
        m.setattr(L, "STATE_IMPL", "gl_rc")
        assert state(T=cu[-1], H=32, HV=32, cu_seqlens=cu)[0] == GL_RC
        m.setattr(L, "STATE_IMPL", "gl_rc2")
        for tc in (False, True):  # (the knob is "auto"'s choice only)
            m.setattr(L, "GL_RC_TWO_CHAINS", tc)
            name, grid, *_ = state(T=256, H=16, HV=32)  # (few programs: forced)
            assert name == GL_RC2 and grid == (32,), (name, grid)
        assert state(T=cu[-1], H=32, HV=32, K=64, cu_seqlens=cu)[0] == GL_RC  # (V = 64: gl_rc)


def test_rc2_only_with_more_items_than_sms(plan, monkeypatch):
    """GL_RC2_ITEMS_PER_SM (round 33): "auto" takes gl_rc2 only where the call has more (sequence, value head) items
    than SMs x the knob; with fewer (Qwen3-Next at TP 2 and 4: 16 and 8 value heads) the many-program state pass is
    gl_rc with one chain per CTA, on a grid of up to one CTA per SM over its twice as many items. The SM count is the
    call's (the dispatcher's ``sm_count``). 0 restores gl_rc2 for every item count; STATE_IMPL "gl_rc2" forces it."""
    if not L._gluon_ws_supported():
        pytest.skip("gl_rc / gl_rc2 are planned where Gluon's warp specialisation is available")
    assert L.GL_RC2_ITEMS_PER_SM == 1

    def state(cu, HV, sm_count=132, H=None):
        launches = plan(T=cu[-1], H=H or HV // 2, HV=HV, cu_seqlens=cu, sm_count=sm_count)["launches"]
        name, grid, _a, meta = next(x for x in launches if "state_output" in x[0])
        return name, grid
    mixed8 = [0, 3500, 5548, 6548, 7325, 7838, 8038, 8101, 8102]  # (r119's serve-tp2-mixed8 lengths)
    assert state(mixed8, 16) == (GL_RC, (132,))  # 8 x 16 = 128 items <= 132 SMs: 256 one-chain items
    assert state(mixed8, 16, sm_count=127) == (GL_RC2, (127,))  # 128 > 127
    assert state([1024 * i for i in range(5)], 16) == (GL_RC, (128,))  # 64 items: 128 one-chain items
    assert state([0, 1, 64, 129, 700, 1000, 1024, 2000, 2100], 32, H=32) == (GL_RC2, (132,))  # 256 items
    assert state([0, 2048, 4096, 6144, 8192], 8) == (GL_WS, (4, 32))  # (4 x 8 x 4 BV-32 programs: few, gl_ws)
    with monkeypatch.context() as m:
        m.setattr(L, "GL_RC2_ITEMS_PER_SM", 0)
        assert state(mixed8, 16) == (GL_RC2, (128,))
    with monkeypatch.context() as m:
        m.setattr(L, "GL_RC2_ITEMS_PER_SM", 2)
        assert state([0, 1, 64, 129, 700, 1000, 1024, 2000, 2100], 32, H=32) == (GL_RC, (132,))  # 256 <= 264
    with monkeypatch.context() as m:
        m.setattr(L, "STATE_IMPL", "gl_rc2")
        assert state(mixed8, 16)[0] == GL_RC2


@pytest.mark.parametrize("kw", [dict(T=8192 // 32, H=4, HV=8), dict(T=1, H=2, HV=4), dict(T=200, H=16, HV=32, K=64)],
                         ids=["tp4_gva", "T1", "K64"])
def test_one_sequence_varlen_plans_the_fixed_length_call(plan, monkeypatch, kw):
    """ONE_SEQUENCE_FIXED (round 33): varlen with one sequence (cu_seqlens = [0, T], which the contract fixes for N = 1)
    plans exactly the fixed-length call's launches (kernels, grids, options): no chunk-offsets or slot-map kernel.
    With the knob off it plans the varlen launches."""
    def launches(**k):
        return [(n, g, meta) for n, g, _a, meta in plan(**kw, **k)["all"]]
    fixed = launches()
    one = launches(cu_seqlens=[0, kw["T"]])
    assert one == fixed and not any("chunk_offsets" in n or "slot_seq" in n for n, *_ in one), one
    assert all(meta.get("IS_VARLEN") in (None, False) for *_, meta in one)
    with monkeypatch.context() as m:
        m.setattr(L, "ONE_SEQUENCE_FIXED", False)
        varlen = launches(cu_seqlens=[0, kw["T"]])
    assert varlen[0][0] == "atrex_sm90_gdn_chunk_offsets" and any(meta.get("IS_VARLEN") for *_, meta in varlen)
    if kw["T"] > 1:  # (two sequences stay varlen)
        assert launches(cu_seqlens=[0, 1, kw["T"]])[0][0] == "atrex_sm90_gdn_chunk_offsets"


@pytest.mark.parametrize("knob,opt", [("GL_RC_L2_PREFETCH", "L2PF"), ("GL_RC_HT_REMAT", "HT_REMAT")])
def test_rc_round27_options_are_gl_rc_options(plan, monkeypatch, knob, opt):
    """GL_RC_L2_PREFETCH and GL_RC_HT_REMAT (round 27; HT_REMAT on since r98) add L2PF / HT_REMAT to the gl_rc2 and gl_rc launches (with
    and without QSIDE), to no other kernel; off, no launch has them."""
    cu = [64 * 4 * i for i in range(17)]

    def l2pf(**kw):
        return [n for n, *_, meta in plan(**kw)["all"] if meta.get(opt)]
    monkeypatch.setattr(L, knob, False)
    assert l2pf(T=cu[-1], H=32, HV=32, cu_seqlens=cu) == []
    monkeypatch.setattr(L, knob, True)
    if not L._gluon_ws_supported():
        assert l2pf(T=cu[-1], H=32, HV=32, cu_seqlens=cu) == []
        return
    assert l2pf(T=cu[-1], H=32, HV=32, cu_seqlens=cu) == [GL_RC2]
    with monkeypatch.context() as m:
        m.setattr(L, "GL_RC_TWO_CHAINS", False)
        assert l2pf(T=cu[-1], H=32, HV=32, cu_seqlens=cu) == [GL_RC]
        m.setattr(L, "GL_RC_QSIDE", False)
        assert l2pf(T=cu[-1], H=32, HV=32, cu_seqlens=cu) == [GL_RC]
    assert l2pf(T=8192 // 32, H=16, HV=32) == []  # (few programs: gl_ws)


def test_h0_prefetch_is_a_gl_rc_option_for_calls_with_a_unit_stride_initial_state(plan, monkeypatch):
    """GL_RC_H0_PREFETCH (round 29; 1 since round 30): H0PF = the knob on the gl_rc2 and gl_rc launches of calls
    with an initial state, with H0_KC true exactly where h0's k stride is 1 (the state_v_first layout, or a k-first
    tensor that is transposed in memory); no option where the call has no initial state, where neither h0 stride is
    1, on gl_ws launches, or with the knob off."""
    cu = [64 * 4 * i for i in range(17)]
    n, T = len(cu) - 1, cu[-1]

    def h0pf(**kw):
        return [(name, meta.get("H0PF"), meta.get("H0_KC")) for name, *_, meta in plan(**kw)["all"]
                if "H0PF" in meta or "H0_KC" in meta]
    kfirst = torch.zeros(n, 32, 128, 128)
    vfirst = torch.zeros(n, 32, 128, 128)
    assert L.GL_RC_H0_PREFETCH == 1  # (on since round 30)
    with monkeypatch.context() as m:
        m.setattr(L, "GL_RC_H0_PREFETCH", 0)
        assert h0pf(T=T, H=32, HV=32, cu_seqlens=cu, initial_state=vfirst, state_v_first=True) == []
    if L._gluon_ws_supported():
        assert h0pf(T=T, H=32, HV=32, cu_seqlens=cu, initial_state=vfirst, state_v_first=True) == [(GL_RC2, 1, True)]
    monkeypatch.setattr(L, "GL_RC_H0_PREFETCH", 2)
    if not L._gluon_ws_supported():
        assert h0pf(T=T, H=32, HV=32, cu_seqlens=cu, initial_state=vfirst, state_v_first=True) == []
        return
    assert h0pf(T=T, H=32, HV=32, cu_seqlens=cu) == []  # (no initial state)
    assert h0pf(T=T, H=32, HV=32, cu_seqlens=cu, initial_state=vfirst, state_v_first=True) == [(GL_RC2, 2, True)]
    assert h0pf(T=T, H=32, HV=32, cu_seqlens=cu, initial_state=kfirst) == [(GL_RC2, 2, False)]
    # a k-first state stored transposed (k stride 1), and one with neither stride 1 (every other element)
    assert h0pf(T=T, H=32, HV=32, cu_seqlens=cu, initial_state=vfirst.transpose(-1, -2)) == [(GL_RC2, 2, True)]
    wide = torch.zeros(n, 32, 128, 256)[..., ::2]
    assert h0pf(T=T, H=32, HV=32, cu_seqlens=cu, initial_state=wide) == []
    with monkeypatch.context() as m:
        m.setattr(L, "GL_RC_TWO_CHAINS", False)
        m.setattr(L, "GL_RC_H0_PREFETCH", 1)
        assert h0pf(T=T, H=32, HV=32, cu_seqlens=cu, initial_state=kfirst) == [(GL_RC, 1, False)]
    assert h0pf(T=8192 // 32, H=16, HV=32, initial_state=torch.zeros(1, 32, 128, 128)) == []  # (few programs: gl_ws)


def test_qside_maxnreg_caps_one_head_qside_intra_programs_only(plan, monkeypatch):
    """INTRA_V3_QSIDE_MAXNREG (round 25) sets the register cap of the v3 launch where it has QSIDE and one value head
    per program (varlen H = HV); two-head QSIDE programs (GVA, gl_rc forced) and programs without QSIDE keep theirs."""
    monkeypatch.setattr(L, "INTRA_V3_QSIDE_MAXNREG", 128)
    cu = [64 * 4 * i for i in range(17)]

    def intra_meta(**kw):
        return next(m for n, _g, _a, m in plan(**kw)["launches"] if n == "atrex_sm90_gdn_intra_chunk_v3")
    m = intra_meta(T=cu[-1], H=32, HV=32, cu_seqlens=cu)
    if not L._gluon_ws_supported():  # (no gl_rc, no QSIDE under this Triton)
        assert "QSIDE" not in m and m["maxnreg"] == L.INTRA_V3_MAXNREG
        return
    assert m["QSIDE"] is True and "GS" not in m and m["maxnreg"] == 128
    with monkeypatch.context() as mp:
        mp.setattr(L, "GL_RC_QSIDE", False)
        assert intra_meta(T=cu[-1], H=32, HV=32, cu_seqlens=cu)["maxnreg"] == L.INTRA_V3_MAXNREG
    with monkeypatch.context() as mp:
        mp.setattr(L, "STATE_IMPL", "gl_rc")
        m = intra_meta(T=256, H=16, HV=32)
        assert m["QSIDE"] is True and m["GS"] == 2 and m["maxnreg"] == L.INTRA_V3_MAXNREG
    assert intra_meta(T=cu[-1], H=32, HV=32, cu_seqlens=cu, l2norm=False)["maxnreg"] == L.INTRA_V3_MAXNREG


def test_pdl_marks_the_listed_kernels_of_gl_rc_plans_only(plan, monkeypatch):
    """PDL (round 28, on since r98): where the call's state pass is gl_rc2 or gl_rc, each launch of a kernel in
    ``_PDL_KERNELS`` gets its PDL constexpr and Triton's ``launch_pdl`` option (the varlen plan, chunk offsets to state
    pass, is PDL from end to end); a plan whose state pass is another kernel (gl_ws for few programs, state v2) has no
    PDL launch at all (r98: slower with gl_ws); under Triton's interpreter, or with the knob off, no launch has them."""
    cu = [64 * 4 * i for i in range(17)]

    def marked(**kw):
        return [(n, bool(meta.get("PDL")), bool(meta.get("launch_pdl"))) for n, *_, meta in plan(**kw)["all"]]
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    assert L.PDL is True
    for kw in (dict(T=cu[-1], H=32, HV=32, cu_seqlens=cu), dict(T=cu[-1], H=32, HV=32, K=64, cu_seqlens=cu)):
        got = marked(**kw)
        assert all(p == lp == (n in L._PDL_KERNELS) for n, p, lp in got), (kw, got)
        if L._gluon_ws_supported():
            assert got[-1][0] in L._PDL_STATE_KERNELS and all(p for _n, p, _lp in got), (kw, got)
    assert all(not p and not lp for _n, p, lp in marked(T=8192 // 32, H=16, HV=32))  # (few programs: gl_ws)
    with monkeypatch.context() as m:
        m.setattr(L, "STATE_IMPL", "v2")
        got = marked(T=cu[-1], H=32, HV=32, cu_seqlens=cu)
        assert got[-1][0] == V2 and all(not p and not lp for _n, p, lp in got), got
        m.setattr(L, "STATE_IMPL", "gl_rc")
        if L._gluon_ws_supported():
            assert all(p for _n, p, _lp in marked(T=8192 // 32, H=16, HV=32))  # (gl_rc forced: PDL)
    with monkeypatch.context() as m:
        m.setattr(L, "PDL", False)
        assert all(not p and not lp for _n, p, lp in marked(T=cu[-1], H=32, HV=32, cu_seqlens=cu))
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    assert all(not p for _n, p, _lp in marked(T=cu[-1], H=32, HV=32, cu_seqlens=cu))


def test_gates_book_drops_the_bookkeeping_launches(plan, monkeypatch):
    """INTRA_GATES_BOOK (round 28, off): where a varlen call launches the gates kernel with the sequence map, that
    launch takes BOOK and the chunk-offsets and slot-map launches are dropped (the intra launch still reads the map
    and offsets from the same buffer); not for fixed-length calls, the packed map or without the gates kernel."""
    cu = [64 * 4 * i for i in range(17)]
    bookkeeping = {"atrex_sm90_gdn_chunk_offsets", "atrex_sm90_gdn_slot_seq"}

    def names(**kw):
        return [(n, bool(meta.get("BOOK"))) for n, *_, meta in plan(**kw)["all"]]
    assert L.INTRA_GATES_BOOK is False
    off = names(T=cu[-1], H=32, HV=32, cu_seqlens=cu)
    assert bookkeeping <= {n for n, _ in off} and not any(b for _n, b in off), off
    monkeypatch.setattr(L, "INTRA_GATES_BOOK", True)
    on = plan(T=cu[-1], H=32, HV=32, cu_seqlens=cu)["all"]
    got = [(n, bool(meta.get("BOOK"))) for n, *_, meta in on]
    assert not bookkeeping & {n for n, _ in got} and ("atrex_sm90_gdn_gates", True) in got, got
    gates = next(x for x in on if x[0] == "atrex_sm90_gdn_gates")
    intra = next(x for x in on if x[0] == "atrex_sm90_gdn_intra_chunk_v3")
    assert gates[2][3] is intra[2][11] and intra[3]["SLOT_MAP"] is True  # (co: written by gates, read by intra)
    assert not any(b for _n, b in names(T=8192 // 32, H=16, HV=32))  # (fixed length)
    with monkeypatch.context() as m:
        m.setattr(L, "INTRA_SLOT_MAP", "packed")
        got = names(T=cu[-1], H=32, HV=32, cu_seqlens=cu)
        assert bookkeeping <= {n for n, _ in got} and not any(b for _n, b in got), got
        m.setattr(L, "INTRA_SLOT_MAP", True)
        m.setattr(L, "INTRA_V3_GATES", False)
        got = names(T=cu[-1], H=32, HV=32, cu_seqlens=cu)
        assert bookkeeping <= {n for n, _ in got} and "atrex_sm90_gdn_gates" not in {n for n, _ in got}, got


SEGMENTS = "atrex_sm90_gdn_state_segments_gl"
SCAN = "atrex_sm90_gdn_segment_scan"


@pytest.mark.skipif(not L._gluon_ws_supported(), reason="the segment pass is a Gluon kernel")
@pytest.mark.parametrize("kw,nseg,lseg", [
    (dict(T=8192, H=4, HV=8), 4, 2048),                       # Qwen3-Next at TP 4, an 8k prompt: 32 blocks of 32
    (dict(T=5000, H=4, HV=8, initial_state=torch.zeros(1, 8, 128, 128)), 4, 1280),  # a partial last segment
    (dict(T=16384, H=2, HV=4), 8, 2048),                      # TP 8: 16 blocks
    (dict(T=5000, H=2, HV=4), 5, 1024),                       # ... fewer: SEQ_PAR_MIN_CHUNKS chunks a segment
    (dict(T=100000, H=1, HV=1), 16, 6272),                    # capped at SEQ_PAR_MAX_SEGS
    (dict(T=4096, H=4, HV=8), 4, 1024),                       # the shortest at TP 4
])
def test_seq_parallel_plans_segments_for_few_heads(plan, kw, nseg, lseg):
    """SEQ_PARALLEL (round 34): a fixed-length B = 1 call whose HV x V / 32 state blocks fill at most a quarter of the
    SMs plans intra, the segment pass over (V + K) / 32 column blocks of every segment and head, the composition, and
    gl_ws over the segments as sequences (varlen, from the composed states in its initial-state slot, no final-state
    store); the segment bounds are written by the segment pass into the state pass's cu_seqlens."""
    seen = plan(**kw)
    names = [n for n, *_ in seen["launches"]]
    assert names == ["atrex_sm90_gdn_intra_chunk_v3", SEGMENTS, SCAN, GL_WS], names
    (_, sg, sa, sm), (_, cg, ca, cm), (_, wg, wa, wm) = seen["launches"][1:]
    HV, T = kw["HV"], kw["T"]
    bv, bvs = L.SEQ_PAR_BV, L.SEQ_PAR_SCAN_BV
    assert sa[6:10] == (T, lseg, nseg, nseg) and sg == (256 // bv, nseg * HV) and sm["BV"] == bv  # (NA = NSEG)
    assert cg == (128 // bvs, HV) and ca[4:6] == (nseg, nseg) and cm["STORE_HT"]
    assert wm["IS_VARLEN"] and wm["USE_H0"] and not wm["STORE_HT"] and wg == (4, nseg * HV)
    assert wa[9] is sa[5] and tuple(wa[6].shape) == (nseg, HV, 128, 128) and wa[6] is ca[2]  # (cu_seqlens, h0)
    assert wa[-1] == nseg * HV


@pytest.mark.skipif(not L._gluon_ws_supported(), reason="the segment pass is a Gluon kernel")
def test_seq_parallel_only_where_it_applies(plan, monkeypatch):
    """Not for: the goal shapes' 32 value heads (128 blocks already), B = 2, two varlen sequences, fewer than
    SEQ_PAR_MIN_SEGS segments of SEQ_PAR_MIN_CHUNKS chunks (T = 3072 at TP 4, where 3073 takes it; or 64 SMs),
    K = 256, another architecture, the knob off. One varlen sequence takes it (ONE_SEQUENCE_FIXED)."""
    def segmented(**kw):
        return SEGMENTS in [n for n, *_ in plan(**kw)["launches"]]
    assert segmented(T=8192, H=4, HV=8) and segmented(T=8192, H=4, HV=8, cu_seqlens=[0, 8192])
    assert not segmented(T=8192, H=16, HV=32)
    assert not segmented(T=4096, B=2, H=4, HV=8)
    assert not segmented(T=8192, H=4, HV=8, cu_seqlens=[0, 4096, 8192])
    assert segmented(T=3073, H=4, HV=8) and not segmented(T=3072, H=4, HV=8) and not segmented(T=8192, H=4, HV=8, sm_count=64)
    assert not segmented(T=8192, H=1, HV=2, K=256)
    # off sm90 (sm100 / sm103 / sm120 run the same launcher without wgmma's Gluon kernels): never
    assert L._seq_segments(1, 8192, 8, 128, 128, 128, 132, True, True) == (4, 2048)
    assert L._seq_segments(1, 8192, 8, 128, 128, 128, 132, True, False) is None
    monkeypatch.setattr(L, "SEQ_PARALLEL", False)
    assert not segmented(T=8192, H=4, HV=8)


@pytest.mark.skipif(not L._gluon_ws_supported(), reason="the segment pass is a Gluon kernel")
def test_seq_parallel_without_final_state_stops_a_segment_earlier(monkeypatch):
    """Without output_final_state the segment pass skips each sequence's last segment (NA = NSEG - 1) and the
    composition stores no final state."""
    seen = {}
    monkeypatch.setattr(L, "_launch_all", lambda dev, launches, o, ht, *a, **k: seen.update(l=launches) or (o, ht))
    gen = torch.Generator().manual_seed(0)
    q, k = (torch.randn(1, 8192, 4, 128, generator=gen).bfloat16() for _ in range(2))
    v = torch.randn(1, 8192, 8, 128, generator=gen).bfloat16()
    g, beta = -torch.rand(1, 8192, 8, generator=gen), torch.rand(1, 8192, 8, generator=gen).bfloat16()
    o, ht = L.gdn_fwd(q, k, v, g, beta, scale=0.1, initial_state=None, output_final_state=False,
                      use_qk_l2norm_in_kernel=True, state_v_first=False, cu_seqlens=None, sm_count=132)
    assert ht is None
    (sk, sg, sa, _), (ck, cg, ca, cm) = seen["l"][1:3]
    assert sk.__name__ == SEGMENTS and sa[8:10] == (4, 3) and sg == (256 // L.SEQ_PAR_BV, 3 * 8)
    assert ck.__name__ == SCAN and ca[4:6] == (4, 3) and not cm["STORE_HT"]


def test_item_schedule_plan(plan, monkeypatch):
    """GL_RC_SCHEDULE (round 36, off until measured): a persistent varlen gl_rc / gl_rc2 call of 2 to
    GL_RC_SCHED_MAX_ROUNDS rounds of items gets ``atrex_sm90_gdn_item_schedule`` (one program, from cu_seqlens on the
    device) second in the call, right after the chunk offsets (round 37; round 36 had it right before the state
    kernel), and the state kernel reads its order (``SCHED``, its last argument). Not with one round
    of items (a CTA each), the next-item initial-state prefetch, more sequences than GL_RC_SCHED_MAX_SEQS, or a
    fixed-length call; the schedule kernel takes PDL with the state kernel."""
    if not L._gluon_ws_supported():
        pytest.skip("gl_rc / gl_rc2 are planned where Gluon's warp specialisation is available")
    assert L.GL_RC_SCHEDULE is False
    monkeypatch.setattr(L, "GL_RC_SCHEDULE", True)
    SCHED = "atrex_sm90_gdn_item_schedule"

    def launches(cu, HV, H=None, sm_count=132, **kw):
        return plan(T=cu[-1], H=H or HV // 2, HV=HV, cu_seqlens=cu, sm_count=sm_count, **kw)["launches"]
    mixed8 = [0, 3500, 5548, 6548, 7325, 7838, 8038, 8101, 8102]
    got = launches(mixed8, 16)  # gl_rc: 8 x 16 x 2 = 256 items on 132 CTAs, 2 rounds
    names = [x[0] for x in got]
    assert names[:2] == ["atrex_sm90_gdn_chunk_offsets", SCHED] and names[-1] == GL_RC and names.count(SCHED) == 1
    _, grid, args, meta = got[1]
    assert grid == (1,) and args[2:] == (8, 32, 256, 132, 2) and meta["NB"] == 16 and meta["PB"] == 256
    cu_t, sched = args[0], args[1]
    assert cu_t.tolist() == mixed8 and sched.dtype == torch.int32 and sched.numel() == 256 + 2 * 16 + 3 * 256
    _, _, sargs, smeta = got[-1]
    assert smeta["SCHED"] is True and sargs[-1] is sched and sargs[-2] == 8 * 16
    # gl_rc2 (whole heads): the varlen goal batch, 16 x 32 = 512 items, 4 rounds
    got = launches([1024 * i for i in range(17)], 32, H=32)
    assert [x[0] for x in got][1] == SCHED and got[-1][0] == GL_RC2 and got[1][2][2:] == (16, 32, 512, 132, 4)
    assert got[-1][3]["SCHED"] is True and got[-1][2][-1] is got[1][2][1]
    # one round (a CTA per item: 64 x 2 = 128 <= 132), fixed length, too many rounds or sequences: no schedule
    assert SCHED not in [x[0] for x in launches([1024 * i for i in range(5)], 16)]
    assert SCHED not in [x[0] for x in plan(T=8192, H=16, HV=32, sm_count=132)["launches"]]
    with monkeypatch.context() as m:
        m.setattr(L, "GL_RC_SCHED_MAX_ROUNDS", 3)
        assert SCHED not in [x[0] for x in launches([1024 * i for i in range(17)], 32, H=32)]
        assert SCHED in [x[0] for x in launches(mixed8, 16)]
    with monkeypatch.context() as m:  # (round 37: the state kernel's item table bounds every mode to 16 rounds)
        m.setattr(L, "GL_RC_SCHED_MAX_ROUNDS", 64)
        assert SCHED in [x[0] for x in launches([1024 * i for i in range(17)], 32, H=32, sm_count=32)]  # 16 rounds
        assert SCHED not in [x[0] for x in launches([1024 * i for i in range(17)], 32, H=32, sm_count=31)]  # 17
    with monkeypatch.context() as m:
        m.setattr(L, "GL_RC_SCHED_MAX_SEQS", 7)
        assert SCHED not in [x[0] for x in launches(mixed8, 16)]
    with monkeypatch.context() as m:
        m.setattr(L, "GL_RC_H0_PREFETCH", 2)
        assert SCHED not in [x[0] for x in launches(mixed8, 16, initial_state=torch.zeros(8, 16, 128, 128))]
    assert SCHED in L._PDL_KERNELS
    # with the caller's CPU mirror of cu_seqlens (round 37): not where every sequence has the same chunk count (the
    # order would be round-robin's), still where they differ; the device's cu_seqlens is what the kernel reads
    for cu, HV in (([1024 * i for i in range(17)], 32), ([0, 1000, 2000, 2984, 4000], 32)):  # (16 chunks each)
        assert SCHED in [x[0] for x in launches(cu, HV)]
        assert SCHED not in [x[0] for x in launches(cu, HV, cu_cpu=True)]
    got = launches(mixed8, 16, cu_cpu=True)
    assert got[1][0] == SCHED and got[1][2][0] is got[0][2][0]  # (the kernel reads the device's cu_seqlens)
    # "cta" (round 37): no schedule kernel; the state kernel gets SCHED 2 and an n_items buffer it fills itself, up to
    # 64 sequences and 16 rounds
    with monkeypatch.context() as m:
        m.setattr(L, "GL_RC_SCHEDULE", "cta")
        got = launches(mixed8, 16)
        assert SCHED not in [x[0] for x in got] and got[-1][0] == GL_RC and got[-1][3]["SCHED"] == 2
        assert got[-1][2][-1].dtype == torch.int32 and got[-1][2][-1].numel() == 256
        many = [64 * i for i in range(66)]  # (65 sequences x 2 x 2 items: 2 rounds)
        assert SCHED not in [x[0] for x in launches(many, 4, H=2)]
        assert not launches(many, 4, H=2)[-1][3].get("SCHED")
        assert launches(many[:65], 4, H=2)[-1][3]["SCHED"] == 2
    assert "SNAKE" not in launches(mixed8, 16)[1][3]
    monkeypatch.setattr(L, "GL_RC_SCHEDULE", "snake")
    got = launches(mixed8, 16)
    assert got[1][0] == SCHED and got[-1][0] == GL_RC and got[1][3]["SNAKE"] is True and got[-1][3]["SCHED"] is True
