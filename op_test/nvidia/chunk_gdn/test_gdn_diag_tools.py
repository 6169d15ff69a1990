"""CPU checks of the GDN device-call diagnostics (scripts/diag/*.patch, scripts/gdn_fused_probe.py): the patches still
apply to this tree (a kernel edit that breaks one is caught here, not on the H200), and the probe's float64 chunked
forward and its comparison locate what they should."""

import os
import shutil
import subprocess
import sys

import pytest
import torch

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
DIAG = os.path.join(ROOT, "scripts", "diag")
PATCHES = sorted(p for p in os.listdir(DIAG) if p.endswith(".patch")) if os.path.isdir(DIAG) else []


@pytest.mark.parametrize("patch", PATCHES)
def test_diag_patch_applies(patch):
    """Each timing or probe patch applies to the current kernels and marks what it changes as DIAGNOSTIC."""
    if shutil.which("git") is None or not os.path.isdir(os.path.join(ROOT, ".git")):
        pytest.skip("needs a git checkout")
    path = os.path.join(DIAG, patch)
    r = subprocess.run(["git", "apply", "--check", path], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    added = [ln for ln in open(path) if ln.startswith("+") and not ln.startswith("+++")]
    assert any("DIAGNOSTIC" in ln for ln in added), "a diagnostic patch marks its changes DIAGNOSTIC"


@pytest.fixture(scope="module")
def probe():
    sys.path.insert(0, os.path.join(ROOT, "scripts"))
    try:
        import gdn_fused_probe
    finally:
        sys.path.pop(0)
    return gdn_fused_probe


@pytest.mark.parametrize("case_id", ["fu_B2_T63_K64", "fu_varlen_K64_gva", "g_pos", "beta_sigmoid_neg",
                                     "fu_varlen_K128_V192"])
def test_probe_reference_is_the_contract_recurrence(probe, case_id):
    """The probe's chunked float64 forward gives the contract's float64 recurrence (C2.3) on fused cases that cover
    batches, varlen with empty / 1- / 64- / 65-token sequences, GVA, both initial-state layouts, positive g, the beta
    sigmoid and V = 192."""
    import _gdn_cases as C
    x, extra = C.fused_inputs(case_id, dict(C.FUSED_CASES)[case_id], "cpu")
    ref = probe.reference(x, extra)
    ro, _ = C.ref_recurrence(x["q"], x["k"], x["v"], x["g"], x["beta"], scale=x["scale"],
                             initial_state=x["initial_state"], state_v_first=x["state_v_first"],
                             use_qk_l2norm_in_kernel=True, cu_seqlens=x["cu_seqlens"],
                             use_beta_sigmoid_in_kernel=bool(extra), allow_neg_eigval=bool(extra))
    assert C.rrmse(ro, ref["o"].reshape(ro.shape)) < 1e-12


def test_probe_comparison_locates_a_wrong_tile(probe):
    """A dump equal to the reference passes; a wrong 16-row group of one A tile and a never-written U chunk are
    reported as those quantities, at that sequence, value head and chunk, and nothing else is."""
    import _gdn_cases as C
    x, extra = C.fused_inputs("fu_varlen_K64_gva", dict(C.FUSED_CASES)["fu_varlen_K64_gva"], "cpu")
    ref = probe.reference(x, extra)
    bufs = probe.buffers(x, "cpu")
    for n in ("A", "K", "Q", "AQK"):
        bufs[n][0] = ref[n].float()
    bufs["F"][0] = ref["F"].float()
    bufs["U"][:] = ref["U"].float()
    o = ref["o"].reshape(x["v"].shape).float()
    _, wrong = probe.compare(x, bufs, o, ref)
    assert wrong == []
    bufs["A"][0, 2, 129 + 16:129 + 32] += 0.5  # sequence 5 starts at row 129: its chunk 0, rows 16-31
    bufs["U"][3, 65:70] = float("nan")  # sequence 4 (rows 65..128), chunk 0
    lines, wrong = probe.compare(x, bufs, o, ref)
    assert wrong == ["A", "U"], lines
    assert any("seq 5 value head 2 V block 0 chunk 0" in ln and "BAD" not in ln for ln in lines if "PROBE   A " in ln)
    assert any("seq 4 value head 3 V block 0 chunk 0: nan" in ln for ln in lines)


def test_probe_reads_the_smoke_log(probe, tmp_path):
    """The probe reruns the case a smoke run never finished (a hang), else its first failing one."""
    log = tmp_path / "smoke.log"
    rows = ("SMOKE a diag16=False ...\nSMOKE fused_a_ran_where_it_applies diag16=False 0.000e+00 <= 0.0e+00 ok\n"
            "SMOKE fused_a_vs_two_kernels diag16=False 1.0e-01 <= 2.0e-03 FAIL\n"
            "SMOKE fused_a_vs_float64 diag16=False 1.0e-01 <= 5.0e-03 FAIL\n")
    log.write_text(rows + "SMOKE b diag16=True ...\n")
    assert probe.case_from_smoke(str(log)) == ("b", True)
    log.write_text(rows + "SMOKE b diag16=True ...\nSMOKE fused_b_vs_float64 diag16=True 1.0e-04 <= 5.0e-03 ok\n")
    assert probe.case_from_smoke(str(log)) == ("a", False)
    log.write_text("SMOKE b diag16=True ...\nSMOKE fused_b_vs_float64 diag16=True 1.0e-04 <= 5.0e-03 ok\n")
    assert probe.case_from_smoke(str(log)) is None


def test_probe_trace_names_the_waits(probe):
    """Progress words decode to each partition's chunk and step; CTAs in the same state are grouped."""
    prog = torch.full((probe.MAX_CTAS * 4,), -1, dtype=torch.int32)
    prog[0:3] = torch.tensor([5 * 16 + 1, 3 * 16 + 4, 6 * 16 + 3])
    prog[4:7] = prog[0:3]
    lines = probe.trace_lines(prog, 3)
    assert lines[0].startswith("PROBE trace CTAs [0, 1] (2): chain chunk 5: waits iready (aux) | output chunk 3: "
                               "waits su_ready (chain) | aux chunk 6: chunk done"), lines
    assert "CTAs [2] (1): chain not started" in lines[1]


def test_pair_step_algebra():
    """scripts/gdn_pair_step.py (round 32): its float64 forward with 128-row steps, the pair's inverse built from the
    chunk-64 inverses (off-diagonal block -A2 L21 A1), equals the chunk-64 forward and the contract's token-by-token
    recurrence, output and final state, over an odd number of chunks (a last, unpaired chunk) and a short last chunk;
    its bf16-rounding emulation stays within the contract bound of that recurrence for both step sizes."""
    sys.path.insert(0, os.path.join(ROOT, "scripts"))
    import _gdn_cases as C
    import gdn_pair_step as P

    x, ro, rs = P.head_inputs(300, K=64, seed=3)
    args = (x["q"], x["k"], x["v"], x["g"], x["beta"], x["scale"])
    o64, s64 = P._forward(*args, pair=False, rnd=False)
    o128, s128 = P._forward(*args, pair=True, rnd=False)
    for o, s in ((o64, s64), (o128, s128)):
        assert (o - ro).abs().max() < 1e-9 and (s - rs).abs().max() < 1e-9
    for pair in (False, True):
        o, s = P._forward(*args, pair=pair, rnd=True)
        assert 0 < C.rrmse(ro, o) <= C.RRMSE_BOUND and 0 < C.rrmse(rs, s) <= C.RRMSE_BOUND


def test_bench_gdn_rejects_unknown_variants():
    """bench_gdn's --variants: an exact name or a prefix selects, and a name that matches nothing is an error at parse
    time, before any device work (round 32: a renamed variant dropped silently out of a recorded sweep)."""
    bench = pytest.importorskip("atrex_nvidia.chunk_gdn.sm90.bench_gdn")
    names = [n for n, _ in bench._select_variants("default,ws_out2*")]
    assert names[0] == "default" and "ws_out2_o152" in names and "ws_out1" not in names
    with pytest.raises(ValueError, match="ws_out2_o136"):
        bench._select_variants("default,ws_out2_o136")
    with pytest.raises(SystemExit):
        bench.main(["--out", os.devnull, "--variants", "no_such_variant*"])


@pytest.mark.parametrize("segments", [2, 3])
def test_segment_scan_algebra(segments):
    """scripts/gdn_segment_scan.py (round 33): a sequence-parallel state pass's three phases (every segment's end state
    from zero and its K x K transition in one chain on [v | 0] from [S0 | I], an fp32 scan over the segments, every
    segment rerun from its true initial state) equal the contract's token-by-token recurrence in float64, output and
    final state, with a short last segment; the transitions carry the state across segments (slow decay), so a wrong
    scan would show; with the kernels' bf16 rounding points it stays within the contract bound."""
    sys.path.insert(0, os.path.join(ROOT, "scripts"))
    import _gdn_cases as C
    import gdn_segment_scan as G

    x, ro, rs = G.head_inputs(300, K=64, seed=5)
    assert G.bounds(300, segments)[-1][1] == 300 and G.segment_transition_norm(x, segments) > 0.3
    o, s = G.segmented(**x, segments=segments, rnd=False)
    assert (o - ro).abs().max() < 1e-9 and (s - rs).abs().max() < 1e-9
    o, s = G.segmented(**x, segments=segments, rnd=True)
    assert 0 < C.rrmse(ro, o) <= C.RRMSE_BOUND and 0 < C.rrmse(rs, s) <= C.RRMSE_BOUND
