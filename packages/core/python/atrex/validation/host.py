"""``atrex bench host``: host microseconds per eager call, as an engine calls between CUDA-graph pieces.

For each host case (a small paged decode, a small paged prefill, a small Gated-DeltaNet prefill and a decode step,
with the keywords vLLM passes) it times every eligible ATREX implementation through the public operator (the
implementation forced as ``ATREX_IMPL_<OP>`` forces it, so validation, the call-class memo and the launch plans
are what an engine's call goes through) and the peers called directly (FA4's ``flash_attn_varlen_func``, fla's
``chunk_gated_delta_rule`` / ``fused_recurrent_gated_delta_rule``, through ``baselines.py``). A timing is
``time.perf_counter`` around ``number`` calls with no synchronisation inside. Each contender is warmed up first
(its compilation is not timed); then the batches run round-robin over the contenders, each batch after a few
untimed calls and a device synchronisation, so a drift of the host (clock, caches, a neighbour) reaches every
contender alike. The record is the median of a contender's per-call batch means.
"""

from __future__ import annotations

import contextlib
import functools
import os
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch

from atrex.validation.cases import OP_IDS
from atrex.validation.report import HOST_PEER, HOST_TABLE_HEAD, host_table_rows


@dataclass(frozen=True)
class HostCase:
    name: str
    op: str  # flash_attn | chunk_gdn | gdn_decode
    make: Callable  # device -> the call's keyword arguments


def _vllm_attn(q_lens, k_lens, device, **kw):
    """An attention call with the keywords vLLM's FlashAttentionImpl passes (bf16: its expanded descales are
    accepted and ignored)."""
    from atrex.inputs import attn_inputs

    call = attn_inputs(q_lens, k_lens, num_heads_q=8, num_heads_k=2, head_dim=128, dtype=torch.bfloat16,
                       page_size=16, device=device, causal=True, out=True, seed=0, **kw)
    descale = torch.ones(1, 1, dtype=torch.float32, device=device).expand(len(q_lens), 2)
    call.update(softmax_scale=128 ** -0.5, window_size=(-1, -1), softcap=0.0, alibi_slopes=None,
                scheduler_metadata=None, fa_version=3, q_descale=descale, k_descale=descale, v_descale=descale,
                num_splits=0, s_aux=None)
    return call


def _gdn(device):
    from atrex.inputs import gdn_inputs

    kw = gdn_inputs(None, batch=1, seq_len=64, num_heads=16, num_v_heads=32, head_k_dim=128, head_v_dim=128,
                    device=device, seed=0, state_v_first=True)
    kw.update(use_qk_l2norm_in_kernel=True, output_final_state=True)
    return kw


def _gdn_step(device):
    from atrex.inputs import gdn_decode_inputs

    return gdn_decode_inputs([1] * 8, num_heads=16, num_v_heads=32, head_k_dim=128, head_v_dim=128, device=device,
                             seed=0)


HOST_CASES: tuple[HostCase, ...] = (
    HostCase("host/decode-b1-k64-p16", "flash_attn", lambda dev: _vllm_attn([1], [64], dev)),
    HostCase("host/prefill-2x64-p16", "flash_attn", lambda dev: _vllm_attn([64, 64], [64, 64], dev)),
    HostCase("host/gdn-T64-H16-HV32", "chunk_gdn", _gdn),
    HostCase("host/gdn-decode-b8-H16-HV32", "gdn_decode", _gdn_step),
)


def _operator(op: str):
    import atrex

    return {"flash_attn": atrex.flash_attn_varlen_func, "chunk_gdn": atrex.chunk_gated_delta_rule,
            "gdn_decode": atrex.fused_recurrent_gated_delta_rule}[op]


@contextlib.contextmanager
def forced(op: str, impl_id: str):
    """Dispatch ``op`` to ``impl_id`` for the block (as ``ATREX_IMPL_<OP>``), restoring the settings after."""
    from atrex import env

    var = "ATREX_IMPL_" + env.OPS[OP_IDS[op]]
    old = os.environ.get(var)
    os.environ[var] = impl_id
    env.reload()
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(var, None)
        else:
            os.environ[var] = old
        env.reload()


def eligible(op: str, kw: dict, device) -> list[str]:
    """The ATREX implementations that accept the call on its device (the reference only on the CPU)."""
    from atrex.dispatch.registry import get_registry
    from atrex.validation.bench import _normalize

    call = _normalize(op, kw)
    return [i.id for i in get_registry().all_candidates(OP_IDS[op], call.target.id)
            if (not i.is_reference or device.type == "cpu") and i.safe_check(call).ok]


#: untimed calls before each batch (after switching contenders the call-class memo refills on the first and binds
#: the implementation's runner on the second)
SETTLE = 5


def per_call_us(fn: Callable[[], object], device, *, number: int) -> float:
    """Mean host microseconds of ``number`` eager calls of ``fn`` (no sync inside), after ``SETTLE`` untimed calls
    and a device synchronisation (outside the timing: the batch starts with an empty queue)."""
    for _ in range(SETTLE):
        fn()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    t0 = time.perf_counter()
    for _ in range(number):
        fn()
    return (time.perf_counter() - t0) / number * 1e6


def time_round_robin(contenders: list, device, *, number: int, batches: int, warmup: int) -> list[dict]:
    """``{contender, host_us}`` (median batch) or ``{contender, error}`` for each ``(label, fn, context)`` of
    ``contenders``; ``context()`` is entered around every call of ``fn`` (a forced implementation)."""
    runs, errors = {}, {}
    live = []
    for label, fn, context in contenders:
        try:
            with context():
                for _ in range(warmup):
                    fn()
            live.append((label, fn, context))
            runs[label] = []
        except Exception as exc:
            errors[label] = f"{type(exc).__name__}: {exc}"[:300]
    for _ in range(batches):
        for label, fn, context in list(live):
            try:
                with context():
                    runs[label].append(per_call_us(fn, device, number=number))
            except Exception as exc:
                errors[label] = f"{type(exc).__name__}: {exc}"[:300]
                live.remove((label, fn, context))
        if device.type == "cuda":
            torch.cuda.synchronize(device)
    return [{"contender": label, "error": errors[label]} if label in errors else
            {"contender": label, "host_us": statistics.median(runs[label])} for label, _, _ in contenders]


def _peers(op: str, kw: dict, target) -> list[tuple[str, Callable | str]]:
    """(label, timed call or skip reason) of the peer of ``op`` (FA4 / fla, called directly), labelled as the
    report's ``HOST_PEER`` (the row its "/ peer" column divides by)."""
    from atrex.validation import baselines as B

    make = {"flash_attn": B.fa4_direct, "chunk_gdn": B.fla_chunk, "gdn_decode": B.fla_recurrent}[op]
    label = HOST_PEER[op]
    try:
        made = make(kw, target)
    except Exception as exc:  # a peer that cannot express the call is reported, not fatal
        return [(label, f"{type(exc).__name__}: {exc}"[:200])]
    return [(label, str(made) if isinstance(made, B.Skip) else made.fn)]


def measure_case(case: HostCase, device, *, number: int, batches: int, warmup: int) -> list[dict]:
    """One case's rows: ``{contender, host_us}`` per ATREX implementation (through the operator, forced) and per
    peer, ``{contender, skipped}`` / ``{contender, error}`` for the others."""
    from atrex.validation.bench import _normalize

    kw = case.make(device)
    fn = _operator(case.op)
    call = functools.partial(fn, **kw)
    contenders = [(impl_id, call, functools.partial(forced, case.op, impl_id))
                  for impl_id in eligible(case.op, kw, device)]
    skipped = []
    for label, peer in _peers(case.op, kw, _normalize(case.op, kw).target):
        if isinstance(peer, str):
            skipped.append({"contender": label, "skipped": peer})
        else:
            contenders.append((label, peer, contextlib.nullcontext))
    return time_round_robin(contenders, device, number=number, batches=batches, warmup=warmup) + skipped


def run_host(device, *, match: str | None = None, number: int = 200, batches: int = 11, warmup: int = 50,
             common: dict | None = None) -> list[dict]:
    """The records of every host case (``match``: a substring of the case names): provenance, ``bench: host``,
    the case, its operator and the timing options on each row."""
    records = []
    for case in HOST_CASES:
        if match is not None and match not in case.name:
            continue
        for row in measure_case(case, device, number=number, batches=batches, warmup=warmup):
            records.append({**(common or {}), "bench": "host", "op": case.op, "case": case.name, "number": number,
                            "batches": batches, **row})
    return records


def table(records: list[dict]) -> str:
    """The records as markdown: case, contender, host us per call, its share of the peer's (skips and errors as
    notes)."""
    lines = HOST_TABLE_HEAD + host_table_rows(records)
    notes = [f"- {r['case']} / {r['contender']}: {r.get('skipped') or r.get('error')}" for r in records
             if "host_us" not in r]
    return "\n".join(lines + ([""] + notes if notes else [])) + "\n"
