"""``nvidia.fa4``: FlashAttention-4 (CuTe DSL; releases b19 and b36) behind the vLLM contract on
sm90/sm100/sm103/sm120.

Registered by :mod:`atrex_nvidia._plugin` as ``check`` / ``run`` / ``prewarm``. The per-arch domains
are data in ``<arch>/fa4_table.py``, one per supported FA4 release (:data:`TABLES`); the installed
release picks the table and the call convention. The mapping vLLM -> FA4 (docs/flash_attn_varlen_func.md)
and the compiled-kernel cache live in ``common_utils/``. FA4 is never required at import time: when
``flash_attn.cute`` cannot be imported, or the installed release has no table, ``check`` declines
with reason ``requires`` naming the supported releases (probed once per process).
"""

from __future__ import annotations

import torch

from atrex.dispatch.registry import get_registry
from atrex.eligibility import Eligibility, Reason

from .common_utils.fa4_domain import (
    FA4_VERSIONS,
    Fa4Domain,
    check_fa4,
    check_key,
    fa4_requirement,
    fa4_table_version,
)
from .common_utils.fa4_launch import prewarm_call, run_call
from .sm90.fa4_table import TABLES as SM90
from .sm100.fa4_table import TABLES as SM100
from .sm103.fa4_table import TABLES as SM103
from .sm120.fa4_table import TABLES as SM120

__all__ = ["TABLES", "check", "domains", "prewarm", "run"]

#: FA4 release -> target arch -> FA4 domain (the archs of the ImplSpec in ``_plugin.py``)
TABLES: dict[str, dict[str, Fa4Domain]] = {
    v: {t[v].arch: t[v] for t in (SM90, SM100, SM103, SM120)} for v in FA4_VERSIONS}


def domains() -> dict[str, Fa4Domain]:
    """target arch -> domain of the installed FA4 release (the recommended one's when unsupported)."""
    return TABLES[fa4_table_version()]


#: check_key -> Eligibility. A serving engine repeats a handful of static configurations, so the
#: verdict is computed once per configuration (the key holds everything check_fa4 reads).
_verdicts: dict[tuple, Eligibility] = {}


def check(call) -> Eligibility:
    """Host-only eligibility of ``call`` for the installed FA4 release on the call's target (every
    reason listed)."""
    target = call.target
    table = domains()
    dom = table.get(target.arch) if target.family == "nvidia" else None
    if dom is None:
        return Eligibility.no(Reason("target", "q", target.id, "nvidia/" + ", nvidia/".join(table)))
    key = check_key(call, dom)
    if key is None:
        return check_fa4(call, dom)
    key = (key, dom.fa4_version, fa4_requirement())  # the table and the import probe are part of the verdict
    verdict = _verdicts.get(key)
    if verdict is None:
        verdict = _verdicts[key] = check_fa4(call, dom)
    if not verdict.ok and all(r.code.startswith("policy.") for r in verdict.reasons) \
            and not any(_taken_over(call, impl_id) for impl_id in _policy_takers(verdict, dom)):
        return _YES  # every implementation a policy names is disabled or declines this call: FA4 keeps it
    return verdict


_YES = Eligibility.yes()


def _policy_takers(verdict, dom) -> list[str]:
    """The implementations the ``policy.*`` reasons of ``verdict`` hand the call to."""
    takers = {"policy.decode_shape": dom.decode_policy, "policy.paged_tma_tail": dom.paged_tma_policy}
    return [takers[r.code].goes_to for r in verdict.reasons if takers.get(r.code) is not None]


_handover: dict[tuple, tuple] = {}  # (target id, impl id) -> (registry, enabled Impl or None)


def _taken_over(call, impl_id: str) -> bool:
    """Whether ``impl_id`` is an enabled candidate on the call's target and accepts the call (a ``policy.*``
    rule hands a call over only to an implementation that will run it). The candidate lookup is cached
    per registry (a new registry, e.g. after ``env.reload()`` with another ATREX_DISABLE, looks again)."""
    reg = get_registry()
    key = (call.target.id, impl_id)
    hit = _handover.get(key)
    if hit is None or hit[0] is not reg:
        found = [i for i in reg.candidates("flash_attn_varlen", call.target.id) if i.id == impl_id]
        hit = _handover[key] = (reg, found[0] if found else None)
    return hit[1] is not None and hit[1].safe_check(call).ok


def run(call, out: torch.Tensor):
    """Run on the call's device and current stream; returns the LSE ``[Hq, Tq]`` fp32 or None."""
    dom = domains()[call.target.arch]
    index = call.device.index
    if index is not None and index != torch.cuda.current_device():
        with torch.cuda.device(index):
            return run_call(call, out, dom)
    return run_call(call, out, dom)


def prewarm(call) -> None:
    """Compile the FA4 specialization of ``call`` (one run into scratch buffers); no-op when warm."""
    dom = domains()[call.target.arch]
    index = call.device.index
    if index is not None and index != torch.cuda.current_device():
        with torch.cuda.device(index):
            return prewarm_call(call, dom)
    return prewarm_call(call, dom)
