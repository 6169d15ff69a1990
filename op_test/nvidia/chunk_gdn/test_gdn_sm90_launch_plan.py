"""CPU tier: the launch plan of ``nvidia.gdn_sm90`` (``plan.plan_call``, ``launch.default_plan``,
``launch.gdn_fwd(plan_only=True)``), both sides of each rule.

The plan depends on shapes, strides, dtypes and alignment only, so it is computed on CPU tensors (a CPU tensor
stands in for an SM90 GPU) and nothing is compiled or launched. The expected values below follow from the rule's
thresholds as the plan module states them (132 SMs unless a test says otherwise):

- generic pair unless K and V are multiples of 16 and K <= 128;
- few programs, ``programs * ceil(V / 32) <= 2 * SMs``: BV 32 with 3 stages, the Gluon ``ws`` kernel where the rows
  are TMA-describable and K is 64 or 128, else ``tma`` (describable) or ``triton``;
- Gluon ``rc`` once ``programs * ceil(V / 32) > SMs`` (K 64 / 128, V a multiple of 64, describable), ``rc2`` once
  also ``programs > SMs`` with the in-kernel L2 norm (q side) and V == 128;
- otherwise ``triton`` with BV 32 below ``4 * SMs`` programs and BV 64 from there;
- segments for one fixed-length sequence whose ``HV * V / 32`` blocks fill at most a quarter of the SMs: at most
  16, at least 4 segments of at least 16 chunks.
"""

import dataclasses

import pytest
import torch

pytest.importorskip("triton")

from _gdn_cases import plan_for

from atrex_nvidia.chunk_gdn.sm90 import launch as L
from atrex_nvidia.chunk_gdn.sm90 import plan as P

GLUON = P.gluon_supported()
needs_gluon = pytest.mark.skipif(not GLUON, reason="this Triton has no Gluon warp specialisation")
PDL_KERNELS = {"chunk_offsets", "slot_seq", "gates", "intra_chunk_v3", "state_output_gl_rc", "state_output_gl_rc2"}


def inputs(T=256, B=1, H=2, HV=4, K=128, V=None, dtype=torch.bfloat16, cu=None, q=None, l2norm=True, h0=False,
           state_v_first=False):
    """Fresh (unset) tensors: the plan reads no values."""
    V = V or K
    n = B if cu is None else len(cu) - 1
    e = torch.empty
    return dict(q=e(B, T, H, K, dtype=dtype) if q is None else q, k=e(B, T, H, K, dtype=dtype),
                v=e(B, T, HV, V, dtype=dtype), g=e(B, T, HV), beta=e(B, T, HV, dtype=dtype),
                cu_seqlens=None if cu is None else torch.tensor(cu, dtype=torch.int32), l2norm=l2norm,
                h0=e(n, HV, *((V, K) if state_v_first else (K, V))) if h0 else None, state_v_first=state_v_first)


def planned(sm_count=132, plan=None, final=True, **kw):
    """(plan, [(kernel name without the prefix, grid, args, meta)]) of ``gdn_fwd`` on CPU tensors."""
    x = inputs(**kw)
    p, launches = L.gdn_fwd(x["q"], x["k"], x["v"], x["g"], x["beta"], scale=0.1, initial_state=x["h0"],
                            output_final_state=final, use_qk_l2norm_in_kernel=x["l2norm"],
                            state_v_first=x["state_v_first"], cu_seqlens=x["cu_seqlens"], sm_count=sm_count,
                            plan=plan, plan_only=True)
    return p, [(kern.__name__.replace("atrex_sm90_gdn_", ""), grid, args, meta) for kern, grid, args, meta in launches]


def plan_of(sm_count=132, **kw):
    x = inputs(**kw)
    return L.default_plan(x["q"], x["k"], x["v"], cu_seqlens=x["cu_seqlens"], use_qk_l2norm_in_kernel=x["l2norm"],
                          sm_count=sm_count)


def names(launches):
    return [n for n, *_ in launches]


def varlen(n_seqs, length=256):
    return [length * i for i in range(n_seqs + 1)]


@pytest.fixture
def no_gluon(monkeypatch):
    """An environment without Gluon's Hopper module (a Triton before 3.6)."""
    monkeypatch.setattr(P, "gluon_supported", lambda: False)


@pytest.fixture
def interpreter(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")


# ---- intra kernel: per_head vs generic ----


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("K,V,intra", [
    (128, 128, "per_head"), (64, 32, "per_head"), (16, 32, "per_head"), (48, 80, "per_head"),
    (60, 128, "generic"), (128, 100, "generic"), (144, 128, "generic"), (256, 64, "generic"), (256, 256, "generic"),
])
def test_generic_pair_outside_the_per_head_domain(K, V, intra, dtype):
    p, launches = planned(K=K, V=V, dtype=dtype)
    assert p.intra == intra
    if intra == "generic":
        assert p.state == "generic" and p.heads_per_intra == 1 and not p.qside and not p.pdl
        assert names(launches) == ["intra_chunk", "state_output"]
    else:
        assert p.state != "generic" and names(launches)[0] == "intra_chunk_v3"


def test_generic_pair_block_v_by_program_count():
    """BV 32 below 4 * SMs (sequence, head) programs, 64 from there; 4 warps, 2 stages."""
    assert dataclasses.astuple(plan_of(K=60, V=128, HV=4, H=2))[2:5] == (32, 4, 2)
    assert dataclasses.astuple(plan_of(K=60, V=128, H=2, HV=4, T=64 * 132, cu=varlen(132, 64)))[2:5] == (64, 4, 2)
    assert plan_of(K=60, V=128, H=2, HV=4, T=64 * 131, cu=varlen(131, 64)).block_v == 32  # 524 < 528 programs


@pytest.mark.parametrize("H,HV,gs", [(16, 32, 2), (4, 16, 2), (32, 32, 1), (16, 48, 1), (1, 1, 1), (3, 3, 1), (1, 4, 2)])
def test_value_heads_per_intra_program(H, HV, gs):
    """Two value heads of one q/k head per intra program where HV / H is even; the grid shrinks by as much."""
    p, launches = planned(T=128, H=H, HV=HV)
    intra = next(x for x in launches if x[0] == "intra_chunk_v3")
    assert p.heads_per_intra == gs and intra[1] == (2 * HV // gs,) and intra[3].get("GS", 1) == gs


def test_intra_launch_options():
    """The per-head intra kernel: 168-register cap, fp16 inverse merges only with the in-kernel L2 norm, the fast
    exponential except under the interpreter."""
    _, launches = planned()
    meta = launches[0][3]
    assert meta["maxnreg"] == 168 and meta["INV_FP16"] is True and meta["FAST_EXP"] is True
    assert (meta["num_warps"], meta["num_stages"]) == (4, 2)
    assert "INV_FP16" not in planned(l2norm=False)[1][0][3]


def test_intra_launch_options_under_the_interpreter(interpreter):
    assert "FAST_EXP" not in planned()[1][0][3]


# ---- few programs: ws / tma / triton ----

FEW = dict(T=256, H=16, HV=32, K=128)  # 32 programs x 4 blocks of 32 columns = 128 <= 132 SMs


@needs_gluon
def test_few_programs_take_ws():
    p, launches = planned(**FEW)
    assert (p.state, p.block_v, p.warps, p.stages, p.qside, p.pdl) == ("ws", 32, 4, 3, True, False)
    name, grid, _, meta = launches[-1]
    assert name == "state_output_gl_ws" and grid == (4, 32) and meta["STAGES"] == 3 and meta["QSIDE"] is True
    assert launches[0][3].get("QSIDE") is True  # (the intra kernel forms no Q K^T)


@pytest.mark.parametrize("env", ["no_gluon", "interpreter"])
def test_few_programs_take_tma_without_gluon(env, request):
    request.getfixturevalue(env)
    p, launches = planned(**FEW)
    assert (p.state, p.block_v, p.warps, p.stages, p.qside) == ("tma", 32, 4, 3, False)
    assert names(launches) == ["intra_chunk_v3", "state_output_tma"] and "QSIDE" not in launches[0][3]


@pytest.mark.parametrize("K,state,split_xu", [(16, "tma", True), (32, "tma", True), (64, "ws", False),
                                              (128, "ws", False)])
def test_few_programs_by_k(K, state, split_xu):
    """ws for K in {64, 128}; tma for smaller K, with the X / U products split for K <= 32."""
    if state == "ws" and not GLUON:
        state = "tma"
    p = plan_of(T=256, H=2, HV=4, K=K, V=64)
    assert (p.state, p.split_xu) == (state, split_xu)


@pytest.mark.parametrize("kw", [dict(T=63), dict(K=48), dict(T=256, HV=4, H=2, K=128, V=16)],
                         ids=["fewer_than_64_rows", "k_not_a_power_of_two", "v_under_32"])
def test_few_programs_triton_where_tma_does_not_apply(kw):
    """Fewer than 64 rows, K below its padded width, or a 16-column V block: not TMA-describable (or not the TMA
    configuration): the triton state kernel."""
    p = plan_of(**kw)
    assert p.state == "triton" and not p.qside, p


def _misaligned_q(T=256, H=2, K=128, offset=1):
    base = torch.randn(T * H * K + 8).bfloat16()
    return base[offset:offset + T * H * K].view(1, T, H, K)


def test_few_programs_describability_of_q():
    """Without the in-kernel L2 norm the state kernel reads q itself: a 2-byte offset or a batch stride other than
    T rows is not TMA-describable (triton); aligned (8 elements) it is."""
    ws = "ws" if GLUON else "tma"
    assert plan_of(q=_misaligned_q(offset=8), l2norm=False).state == ws
    assert plan_of(q=_misaligned_q(offset=1), l2norm=False).state == "triton"
    full = torch.randn(2, 512, 2, 128).bfloat16()
    assert plan_of(B=2, q=full[:, :256], l2norm=False).state == "triton"
    assert plan_of(B=2, q=full[:, :256].contiguous(), l2norm=False).state == ws


@needs_gluon
def test_qside_needs_a_describable_q():
    """With the in-kernel L2 norm a misaligned q still runs ws (the intra kernel writes an aligned normalised copy),
    but without the q side."""
    p = plan_of(q=_misaligned_q(offset=1))
    assert (p.state, p.qside) == ("ws", False)
    assert plan_of(q=_misaligned_q(offset=8)).qside


# ---- many programs: rc / rc2 / triton ----


@needs_gluon
@pytest.mark.parametrize("sm_count,state", [(132, "ws"), (128, "ws"), (127, "rc"), (32, "rc"), (31, "rc2")])
def test_rc_and_rc2_by_programs_against_sms(sm_count, state):
    """32 (sequence, head) programs of 4 blocks: rc once the 128 blocks exceed the SMs, rc2 once the 32 programs
    do."""
    p, launches = planned(sm_count=sm_count, **FEW)
    assert p.state == state
    if state == "rc":
        assert (p.block_v, p.warps, p.stages, p.qside, p.out_tma) == (64, 4, 3, True, True)
        assert launches[-1][1] == (min(32 * 2, sm_count),)  # persistent: one CTA per SM at most (items of BV 64)
    if state == "rc2":
        assert (p.block_v, p.warps, p.stages, p.qside, p.out_tma) == (64, 4, 2, True, True)
        assert launches[-1][1] == (sm_count,)  # 32 whole-head items over 31 CTAs


@needs_gluon
@pytest.mark.parametrize("kw,state", [
    (dict(V=128), "rc2"), (dict(V=128, l2norm=False), "rc"), (dict(V=64), "rc"), (dict(K=64, V=128), "rc2"),
    (dict(V=96), "triton"), (dict(V=32), "triton"), (dict(K=32, V=128), "triton"),
], ids=["v128", "v128_no_l2norm", "v64", "k64_v128", "v96", "v32", "k32"])
def test_many_varlen_programs(kw, state):
    """16 sequences x 32 heads = 512 programs > 132 SMs: rc2 at V == 128 with the q side, rc for other multiples
    of 64 or without the L2 norm; triton where V is not a multiple of 64 or K is outside {64, 128}."""
    p, launches = planned(T=16 * 256, H=32, HV=32, cu=varlen(16), **kw)
    assert p.state == state, p
    assert names(launches)[-1] == {"rc2": "state_output_gl_rc2", "rc": "state_output_gl_rc",
                                   "triton": "state_output_v2"}[state]
    if state == "triton":
        assert (p.block_v, p.warps, p.stages) == (32, 4, 2)  # 512 < 4 x 132 programs


@pytest.mark.parametrize("env", ["no_gluon", "interpreter"])
@pytest.mark.parametrize("n_seqs,block_v", [(16, 32), (17, 64)])
def test_many_programs_without_gluon_take_triton(env, n_seqs, block_v, request):
    """Without Gluon: triton, BV 32 below 4 x 132 = 528 programs (16 x 32 = 512), 64 from there (17 x 32 = 544)."""
    request.getfixturevalue(env)
    p = plan_of(T=n_seqs * 256, H=32, HV=32, cu=varlen(n_seqs))
    assert (p.state, p.block_v, p.warps, p.stages) == ("triton", block_v, 4, 2)


@needs_gluon
def test_rc_output_tma_only_with_the_q_side_and_more_than_one_row():
    assert planned(sm_count=127, **FEW)[0].out_tma
    p = plan_of(sm_count=127, **dict(FEW, l2norm=False))
    assert p.state == "rc" and not p.qside and not p.out_tma
    p = plan_of(B=64, T=1, H=16, HV=32, K=128)  # 64 one-row sequences: 2048 programs
    assert p.state == "rc2" and not p.out_tma


@needs_gluon
@pytest.mark.parametrize("h0,v_first,want", [(False, False, None), (True, False, (1, False)), (True, True, (1, True))])
def test_rc_initial_state_prefetch(h0, v_first, want):
    """rc / rc2 prefetch the first item's initial state where it has a unit-stride dimension (H0_KC: k is the
    contiguous one, the state_v_first layout)."""
    _, launches = planned(T=16 * 256, H=32, HV=32, cu=varlen(16), h0=h0, state_v_first=v_first)
    meta = launches[-1][3]
    assert (None if "H0PF" not in meta else (meta["H0PF"], meta["H0_KC"])) == want


# ---- segments (sequence-parallel state pass) ----


@needs_gluon
@pytest.mark.parametrize("kw,segments", [
    (dict(T=8192, H=4, HV=8), (4, 2048)),  # 132 // (8 x 4) = 4 segments of 128 / 4 chunks
    (dict(T=5000, H=4, HV=8), (4, 1280)),  # 79 chunks / 4 -> 20
    (dict(T=4096, H=4, HV=8), (4, 1024)),  # 64 / 4 = 16 chunks, the least
    (dict(T=8192, H=2, HV=4), (8, 1024)),  # 132 // 16 = 8
    (dict(T=16384, H=1, HV=2), (16, 1024)),  # 132 // 8 = 16, the most
    (dict(T=4100, H=8, HV=8, K=64, V=128), (4, 1088)),  # 65 chunks / 4 -> 17
    (dict(T=4100, H=8, HV=8, K=64), (5, 1024)),  # V = 64: 132 // 16 = 8 wanted, 65 / 8 -> 16 chunks
], ids=["tp4_T8192", "tp4_T5000", "tp4_T4096", "tp8_T8192", "hv2_T16384", "mha_k64_v128", "mha_k64_v64"])
def test_segments_for_one_long_prompt_with_few_heads(kw, segments):
    p, launches = planned(**kw)
    assert p.segments == segments
    assert names(launches)[-3:-1] == ["state_segments_gl", "segment_scan"]
    meta = launches[-1][3]
    assert meta["IS_VARLEN"] and meta["USE_H0"] and not meta["STORE_HT"]
    assert launches[-1][1][1] == segments[0] * kw["HV"]  # the segments run as sequences
    # the segment pass forms every segment's transition, the last one only for the final state
    count = segments[0]
    assert launches[-3][2][4].shape[1] == count
    assert planned(final=False, **kw)[1][-3][2][4].shape[1] == count - 1


@pytest.mark.parametrize("kw", [
    dict(T=3072, H=4, HV=8),  # 48 chunks: 3 segments of 16, fewer than 4
    dict(T=8192, H=8, HV=16),  # 132 // 64 = 2 segments would fill the SMs
    dict(T=8192, H=4, HV=8, cu=[0, 4096, 8192]),  # varlen
    dict(B=2, T=8192, H=4, HV=8),  # two sequences
    dict(T=8192, H=4, HV=8, K=32),  # K outside {64, 128}
    dict(T=8192, H=4, HV=8, V=96),  # V not a multiple of 64
], ids=["T3072", "hv16", "varlen", "B2", "k32", "v96"])
def test_no_segments_outside_the_rule(kw):
    assert plan_of(**kw).segments is None


@pytest.mark.parametrize("env", ["no_gluon", "interpreter"])
def test_no_segments_without_gluon(env, request):
    request.getfixturevalue(env)
    assert plan_of(T=8192, H=4, HV=8).segments is None


@needs_gluon
def test_one_sequence_varlen_plans_the_fixed_length_call():
    """cu_seqlens = [0, T] with B == 1 is the fixed-length call: the same plan (segments included) and launches,
    without the varlen bookkeeping."""
    for kw in (dict(T=8192, H=4, HV=8), dict(T=1, H=2, HV=4), dict(T=200, H=16, HV=32, K=64)):
        p1, l1 = planned(cu=[0, kw["T"]], **kw)
        p0, l0 = planned(**kw)
        assert p1 == p0 and [(n, g, m) for n, g, _, m in l1] == [(n, g, m) for n, g, _, m in l0], kw
        assert not {"chunk_offsets", "slot_seq"} & set(names(l1))


# ---- q side, PDL, gates ----


@needs_gluon
@pytest.mark.parametrize("sm_count", [132, 127, 31])
def test_qside_only_with_the_l2_norm(sm_count):
    """ws / rc / rc2 normalise q themselves only with the in-kernel L2 norm; without it rc2 (q side only) gives way
    to rc."""
    on, l_on = planned(sm_count=sm_count, **FEW)
    off, l_off = planned(sm_count=sm_count, l2norm=False, **FEW)
    assert on.qside and not off.qside and off.state == ("rc" if on.state == "rc2" else on.state)
    assert l_on[0][3].get("QSIDE") and "QSIDE" not in l_off[0][3]


@pytest.mark.parametrize("kw", [dict(T=16 * 256, H=32, HV=32, cu=varlen(16)), dict(sm_count=127, **FEW), FEW,
                                dict(T=63), dict(K=60), dict(T=8192, H=4, HV=8)],
                         ids=["rc2_varlen", "rc", "ws", "triton", "generic", "segments"])
def test_pdl_only_on_rc_plans(kw):
    p, launches = planned(**kw)
    assert p.pdl == (p.state in ("rc", "rc2")), p
    marked = {n for n, _, _, m in launches if m.get("PDL")}
    assert all(m.get("launch_pdl") for _, _, _, m in launches if m.get("PDL"))
    assert marked == ({n for n in names(launches) if n in PDL_KERNELS} if p.pdl else set()), (p.state, marked)


def test_pdl_off_where_triton_has_no_grid_dependency_control():
    x = inputs(T=16 * 256, H=32, HV=32, cu=varlen(16))
    p = P.plan_call(x["q"], x["k"], x["v"], n_seqs=16, is_varlen=True, l2norm=True, sm_count=132,
                    pdl_supported=False)
    assert not p.pdl


def test_no_pdl_launch_options_under_the_interpreter(interpreter):
    plan = P.GdnPlan("per_head", "triton", 32, 4, 2, pdl=True)
    _, launches = planned(plan=plan, T=16 * 256, H=32, HV=32, cu=varlen(16))
    assert not any(m.get("PDL") or m.get("launch_pdl") for _, _, _, m in launches)


@pytest.mark.parametrize("kw,gates", [
    (dict(H=4, HV=4, cu=[0, 1, 65, 256]), True),  # varlen, one value head per intra program
    (dict(H=16, HV=48, cu=[0, 1, 65, 256]), True),  # G = 3: one head per program
    (dict(H=2, HV=4, cu=[0, 1, 65, 256]), False),  # G = 2: two heads per program
    (dict(H=4, HV=4), False),  # fixed length
    (dict(H=4, HV=4, K=60, cu=[0, 1, 65, 256]), False),  # the generic pair
])
def test_gates_kernel_for_varlen_one_head_programs_only(kw, gates):
    _, launches = planned(**kw)
    assert ("gates" in names(launches)) == gates
    intra = [m for n, _, _, m in launches if n.startswith("intra")]
    assert bool(intra[0].get("GATES")) == gates


def test_varlen_bookkeeping_launches():
    """Varlen calls: the chunk offsets, then (per-head intra) the chunk -> sequence map over T // 64 + N slots; every
    later launch reads the clamped offsets the first one writes (16-byte aligned after the map), never cu_seqlens."""
    _, launches = planned(T=300, H=2, HV=4, cu=[0, 0, 1, 65, 300])
    assert names(launches)[:2] == ["chunk_offsets", "slot_seq"]
    cu, cus, co, n, t = launches[0][2]
    used = 4 + 1 + 300 // 64 + 4
    assert cus.numel() == 5 and cus.dtype == torch.int32 and cus.data_ptr() % 16 == 0 and (n, t) == (4, 300)
    assert co.numel() == -(-used // 4) * 4 + 5 and cus.data_ptr() == co.data_ptr() + 4 * (co.numel() - 5)
    assert all(a is not cu for _, _, args, _ in launches[1:] for a in args if isinstance(a, torch.Tensor))
    assert any(a is cus for a in launches[1][2])
    assert launches[2][1] == ((300 // 64 + 4) * 4 // 2,)
    assert names(planned(T=300, K=60, cu=[0, 0, 1, 65, 300])[1])[:2] == ["chunk_offsets", "intra_chunk"]


# ---- T = 1, empty calls, explicit plans ----


T1_PLANS = [(path, B, K) for path in ("default", "generic") for B, K in ((1, 32), (2, 128), (64, 128), (1, 256))] + [
    ("triton", 1, 32), ("triton", 2, 128), ("triton", 64, 128), ("tma", 64, 128)]  # (tma: B * T >= 64 rows)


@pytest.mark.parametrize("path,B,K", T1_PLANS)
def test_t1_calls_take_state_kernels_compiled_without_t_specialisation(path, B, K):
    """At T == 1 the Triton state kernels run their twins compiled without T's specialisation (ptxas 12.8
    miscompiles the specialised ones); the Gluon kernels never specialise T."""
    from atrex_nvidia.chunk_gdn.sm90 import triton_state
    twins = {id(k) for k in triton_state.NO_T1_SPECIALISATION.values()}
    plan = None
    if path != "default":
        x = dict(q=torch.empty(B, 1, 2, K, dtype=torch.bfloat16), v=torch.empty(B, 1, 4, K, dtype=torch.bfloat16),
                 use_qk_l2norm_in_kernel=True)
        plan = plan_for(path, dict(x, k=x["q"]))
        assert plan is not None
    x = inputs(B=B, T=1, H=2, HV=4, K=K)
    _, launches = L.gdn_fwd(x["q"], x["k"], x["v"], x["g"], x["beta"], scale=0.1, initial_state=None,
                            output_final_state=True, use_qk_l2norm_in_kernel=True, state_v_first=False,
                            cu_seqlens=None, plan=plan, plan_only=True)
    state = [k for k, *_ in launches if "state_output" in k.__name__]
    assert len(state) == 1
    assert id(state[0]) in twins or {"T", "TOTAL_T"} <= set(state[0].do_not_specialize), state[0].__name__


@pytest.mark.parametrize("kw", [dict(T=0), dict(T=0, cu=[0, 0, 0]), dict(T=0, B=0)])
def test_empty_calls_launch_nothing(kw):
    assert planned(**kw) == (None, [])


def test_an_explicit_plan_is_run_as_given():
    for plan in (P.GdnPlan("per_head", "triton", 64, 4, 3, 2), P.GdnPlan("generic", "generic", 32, 4, 2),
                 P.GdnPlan("per_head", "tma", 32, 4, 3, 1)):
        p, launches = planned(plan=plan)
        assert p is plan
        name, grid, _, meta = launches[-1]
        assert name == {"triton": "state_output_v2", "generic": "state_output", "tma": "state_output_tma"}[plan.state]
        assert (meta["BV"], meta["num_warps"], meta["num_stages"]) == (plan.block_v, plan.warps, plan.stages)
        assert grid == (-(-128 // plan.block_v), 4)
        assert launches[0][3].get("GS", 1) == plan.heads_per_intra


def test_host_integer_helpers_equal_triton_s():
    import triton
    for n in (0, 1, 2, 3, 15, 16, 17, 63, 64, 65, 100, 128, 255, 256, 257, 4096, 70001):
        assert P.next_pow2(n) == triton.next_power_of_2(n), n
        for d in (1, 16, 32, 64):
            assert P.cdiv(n, d) == triton.cdiv(n, d), (n, d)
