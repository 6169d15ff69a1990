"""Helpers shared by the test tiers (importable as `testlib`: pytest's pythonpath includes op_test/)."""

from __future__ import annotations

import torch
from torch.utils._python_dispatch import TorchDispatchMode


class OpRecorder(TorchDispatchMode):
    """Records every aten op that runs: proves validation launches, allocates and reads nothing."""

    def __init__(self):
        super().__init__()
        self.ops: list[str] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops.append(str(func))
        return func(*args, **(kwargs or {}))


def bits(t: torch.Tensor) -> torch.Tensor:
    return t.detach().contiguous().reshape(-1).view(torch.uint8)


def snapshot(tensors: dict) -> dict:
    """Bitwise copies of every tensor argument."""
    return {k: bits(v).clone() for k, v in tensors.items() if isinstance(v, torch.Tensor) and v.device.type != "meta"}


def assert_unchanged(before: dict, tensors: dict) -> None:
    for k, b in before.items():
        assert torch.equal(b, bits(tensors[k])), f"argument `{k}` was modified"


def assert_rejected_without_tensor_ops(fn, kwargs: dict, err: type, argument: str):
    """``fn(**kwargs)`` raises ``err`` naming ``argument``, runs no aten op (no launch, allocation or
    device read) and leaves every tensor argument bitwise unchanged."""
    import pytest

    before = snapshot(kwargs)
    rec = OpRecorder()
    with pytest.raises(err) as info, rec:
        fn(**kwargs)
    assert rec.ops == [], f"validation ran tensor ops: {rec.ops}"
    assert f"`{argument}`" in str(info.value), f"message does not name `{argument}`: {info.value}"
    assert_unchanged(before, kwargs)
    return info.value


def run_result_script(script: str, *, set_env: dict | None = None, drop_env=("CUDA_VISIBLE_DEVICES",),
                      timeout: int = 600, cwd: str | None = None, what: str = "subprocess") -> dict:
    """Runs ``python -c script`` in a fresh process (for settings such as ``TRITON_INTERPRET`` that must be
    set before import and must not leak into other tests) and returns the JSON of its last ``RESULT ``
    line; fails the test with the process output otherwise."""
    import json
    import os
    import subprocess
    import sys

    import pytest

    env = {k: v for k, v in os.environ.items() if k not in drop_env}
    env.update(set_env or {})
    p = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=timeout,
                       cwd=cwd)
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("RESULT ")]
    if p.returncode != 0 or not lines:
        pytest.fail(f"{what} failed (rc={p.returncode}):\n{p.stdout[-4000:]}\n{p.stderr[-8000:]}")
    return json.loads(lines[-1][len("RESULT "):])


# ---- attention: the float64 oracle and the magnitude-aware comparison --------------------------------

#: Elementwise (atol, rtol) by output dtype; fp8 inputs (bf16 output) keep their own pair
#: (docs/flash_attn_varlen_func.md, Accuracy).
ATTN_ELEMENTWISE = {torch.float16: (1.5e-2, 1e-2), torch.bfloat16: (1.5e-2, 1e-2), torch.float32: (1e-5, 1e-5)}
ATTN_ELEMENTWISE_FP8 = (3e-2, 5e-2)
#: Relative bounds by output dtype: (RMS over rows, max over rows) of the per-row relative error
#: ||out_row - ref_row||_2 / ||ref_row||_2 (a row: one query token of one head, over head_dim). A uniform 1%
#: scale error gives 1e-2 in every row; dropping the oldest 1% of keys of a long row gives about sqrt(1%) = 10%.
#: 16-bit outputs: bf16 rounding of the output and of P is about 0.2% RMS, so 5e-3 sits between noise and 1%.
ATTN_REL = {torch.float16: (5e-3, 2e-2), torch.bfloat16: (5e-3, 2e-2), torch.float32: (1e-5, 1e-4)}
LSE_ATOL = 2e-3


def attn_oracle(kw: dict, *, drop_oldest: float = 0.0):
    """The core float64 oracle (``atrex.reference.oracle.attention_oracle``: per-token block-table lookups,
    explicit loops; independent of every kernel and of ``core.reference``) on the vLLM kwargs ``kw``
    (CPU tensors). Returns (out [Tq, Hq, Dv] float64, lse [Hq, Tq] float64).

    ``drop_oldest`` (a mutation for the tests of the comparison): each sequence with at least
    ``1 / drop_oldest`` keys loses its ``floor(drop_oldest * seqlen_k)`` oldest keys, the remaining keys keep
    their mask (the masks are bottom-right aligned, so removing a prefix keeps every remaining key's
    visibility)."""
    from atrex.reference.oracle import attention_oracle

    kw = {n: (x.cpu() if isinstance(x, torch.Tensor) else x) for n, x in kw.items()}
    if drop_oldest:
        kw = _drop_oldest_keys(kw, drop_oldest)
    return attention_oracle(
        kw["q"], kw["k"], kw["v"], kw["cu_seqlens_q"], seqused_k=kw.get("seqused_k"),
        block_table=kw.get("block_table"), cu_seqlens_k=kw.get("cu_seqlens_k"),
        softmax_scale=kw.get("softmax_scale"), causal=bool(kw.get("causal", False)),
        window_size=tuple(kw.get("window_size") or (-1, -1)), softcap=kw.get("softcap") or 0.0,
        s_aux=kw.get("s_aux"), q_descale=kw.get("q_descale"), k_descale=kw.get("k_descale"),
        v_descale=kw.get("v_descale"))


def _drop_oldest_keys(kw: dict, frac: float) -> dict:
    """The same call, non-paged, with the oldest ``floor(frac * seqlen_k)`` keys of every sequence removed."""
    kw = dict(kw)
    ks, vs, lens = [], [], []
    nb = len(kw["cu_seqlens_q"]) - 1
    for b in range(nb):
        if kw.get("block_table") is not None:
            sk = int(kw["seqused_k"][b])
            j = torch.arange(sk)
            blk = kw["block_table"][b, j // kw["k"].shape[1]].long()
            kb, vb = kw["k"][blk, j % kw["k"].shape[1]], kw["v"][blk, j % kw["v"].shape[1]]
        else:
            k0, k1 = int(kw["cu_seqlens_k"][b]), int(kw["cu_seqlens_k"][b + 1])
            kb, vb = kw["k"][k0:k1], kw["v"][k0:k1]
        n = int(frac * kb.shape[0])
        ks.append(kb[n:])
        vs.append(vb[n:])
        lens.append(kb.shape[0] - n)
    kw["k"], kw["v"] = torch.cat(ks), torch.cat(vs)
    kw["cu_seqlens_k"] = torch.tensor([0, *torch.tensor(lens).cumsum(0).tolist()], dtype=torch.int32)
    kw["block_table"] = kw["seqused_k"] = None
    return kw


def attn_mismatches(out, lse, ref_out, ref_lse, *, fp8: bool = False, rows: int | None = None) -> list[str]:
    """Every way ``out`` / ``lse`` (a kernel's, any device and dtype) differ from the float64 oracle's
    ``ref_out`` / ``ref_lse`` beyond the contract; [] when they agree. Each entry starts with the check's name:

    * ``nan``: a NaN or infinity anywhere in ``out`` or ``lse`` (and in the oracle: the cases never ask for one);
    * ``elementwise``: ``|out - ref| <= atol + rtol |ref|`` fails (the Accuracy bounds of
      docs/flash_attn_varlen_func.md);
    * ``rel_rms`` / ``rel_max``: the RMS / the max over rows of ||out_row - ref_row|| / ||ref_row|| exceeds
      ``ATTN_REL`` (rows whose reference is not all zero);
    * ``zero_rows``: a row with no visible key (reference exactly 0) is not exactly 0;
    * ``lse_neginf``: the -inf pattern of the LSE differs; ``lse``: max |lse - ref| over finite rows > 2e-3.

    ``rows`` limits the comparison to the first ``rows`` query tokens (the rows of real sequences)."""
    bad = []
    o = out.detach().cpu().double()
    r = ref_out.detach().cpu().double()
    if rows is not None:
        o, r = o[:rows], r[:rows]
    if o.shape != r.shape:
        return [f"shape: {tuple(o.shape)} vs {tuple(r.shape)}"]
    n_bad = int((~torch.isfinite(o)).sum())
    if n_bad or not torch.isfinite(r).all():
        bad.append(f"nan: {n_bad} non-finite output elements (oracle finite: {bool(torch.isfinite(r).all())})")
    atol, rtol = ATTN_ELEMENTWISE_FP8 if fp8 else ATTN_ELEMENTWISE[out.dtype]
    excess = ((o - r).abs() - (atol + rtol * r.abs())).nan_to_num(nan=float("inf"))
    if excess.numel() and not bool((excess <= 0).all()):
        bad.append(f"elementwise: max excess over atol {atol} + rtol {rtol} |ref| is {excess.max().item():.3g}")
    o2, r2 = o.reshape(-1, o.shape[-1]), r.reshape(-1, r.shape[-1])
    rn = torch.linalg.vector_norm(r2, dim=-1)
    live = rn > 0
    if live.any():
        rel = (torch.linalg.vector_norm(o2 - r2, dim=-1)[live] / rn[live]).nan_to_num(nan=float("inf"))
        rms_bound, max_bound = ATTN_REL[out.dtype]
        rms, worst = rel.square().mean().sqrt().item(), rel.max().item()
        if not rms <= rms_bound:
            bad.append(f"rel_rms: RMS per-row relative error {rms:.3g} > {rms_bound}")
        if not worst <= max_bound:
            bad.append(f"rel_max: worst per-row relative error {worst:.3g} > {max_bound} "
                       f"(row {int(live.nonzero()[rel.argmax()])} of [tokens * heads])")
    if (~live).any() and not bool((o2[~live] == 0).all()):
        bad.append(f"zero_rows: {int((o2[~live] != 0).any(-1).sum())} rows with no visible key are not 0")
    if lse is not None:
        gl = lse.detach().cpu().double()
        rl = ref_lse.detach().cpu().double()
        if rows is not None:
            gl, rl = gl[:, :rows], rl[:, :rows]
        if gl.shape != rl.shape:
            return [*bad, f"lse shape: {tuple(gl.shape)} vs {tuple(rl.shape)}"]
        if gl.isnan().any() or rl.isnan().any() or torch.isposinf(gl).any():
            bad.append(f"nan: {int(gl.isnan().sum())} NaN / {int(torch.isposinf(gl).sum())} +inf LSE entries")
        if not torch.equal(torch.isneginf(gl), torch.isneginf(rl)):
            bad.append(f"lse_neginf: -inf rows differ at {int((torch.isneginf(gl) != torch.isneginf(rl)).sum())}")
        fin = torch.isfinite(rl) & torch.isfinite(gl)
        if fin.any():
            err = (gl[fin] - rl[fin]).abs().max().item()
            if not err <= LSE_ATOL:
                bad.append(f"lse: max abs error {err:.3g} > {LSE_ATOL}")
    return bad


def assert_attn_matches(out, lse, ref_out, ref_lse, *, fp8: bool = False, rows: int | None = None) -> None:
    """Fails unless ``attn_mismatches`` finds nothing (see there: NaN-aware, elementwise, relative, LSE)."""
    bad = attn_mismatches(out, lse, ref_out, ref_lse, fp8=fp8, rows=rows)
    assert not bad, "attention output differs from the float64 oracle:\n  " + "\n  ".join(bad)


def count_launcher_calls(monkeypatch) -> list:
    """Record each call of Triton's launcher object (``CudaLauncher.__call__``, the Python frame before its C
    launch) into the returned list: a launch plan's direct launches on a Triton whose C convention ATREX reads
    (``atrex_nvidia.launch_plan.C_FORMS``) never call it."""
    from triton.backends.nvidia.driver import CudaLauncher

    calls, orig = [], CudaLauncher.__call__

    def counting(self, *args, **kwargs):
        calls.append(self)
        return orig(self, *args, **kwargs)

    monkeypatch.setattr(CudaLauncher, "__call__", counting)
    return calls


def c_launch_expected() -> bool:
    """Whether this Triton's compiled kernels launch through their C entry in a launch plan."""
    from atrex_nvidia import launch_plan

    return launch_plan._C_FORM is not None


def bound_ids(memo) -> set:
    """Ids of the implementations ``memo`` (an operator's ``CallMemo``) keeps bound to a runner
    (``atrex.plugin.ImplSpec.bind``) for some class and per-call key."""
    from atrex.dispatch.registry import Bound

    return {i.id for cands in memo.by_count.values() for e in cands for i in e.chosen.values()
            if isinstance(i, Bound)}
