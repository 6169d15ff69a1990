"""check/run functions of fake plugins for the registry tests (importable as `fakeplug_impls`).

Every function records what it saw in ``CALLS`` so that tests can prove which implementation ran
and which checks were consulted.
"""

from __future__ import annotations

from atrex.eligibility import Eligibility, Reason

CALLS: list[tuple[str, str]] = []


def reset() -> None:
    CALLS.clear()


def check_yes(call) -> Eligibility:
    CALLS.append(("check", "yes"))
    return Eligibility.yes()


def check_no(call) -> Eligibility:
    CALLS.append(("check", "no"))
    return Eligibility.no(Reason("fake.never", "q", "anything", "nothing (a fake that always declines)"))


def check_policy_only(call) -> Eligibility:
    CALLS.append(("check", "policy"))
    return Eligibility.no(Reason("policy.fake_shape", "max_seqlen_q", 1, "> 16 (a fake preference)"))


def check_two_reasons(call) -> Eligibility:
    CALLS.append(("check", "two"))
    return Eligibility.of([
        Reason("dtype", "q", str(call.dtype), "float8_e4m3fn only (fake)"),
        Reason("head_dim", "q", call.head_dim if hasattr(call, "head_dim") else None, "exactly 7 (fake)"),
    ])


def check_raises(call) -> Eligibility:
    CALLS.append(("check", "raises"))
    raise RuntimeError("kaboom inside a vendor check")


def check_returns_bool(call):
    CALLS.append(("check", "bool"))
    return True


def check_small_heads(call) -> Eligibility:
    """Eligible for at most 4 query heads (a domain boundary on a host int)."""
    CALLS.append(("check", "small_heads"))
    hq = getattr(call, "num_heads_q", None) or getattr(call, "num_heads", 0)
    if hq <= 4:
        return Eligibility.yes()
    return Eligibility.no(Reason("num_heads", "q", hq, "at most 4 query heads (fake)"))


def run_attn(call, out):
    """A fake attention launcher: writes zeros into ``out``; no LSE."""
    CALLS.append(("run", "attn"))
    out.zero_()
    return None


def run_gdn(call):
    CALLS.append(("run", "gdn"))
    import torch

    o = torch.zeros(call.q.shape[0], call.q.shape[1], call.v.shape[2], call.v.shape[3], dtype=call.q.dtype)
    return o, None


def prewarm_noop(call) -> None:
    CALLS.append(("prewarm", "noop"))


def bind_attn(call):
    """A fake ``bind``: a runner that records its class and per-call lengths, then runs as ``run_attn``."""
    CALLS.append(("bind", (call.total_q, call.max_seqlen_k)))

    def runner(call, out):
        CALLS.append(("runner", (call.total_q, call.max_seqlen_k)))
        out.zero_()
        return None

    return runner


def bind_none(call):
    """A fake ``bind`` that has no runner for the call (``run`` stays)."""
    CALLS.append(("bind", None))
    return None
