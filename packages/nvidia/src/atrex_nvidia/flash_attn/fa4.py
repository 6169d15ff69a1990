"""``nvidia.fa4``: FlashAttention-4 b19 (CuTe DSL) behind the vLLM contract on sm90/sm100/sm103/sm120.

Registered by :mod:`atrex_nvidia._plugin` as ``check`` / ``run`` / ``prewarm``. The per-arch domains
are data in ``<arch>/fa4_table.py``; the mapping vLLM -> FA4 (CONTRACTS §1.9) and the compiled-kernel
cache live in ``common_utils/``. FA4 is never required at import time: when ``flash_attn.cute``
cannot be imported, ``check`` declines with reason ``requires`` (probed once per process).
"""

from __future__ import annotations

import torch

from atrex.dispatch.registry import get_registry
from atrex.eligibility import Eligibility, Reason

from .common_utils.fa4_domain import Fa4Domain, check_fa4, check_key, fa4_requirement
from .common_utils.fa4_launch import prewarm_call, run_call
from .sm90.fa4_table import DOMAIN as SM90
from .sm100.fa4_table import DOMAIN as SM100
from .sm103.fa4_table import DOMAIN as SM103
from .sm120.fa4_table import DOMAIN as SM120

__all__ = ["DOMAINS", "check", "prewarm", "run"]

#: target arch -> FA4 domain (the archs of the ImplSpec in ``_plugin.py``)
DOMAINS: dict[str, Fa4Domain] = {d.arch: d for d in (SM90, SM100, SM103, SM120)}


#: check_key -> Eligibility. A serving engine repeats a handful of static configurations, so the
#: verdict is computed once per configuration (the key holds everything check_fa4 reads).
_verdicts: dict[tuple, Eligibility] = {}


def check(call) -> Eligibility:
    """Host-only eligibility of ``call`` for FA4 b19 on the call's target (every reason listed)."""
    target = call.target
    dom = DOMAINS.get(target.arch) if target.family == "nvidia" else None
    if dom is None:
        return Eligibility.no(Reason("target", "q", target.id, "nvidia/" + ", nvidia/".join(DOMAINS)))
    key = check_key(call, dom)
    if key is None:
        return check_fa4(call, dom)
    key = (key, fa4_requirement())  # the import probe's answer is part of the verdict
    verdict = _verdicts.get(key)
    if verdict is None:
        verdict = _verdicts[key] = check_fa4(call, dom)
    if not verdict.ok and dom.decode_policy is not None and verdict.reasons[0].code == _POLICY \
            and len(verdict.reasons) == 1 and not _taken_over(call, dom.decode_policy.goes_to):
        return _YES  # the split-KV kernel is disabled or declines this call: FA4 keeps it
    return verdict


_POLICY = "policy.decode_shape"
_YES = Eligibility.yes()


_handover: dict[tuple, tuple] = {}  # (target id, impl id) -> (registry, enabled Impl or None)


def _taken_over(call, impl_id: str) -> bool:
    """Whether ``impl_id`` is an enabled candidate on the call's target and accepts the call (the decode
    policy hands a call over only to an implementation that will run it). The candidate lookup is cached
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
    dom = DOMAINS[call.target.arch]
    index = call.device.index
    if index is not None and index != torch.cuda.current_device():
        with torch.cuda.device(index):
            return run_call(call, out, dom)
    return run_call(call, out, dom)


def prewarm(call) -> None:
    """Compile the FA4 specialization of ``call`` (one run into scratch buffers); no-op when warm."""
    dom = DOMAINS[call.target.arch]
    index = call.device.index
    if index is not None and index != torch.cuda.current_device():
        with torch.cuda.device(index):
            return prewarm_call(call, dom)
    return prewarm_call(call, dom)
