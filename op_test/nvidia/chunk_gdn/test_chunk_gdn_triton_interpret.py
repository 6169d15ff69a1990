"""CPU test: ``nvidia.gdn_sm90``'s Triton kernels under the Triton interpreter, against the float64 recurrence.

Runs in a subprocess with ``TRITON_INTERPRET=1`` (the variable must be set before ``triton.jit`` decorates, and
must not leak into other tests), on small shapes. Under the interpreter the default plan runs the per-head intra
kernel with the tma / triton state kernels (the Gluon ones have no interpreter) and the generic pair outside the
per-head domain; ``GdnPlan``s force the other Triton paths. ``op_test/triton_interp_bf16.py`` patches the
interpreter's bf16 handling inside that subprocess only.
"""

import os
import textwrap

import pytest
import torch

from testlib import run_result_script

HERE = os.path.dirname(os.path.abspath(__file__))
OPTEST = os.path.abspath(os.path.join(HERE, "..", ".."))  # triton_interp_bf16

triton = pytest.importorskip("triton")
pytest.importorskip("numpy")
if tuple(int(x) for x in triton.__version__.split(".")[:2]) < (3, 7):
    # Triton 3.6's interpreter (numpy 2.x) cannot use a loaded scalar as a range() bound ("only 0-dimensional
    # arrays can be converted"); the GPU tests cover that Triton
    pytest.skip(f"Triton {triton.__version__}'s interpreter cannot run these kernels; needs >= 3.7",
                allow_module_level=True)

# (row, state path forced through a GdnPlan, case id): both sides of the tma / triton choice, the generic pair on
# per-head-domain cases, and a 64-column triton state kernel (the many-program configuration)
FORCED = [
    ("triton", "T65_noL2"), ("triton", "T130_B2_gva_bf16h0"), ("triton", "varlen_0_1"), ("triton", "T130_B2_gva_fp16"),
    ("triton64", "varlen_V64"), ("tma", "varlen_V64"),
    ("generic", "T63"), ("generic", "varlen_0_1"), ("generic", "T130_B2_gva_bf16h0"),
    # fla's in-kernel gate read by the other state paths (its transformed g feeds every later kernel)
    ("triton", "gate_T70_gva"), ("generic", "beta_sigmoid_gate_varlen_g3"),
]
EXTRA_CASES = {
    "varlen_V64": dict(T=150, H=1, HV=2, K=32, V=64, cu_seqlens=[0, 70, 150], h0=torch.float32),
    # one value head per intra program (G = 3, odd): the gates kernel; beta through the in-kernel sigmoid
    "beta_sigmoid_varlen_g3": dict(T=150, H=1, HV=3, K=32, cu_seqlens=[0, 1, 64, 150]),
}
POISONED = ("T1", "varlen_0_1", "T130_B2_gva_bf16h0", "beta_sigmoid_gate_varlen_g3")
BOOKKEEPING = {"mixed": [0, 0, 0, 1, 65, 65, 129, 193, 194, 300, 300], "long": [0, 70000, 70001, 70065, 70065],
               "one_of_two": [0, 64, 64],
               # bad offsets (no value check on a GPU): the kernel's safe copy is their running maximum within [0, T]
               "bad_past_end": ([0, 64, 500], 100), "bad_out_of_order": ([0, 90, 30, 100], 100),
               "bad_negative": ([0, -40, 50, 100], 100), "bad_first_nonzero": ([37, 50, 100], 100)}

_SCRIPT = textwrap.dedent(r'''
    import dataclasses, json, os, sys
    assert os.environ.get("TRITON_INTERPRET") == "1"
    sys.path[:0] = [HERE, OPTEST]
    import torch
    import triton_interp_bf16
    triton_interp_bf16.install()

    import _gdn_cases as C
    from atrex_nvidia.chunk_gdn.sm90 import runner

    torch.set_num_threads(2)
    res, ran = {}, {}
    cases = dict(C.SMALL_CASES, **EXTRA_CASES)

    def names(launches):
        return [k.__name__.replace("atrex_sm90_gdn_", "") for k, *_ in launches]

    def run(tag, cid, plan=None):
        x, extra = C.case_inputs(cid, cases[cid], "cpu")
        p, launches = C.call(x, extra, plan=plan, plan_only=True)
        ran[tag] = [p.intra, p.state, names(launches)]
        res[tag] = list(C.run_case(cid, cases[cid], "cpu", plan=plan))
        return x

    # the default plan on every small case
    for cid in cases:
        run(cid, cid)
    # Triton paths the default does not take on these cases
    for path, cid in FORCED:
        x, _ = C.case_inputs(cid, cases[cid], "cpu")
        plan = C.plan_for(path.replace("64", ""), x)
        if path == "triton64":
            plan = dataclasses.replace(plan, block_v=64)
        run(f"{cid}_{path}", cid, plan)
    # the fp16 UT inverse's guard (positive g: the bf16 + Newton branch), default (tma) and triton state
    x = C.fp16_guard_inputs("cpu")
    ro, rh = C.oracle(x)
    for tag, plan in (("default", None), ("triton", C.plan_for("triton", x))):
        o, h = C.call(x, plan=plan)
        res[f"fp16_guard_positive_g_{tag}"] = [C.rrmse(ro, o), C.rrmse(rh, h), C.RRMSE_BOUND]
    # atrex verify's decay-0 probes of the small-K cases (the split X / U products of the Triton state kernels)
    from atrex.validation.cases import cases as vcases
    for name in ("small/no-l2norm-bf16-state", "small/varlen-gva-vfirst"):
        case = next(c for c in vcases("chunk_gdn") if c.name == name)
        kw = case.inputs(torch.device("cpu"))
        kw = {**kw, "g": torch.zeros_like(kw["g"]), "scale": kw.get("scale") or kw["q"].shape[-1] ** -0.5}
        x = dict(kw, initial_state=kw.get("initial_state"), state_v_first=kw.get("state_v_first", False),
                 use_qk_l2norm_in_kernel=kw.get("use_qk_l2norm_in_kernel", False), cu_seqlens=kw.get("cu_seqlens"))
        p, launches = C.call(x, plan_only=True)
        ran[name] = [p.intra, p.state, names(launches), p.split_xu]
        o, h = C.call(x)
        ro, rh = C.oracle(x)
        res[name + "_decay0"] = [C.rrmse(ro, o), C.rrmse(rh, h), C.RRMSE_BOUND]
    # the varlen bookkeeping (chunk offsets, then each chunk slot's sequence) against a Python count
    for tag, cu in BOOKKEEPING.items():
        given, T = cu if isinstance(cu, tuple) else (cu, cu[-1])
        N = len(given) - 1
        x = C.make_inputs(T=T, H=1, K=16, cu_seqlens=[0] * N + [T])
        _, launches = C.call(x, plan_only=True)
        book = [ln for ln in launches if ln[0].__name__ in ("atrex_sm90_gdn_chunk_offsets", "atrex_sm90_gdn_slot_seq")]
        kern, grid, args, meta = book[0]
        book[0] = (kern, grid, (torch.tensor(given, dtype=args[0].dtype), *args[1:]), meta)
        runner.launch_all(torch.device("cpu"), book)
        safe, run = [], 0
        for v in given:
            run = max(run, min(max(v, 0), T))
            safe.append(run)
        co_want, seq = C.python_chunk_map(safe)
        n_slots = T // 64 + N
        want = co_want + seq + [N] * (n_slots - len(seq))
        got = args[2].tolist()[:len(want)]
        bad = sum(a != b for a, b in zip(got, want)) + abs(len(got) - len(want))
        bad += sum(a != b for a, b in zip(args[1].tolist(), safe))
        res[f"bookkeeping_{tag}"] = [float(bad), 0.0, 0.0]
    # the segment pass's composition kernel on its own
    res.update(C.segment_scan_check("cpu"))
    # the gates kernel alone: fla's gate (torch's fp32 softplus, threshold 20) on raw g spanning softplus' regimes,
    # in the transform-only launch (two heads per intra program) and the full one (varlen, one head per program:
    # plane 0 is then the chunk-local cumsum of the transformed g)
    import torch.nn.functional as F
    for tag, kw in (("transform", dict(B=2, T=70, H=1, HV=2, K=32)),
                    ("full", dict(T=150, H=1, HV=3, K=32, cu_seqlens=[0, 1, 64, 150]))):
        for bias in ("bias", "nobias"):
            x = C.make_inputs(gate=bias, **kw)
            x["g"] = x["g"] * 30  # (g + dt_bias from about -100 to 100)
            _, launches = C.call(x, plan_only=True)
            gates = [ln for ln in launches if ln[0].__name__ == "atrex_sm90_gdn_gates"]
            runner.launch_all(torch.device("cpu"), [ln for ln in launches if ln[0].__name__ in (
                "atrex_sm90_gdn_chunk_offsets", "atrex_sm90_gdn_slot_seq")] + gates)
            args = gates[0][2]
            b = 0.0 if x["dt_bias"] is None else x["dt_bias"]
            want = -torch.exp(x["A_log"]) * F.softplus(x["g"] + b)
            got = args[-1]
            err = ((got - want).abs() / want.abs().clamp_min(1e-30)).max().item()
            e_fac = 0.0
            if tag == "full":
                cum = torch.cat([want[0, s0:s1].reshape(-1, 64, 3).cumsum(1).reshape(-1, 3) if (s1 - s0) % 64 == 0
                                 else torch.cat([want[0, c0:min(c0 + 64, s1)].cumsum(0)
                                                 for c0 in range(s0, s1, 64)]) for s0, s1 in ((0, 1), (1, 64), (64, 150))])
                e_fac = ((args[2][0].t() - cum).abs().max() / cum.abs().max()).item()
            res[f"gates_{tag}_{bias}"] = [err, e_fac, 1e-5]
    # no kernel reads workspace nothing wrote: every float buffer allocated during the call starts as NaN (int32 /
    # int64 ones as 2**30)
    empty = torch.empty

    def poisoned_empty(*a, **kw):
        t = empty(*a, **kw)
        if t.dtype.is_floating_point:
            t.fill_(float("nan"))
        elif t.dtype in (torch.int32, torch.int64):
            t.fill_(2 ** 30)
        return t

    for cid in POISONED:
        x, extra = C.case_inputs(cid, cases[cid], "cpu")
        generic = C.plan_for("generic", x)
        C.case_oracle(cid, cases[cid], "cpu")
        torch.empty = poisoned_empty
        try:
            res[f"{cid}_poisoned"] = list(C.run_case(cid, cases[cid], "cpu"))
            res[f"{cid}_poisoned_generic"] = list(C.run_case(cid, cases[cid], "cpu", plan=generic))
        finally:
            torch.empty = empty
    print("RESULT " + json.dumps(dict(res=res, ran=ran)))
''').replace("HERE", repr(HERE)).replace("OPTEST", repr(OPTEST)).replace(
    "EXTRA_CASES", repr(EXTRA_CASES)).replace("FORCED", repr(FORCED)).replace(
    "POISONED", repr(POISONED)).replace("BOOKKEEPING", repr(BOOKKEEPING))


@pytest.fixture(scope="module")
def interpreted():
    return run_result_script(_SCRIPT, set_env={"TRITON_INTERPRET": "1"}, what="interpreter subprocess")


def test_interpreted_kernels_match_fp64_recurrence(interpreted, record_property):
    rows = interpreted["res"]
    for name, (e1, e2, bound) in sorted(rows.items()):
        print(f"[gdn interpreter] {name}: {e1:.3e} {e2:.3e} bound {bound:.1e}")
        record_property(name, [e1, e2, bound])
    bad = {k: v for k, v in rows.items() if not (v[0] <= v[2] and v[1] <= v[2])}
    assert not bad, f"rrmse (o, state, bound) out of bound: {bad}"


def test_every_row_ran(interpreted):
    """Each check produced its rows (a missing row would pass the bound test silently)."""
    import _gdn_cases as C
    want = {cid for cid, _ in C.SMALL_CASES} | set(EXTRA_CASES) | {f"{c}_{p}" for p, c in FORCED}
    want |= {"fp16_guard_positive_g_default", "fp16_guard_positive_g_triton"}
    want |= {"small/no-l2norm-bf16-state_decay0", "small/varlen-gva-vfirst_decay0"}
    want |= {f"bookkeeping_{t}" for t in BOOKKEEPING}
    want |= {f"segment_scan_{t}_8" for t in ("h0_vfirst", "h0_bf16", "zero_no_final")}
    want |= {f"gates_{t}_{b}" for t in ("transform", "full") for b in ("bias", "nobias")}
    want |= {f"{c}_poisoned{s}" for c in POISONED for s in ("", "_generic")}
    assert want <= set(interpreted["res"]), sorted(want - set(interpreted["res"]))


def test_the_rows_ran_the_paths_they_name(interpreted):
    """Without Gluon, the default plan takes the triton state kernel below 64 rows (T1, T63) and where V needs a
    16-column block (T64), tma where the rows are TMA-describable, the generic pair outside the per-head domain
    (K60_V100_fp16); the gates kernel runs for varlen calls with one value head per intra program; forced rows ran
    their path; the decay-0 probes (K <= 32) split the state kernel's X / U products."""
    ran = interpreted["ran"]
    state = {tag: r[1] for tag, r in ran.items()}
    assert state["T1"] == state["T63"] == state["T64"] == "triton", state
    assert state["T65_noL2"] == state["varlen_0_1"] == state["T130_B2_gva_fp16"] == "tma", state
    assert ran["K60_V100_fp16"][:2] == ["generic", "generic"], ran["K60_V100_fp16"]
    assert ran["K60_V100_fp16"][2] == ["intra_chunk", "state_output"], ran["K60_V100_fp16"]
    for cid in ("varlen_i64_noh0", "beta_sigmoid_varlen_g3", "beta_sigmoid_gate_varlen_g3"):
        assert ran[cid][2] == ["chunk_offsets", "slot_seq", "gates", "intra_chunk_v3", "state_output_tma"], ran[cid]
    assert "gates" not in ran["varlen_0_1"][2], ran["varlen_0_1"]  # (two value heads per intra program)
    # fla's gate: a transform-only gates launch first where the intra kernel forms the gate rows itself; fp32 q/k/v
    # take the generic pair (after the transform and the bookkeeping where they apply)
    assert ran["gate_T70_gva"][2][0] == "gates" and ran["gate_T70_gva"][2][1] == "intra_chunk_v3", ran["gate_T70_gva"]
    assert ran["fp32_T70_gva"][:3] == ["generic", "generic", ["intra_chunk", "state_output"]], ran["fp32_T70_gva"]
    assert ran["fp32_varlen_K48_gate_noL2"][2] == ["chunk_offsets", "gates", "intra_chunk", "state_output"], ran[
        "fp32_varlen_K48_gate_noL2"]
    for path, cid in FORCED:
        assert state[f"{cid}_{path}"] == path.replace("64", ""), (path, cid, ran[f"{cid}_{path}"])
    assert {tuple(ran[n][1:2]) + (ran[n][3],) for n in ("small/no-l2norm-bf16-state", "small/varlen-gva-vfirst")} <= {
        ("tma", True), ("triton", True)}, ran


def test_interpreter_env_did_not_leak():
    assert os.environ.get("TRITON_INTERPRET") in (None, "", "0")
