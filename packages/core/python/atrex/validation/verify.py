"""``atrex verify <op>``: every implementation eligible on this device against the reference over the
operator's case table, plus numerical probes and the check/run agreement sweep.

On a CPU the only implementation is the torch reference itself; it is then held against the
independent float64 oracles, so the command is meaningful everywhere.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from atrex.dispatch.registry import get_registry
from atrex.errors import AtrexError
from atrex.reference.oracle import attention_oracle, gdn_decode_oracle, gdn_oracle, rel_rmse
from atrex.validation.cases import OP_IDS, Case, cases

# docs/<operator>.md "Accuracy", by output dtype; never loosened.
ATTN_TOL = {torch.bfloat16: (1.5e-2, 1e-2), torch.float16: (1.5e-2, 1e-2), torch.float32: (1e-5, 1e-5)}
FP8_TOL = (3e-2, 5e-2)  # fp8 inputs vs the reference from the same fp8 inputs with descales
LSE_ATOL = 2e-3
GDN_RMSE = 5e-3


@dataclass
class Row:
    case: str
    impl: str
    check: str  # "gate" or "probe:<name>" or "sweep"
    ok: bool | None  # None = not applicable (ineligible)
    detail: str

    @property
    def status(self) -> str:
        return "n/a" if self.ok is None else ("PASS" if self.ok else "FAIL")


# ---- references ------------------------------------------------------------------------------

def _normalize(op: str, kw: dict):
    if op == "flash_attn":
        from atrex.api.flash_attn import normalize

        return normalize(**kw)
    if op == "gdn_decode":
        from atrex.api.gdn_decode import normalize

        return normalize(**kw)
    from atrex.api.chunk_gdn import normalize_gdn_call

    return normalize_gdn_call(**kw)


def reference_result(op: str, kw: dict, device):
    """The oracle for one call: float64 oracles on the CPU, the fp32 torch reference elsewhere."""
    if op == "flash_attn":
        if device.type == "cpu":
            out, lse = attention_oracle(
                kw["q"], kw["k"], kw["v"], kw["cu_seqlens_q"], seqused_k=kw.get("seqused_k"),
                block_table=kw.get("block_table"), cu_seqlens_k=kw.get("cu_seqlens_k"),
                softmax_scale=kw.get("softmax_scale"), causal=kw.get("causal", False),
                window_size=kw.get("window_size"), softcap=kw.get("softcap", 0.0), s_aux=kw.get("s_aux"),
                q_descale=kw.get("q_descale"), k_descale=kw.get("k_descale"), v_descale=kw.get("v_descale"))
            return out, lse
        from atrex.reference import flash_attn as ref

        call = _normalize(op, {**kw, "out": None})
        out = torch.empty(call.total_q, call.num_heads_q, call.head_dim_v, dtype=torch.float32, device=device)
        lse = ref.run(call._replace(return_lse=True), out)
        return out, lse
    if op == "gdn_decode":  # never touches the caller's pool
        if device.type == "cpu":
            return gdn_decode_oracle(**kw)
        from atrex.reference import gdn_decode as dref

        return dref.run(_normalize(op, {**kw, "initial_state": kw["initial_state"].clone()}))
    if device.type == "cpu":
        return gdn_oracle(kw["q"], kw["k"], kw["v"], kw["g"], kw["beta"], scale=kw.get("scale"),
                          initial_state=kw.get("initial_state"), state_v_first=kw.get("state_v_first", False),
                          cu_seqlens=kw.get("cu_seqlens"),
                          use_qk_l2norm_in_kernel=kw.get("use_qk_l2norm_in_kernel", False))
    from atrex.reference import chunk_gdn as ref

    call = _normalize(op, {**kw, "output_final_state": True})
    return ref.run(call)


def run_impl(op: str, impl, kw: dict, poison_out: bool = True):
    """Run one implementation on a call; for attention the output is NaN-poisoned first, so an element
    the kernel never writes fails the comparison."""
    from atrex.api import chunk_gdn, flash_attn, gdn_decode

    if op == "gdn_decode":  # on a copy of the pool: every run starts from the same state
        return gdn_decode.run_call(_normalize(op, {**kw, "initial_state": kw["initial_state"].clone()}), impl)
    call = _normalize(op, kw)
    if op == "flash_attn":
        out = call.out
        if out is None:
            out = torch.empty(call.total_q, call.num_heads_q, call.head_dim_v, dtype=call.out_dtype, device=call.device)
        if poison_out:
            out.fill_(float("nan"))
        res = flash_attn.run_call(call._replace(out=out), impl)
        return res if call.return_lse else (res, None)
    return chunk_gdn.run_call(call, impl)


def compare(op: str, kw: dict, got, ref) -> tuple[bool, str]:
    if op == "flash_attn":
        out, lse = got
        r_out, r_lse = ref
        tq = int(kw["cu_seqlens_q"][-1])
        fp8 = kw["q"].dtype in (torch.float8_e4m3fn, getattr(torch, "float8_e5m2", None))
        atol, rtol = FP8_TOL if fp8 else ATTN_TOL[out.dtype]
        a, b = out[:tq].double().cpu(), r_out[:tq].double().cpu()
        err = (a - b).abs()
        bad = ~(err <= atol + rtol * b.abs())
        detail = f"max|err| {err.max().item() if err.numel() else 0:.2e}"
        ok = not bool(bad.any())
        if lse is not None:
            l1, l2 = lse[:, :tq].double().cpu(), r_lse[:, :tq].double().cpu()
            inf = torch.isinf(l2)
            lse_ok = torch.equal(torch.isinf(l1), inf) and bool(((l1 - l2).abs()[~inf] <= LSE_ATOL).all())
            ok = ok and lse_ok
            detail += f", lse {'ok' if lse_ok else 'MISMATCH'}"
        return ok, detail
    o, s = got
    r_o, r_s = ref
    e_o = rel_rmse(r_o, o)
    ok = e_o <= GDN_RMSE or (r_o.double().cpu() - o.double().cpu()).abs().max().item() <= 1e-6
    detail = f"rmse(o) {e_o:.2e}"
    if s is not None:
        e_s = rel_rmse(r_s, s)
        ok = ok and (e_s <= GDN_RMSE or (r_s.double().cpu() - s.double().cpu()).abs().max().item() <= 1e-6)
        detail += f", rmse(state) {e_s:.2e}"
    return ok, detail


# ---- probes ------------------------------------------------------------------------------------

def poison_pages(kw: dict, fill: float = float("nan")) -> dict | None:
    """``fill`` (NaN by default) in page slots beyond seqused_k and in blocks no sequence references
    (paged calls only)."""
    if kw.get("block_table") is None:
        return None
    k, v = kw["k"].clone(), kw["v"].clone()
    page = k.shape[1]
    used = set()
    table = kw["block_table"].cpu()
    nan = fill
    for b, n in enumerate(kw["seqused_k"].cpu().tolist()):
        for i in range(math.ceil(n / page)):
            blk = int(table[b, i])
            used.add(blk)
            if n - i * page < page:
                k[blk, n - i * page:] = nan
                v[blk, n - i * page:] = nan
    free = torch.tensor(sorted(set(range(k.shape[0])) - used), dtype=torch.long, device=k.device)
    if free.numel():
        k[free] = nan
        v[free] = nan
    return {**kw, "k": k, "v": v}


def poison_allocator(device) -> None:
    """Leave NaN in the caching allocator's free blocks so a workspace that is read before it is
    written shows up."""
    if device.type != "cuda":
        return
    free, _ = torch.cuda.mem_get_info(device)
    n = min(free // 4, 1 << 30) // 4
    blob = torch.full((n,), float("nan"), dtype=torch.float32, device=device)
    del blob


def _scaled(kw: dict, factor: float) -> dict:
    q = kw["q"]
    return {**kw, "q": (q.float() * factor).to(q.dtype)}


# ---- the agreement sweep -------------------------------------------------------------------------

def sweep_variants(op: str, device) -> list[tuple[str, dict]]:
    """Calls around every domain boundary the targets' check() tables declare: small shapes, so that
    each accepted one can actually run."""
    from atrex.inputs import attn_inputs, gdn_inputs

    out = []
    if op == "flash_attn":
        for d in (40, 64, 72, 80, 88, 96, 128, 192, 256):
            for page in (None, 1, 16, 48, 64, 128):
                out.append((f"d{d}-page{page}", attn_inputs([1, 3], [70, 20], num_heads_q=4, num_heads_k=2,
                                                            head_dim=d, page_size=page, device=device)))
        for dtype in (torch.float16, torch.float8_e4m3fn):
            out.append((f"{dtype}", attn_inputs([1, 2], [33, 9], num_heads_q=8, num_heads_k=1, head_dim=128,
                                                 page_size=16, dtype=dtype, device=device)))
        for name, extra in (("window", dict(window_size=[15, 0])), ("softcap", dict(softcap=30.0)),
                            ("sinks", dict(sinks=True)), ("lse", dict(return_lse=True)),
                            ("noncausal", dict(causal=False)), ("gqa6", dict(num_heads_q=12, num_heads_k=2))):
            p = dict(num_heads_q=8, num_heads_k=2, head_dim=128, page_size=16, device=device)
            p.update(extra)
            out.append((name, attn_inputs([2, 5], [40, 5], **p)))
        return out
    if op == "gdn_decode":
        from atrex.inputs import gdn_decode_inputs

        for k in (32, 64, 100, 128, 256):
            out.append((f"K{k}", gdn_decode_inputs([1, 1, 1], num_heads=1, num_v_heads=2, head_k_dim=k, head_v_dim=k,
                                                   padded=1, device=device)))
        for name, extra in (("fp16", dict(dtype=torch.float16)), ("kfirst", dict(state_v_first=False)),
                            ("bf16-pool", dict(pool="bf16")), ("mtp", dict(mtp=True)),
                            ("returned", dict(inplace=False, mtp=True)), ("no-beta", dict(beta=False)),
                            ("gva8", dict(num_heads=1, num_v_heads=8))):
            p = dict(num_heads=2, num_v_heads=4, head_k_dim=64, head_v_dim=64, padded=1, device=device)
            p.update(extra)
            out.append((name, gdn_decode_inputs([2, 1, 3], **p)))
        return out
    for k in (60, 64, 100, 128, 256):
        out.append((f"K{k}", gdn_inputs([3, 70], num_heads=2, num_v_heads=4, head_k_dim=k, head_v_dim=k,
                                        device=device)))
    for name, extra in (("fp16", dict(dtype=torch.float16)), ("kfirst", dict(state_v_first=False)),
                        ("nostate", dict(initial_state=None)), ("int64", dict(cu_dtype=torch.int64)),
                        ("gva8", dict(num_heads=1, num_v_heads=8))):
        p = dict(num_heads=2, num_v_heads=4, head_k_dim=64, head_v_dim=64, state_v_first=True, device=device)
        p.update(extra)
        out.append((name, gdn_inputs([65, 1, 0], **p)))
    return out


# ---- the command ---------------------------------------------------------------------------------

def verify(op: str, device, size: str | None = "small", match: str | None = None,
           selected: list[Case] | None = None, sweep: bool = True) -> list[Row]:
    op_id = OP_IDS[op]
    reg = get_registry()
    rows: list[Row] = []
    for case in selected if selected is not None else cases(op, size, match):
        kw = case.inputs(device, seed=1)
        try:
            call = _normalize(op, kw)
        except AtrexError as exc:
            rows.append(Row(case.name, "-", "gate", False, f"invalid case: {exc}"))
            continue
        ref = reference_result(op, kw, device)
        for impl in reg.all_candidates(op_id, call.target.id):
            elig = impl.safe_check(call)
            if not elig.ok:
                rows.append(Row(case.name, impl.id, "gate", None, "; ".join(str(r) for r in elig.reasons)[:160]))
                continue
            rows.extend(_gates(op, case, kw, impl, ref, device))
    if sweep:
        rows.extend(_sweep(op, device, reg, op_id))
    return rows


def _gates(op, case, kw, impl, ref, device) -> list[Row]:
    rows = []
    try:
        got = run_impl(op, impl, kw)
        ok, detail = compare(op, kw, got, ref)
    except Exception as exc:  # a failure inside an eligible implementation is the finding
        return [Row(case.name, impl.id, "gate", False, f"raised {type(exc).__name__}: {exc}"[:200])]
    rows.append(Row(case.name, impl.id, "correctness", ok, detail))
    if op == "flash_attn":
        poisoned = poison_pages(kw)
        if poisoned is not None:
            bad = run_impl(op, impl, poisoned)
            same = torch.equal(bad[0], got[0]) and (bad[1] is None or torch.equal(bad[1], got[1]))
            rows.append(Row(case.name, impl.id, "probe:nan-pages", same, "bitwise equal" if same else "CHANGED"))
        big = _scaled(kw, 64.0)
        ok_big, d_big = compare(op, big, run_impl(op, impl, big), reference_result(op, big, device))
        rows.append(Row(case.name, impl.id, "probe:large-magnitude", ok_big, d_big))
    else:
        strong = {**kw, "g": torch.full_like(kw["g"], -20.0)}
        ok_s, d_s = compare(op, strong, run_impl(op, impl, strong), reference_result(op, strong, device))
        rows.append(Row(case.name, impl.id, "probe:decay-20", ok_s, d_s))
        flat = {**kw, "g": torch.zeros_like(kw["g"])}
        ok_f, d_f = compare(op, flat, run_impl(op, impl, flat), reference_result(op, flat, device))
        rows.append(Row(case.name, impl.id, "probe:decay-0", ok_f, d_f))
    if device.type == "cuda":
        poison_allocator(device)
        again = run_impl(op, impl, kw)
        same = all(torch.equal(a, b) for a, b in zip(again, got) if a is not None)
        rows.append(Row(case.name, impl.id, "probe:nan-workspace", same, "bitwise equal" if same else "CHANGED"))
    return rows


def _sweep(op, device, reg, op_id) -> list[Row]:
    """Everything a check accepts must run and match the reference."""
    rows = []
    for name, kw in sweep_variants(op, device):
        try:
            call = _normalize(op, kw)
        except AtrexError as exc:
            rows.append(Row(f"sweep/{name}", "-", "sweep", None, f"rejected by the contract: {exc}"[:120]))
            continue
        ref = None
        for impl in reg.all_candidates(op_id, call.target.id):
            if not impl.safe_check(call).ok:
                continue
            if ref is None:
                ref = reference_result(op, kw, device)
            try:
                ok, detail = compare(op, kw, run_impl(op, impl, kw), ref)
            except Exception as exc:
                ok, detail = False, f"accepted by check, then raised {type(exc).__name__}: {exc}"[:200]
            rows.append(Row(f"sweep/{name}", impl.id, "sweep", ok, detail))
    return rows


def render(rows: list[Row]) -> str:
    head = f"{'case':<40} {'implementation':<24} {'check':<22} {'status':<6} detail"
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(f"{r.case:<40} {r.impl:<24} {r.check:<22} {r.status:<6} {r.detail}")
    n_fail = sum(1 for r in rows if r.ok is False)
    n_pass = sum(1 for r in rows if r.ok)
    lines.append(f"{n_pass} passed, {n_fail} failed")
    return "\n".join(lines)
