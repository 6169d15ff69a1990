"""Fake CPU implementations for the validation-workflow tests (importable as `validation_fakes`)."""

from __future__ import annotations

from atrex.eligibility import Eligibility, Reason
from atrex.reference import flash_attn as ref_attn


def check_all(call) -> Eligibility:
    return Eligibility.yes()


def check_paged_only(call) -> Eligibility:
    if not call.paged:
        return Eligibility.no(Reason("paged", "block_table", None, "paged KV only"))
    return Eligibility.yes()


def run_correct(call, out):
    return ref_attn.run(call, out)


def run_wrong(call, out):
    """Off by a little everywhere: must fail the correctness gate."""
    lse = ref_attn.run(call, out)
    out.add_(0.25)
    return lse


def run_leaky(call, out):
    """Lets NaN page tails leak into the output: must fail the nan-pages probe."""
    lse = ref_attn.run(call, out)
    if call.paged and call.k.isnan().any():
        out.fill_(float("nan"))
    return lse


def run_crashes(call, out):
    raise RuntimeError("kernel assertion: head_dim 72 unsupported")


def run_sleepy(call, out):
    """Far slower than any budget a test gives: the bench's time budget must interrupt it."""
    import time

    time.sleep(60)
    return ref_attn.run(call, out)
