"""Which Triton specialisations ATREX's own kernels have launched in this process.

A Triton kernel compiles on the first launch of each specialisation; inside CUDA-graph capture that
compile fails in the runtime. The launchers of ``nvidia.decode_splitkv`` and ``nvidia.gdn_sm90`` key
every launch conservatively (a superset of what Triton specialises on), ask :meth:`WarmRecord.missing`
before allocating or launching, raise :class:`atrex.errors.AtrexCaptureError` under capture when a key
is missing, and :meth:`WarmRecord.add` the keys after an eager launch.

The record also holds the launchers' per-call launch plans (:meth:`WarmRecord.plan`, see ``launch_plan.py``):
a plan exists only for a call class whose launches all ran, so a call that finds one needs no capture check, and
clearing or replacing the record (tests) drops the plans with the keys. And per launch key, the compiled kernel
bound for direct launches (:meth:`WarmRecord.direct`): a new call class whose launch keys all launched before
(e.g. only ``max_seqlen_k`` changed the plan's inputs) builds its plan without going through Triton's JIT.
"""

from __future__ import annotations

import threading

import torch

try:
    from triton.tools.tensor_descriptor import TensorDescriptor
except ImportError:  # Triton absent or too old for host descriptors: no argument is one
    class TensorDescriptor:
        """Stand-in: no argument is an instance."""

__all__ = ["WarmRecord", "launch_key"]


def _spec(a):
    """What Triton may specialise one runtime argument on: a tensor's dtype and 16-byte alignment; an
    int being 1, a multiple of 16, or fitting int32; a TMA tensor descriptor's dtype, block shape and
    (conservatively) its shape and strides as ints. A dtype stands for a buffer the launcher allocates
    itself (always aligned). Floats and None contribute nothing."""
    if isinstance(a, torch.Tensor):
        return a.dtype, a.data_ptr() % 16 == 0
    if isinstance(a, bool):
        return a
    if isinstance(a, int):
        return a == 1, a % 16 == 0, -(1 << 31) <= a < (1 << 31)
    if isinstance(a, torch.dtype):
        return a
    if isinstance(a, TensorDescriptor):
        # a host TMA descriptor: Triton keys on its dtype and block shape; its shape and strides are ints
        return (a.base.dtype, tuple(a.block_shape), a.padding, a.base.data_ptr() % 16 == 0,
                tuple(_spec(int(x)) for x in (*a.shape, *a.strides)))
    return None


def launch_key(kernel, args, meta: dict) -> tuple:
    """Key of one launch: kernel name, per-argument specialisation, constexprs, launch options and the arguments
    the kernel is told not to specialise on (two JIT functions of one kernel can differ only there)."""
    return (kernel.__name__, tuple(_spec(a) for a in args), tuple(sorted(meta.items())),
            tuple(str(x) for x in getattr(kernel, "do_not_specialize", None) or ()))


class WarmRecord:
    """A thread-safe set of launch keys (one per launcher module)."""

    _MAX_SIGNATURES = 4096  # bound on the per-call signature memo (beyond it calls just compute their keys)
    _MAX_PLANS = 4096  # bound on the launch plans (when full they are dropped: classes in use come back cheaply)

    def __init__(self):
        self._keys: set = set()
        self._sigs: set = set()
        self._plans: dict = {}
        self._directs: dict = {}
        self._lock = threading.Lock()
        self.epoch = 0  # counts clear(): a runner holding a plan sees that it was dropped

    def direct(self, key):
        """The compiled kernel kept for the launch key ``key`` (a ``launch_plan.Direct``), or None."""
        return self._directs.get(key)

    def keep_direct(self, key, direct) -> None:
        if direct is not None:
            with self._lock:
                if len(self._directs) < self._MAX_PLANS:
                    self._directs[key] = direct

    def plan(self, key):
        """The launch plan kept for the call class ``key`` (None: the class has not launched yet)."""
        return self._plans.get(key)

    def keep_plan(self, key, plan) -> None:
        """Keep ``plan`` for ``key`` after the call's launches succeeded (their keys already added)."""
        with self._lock:
            if len(self._plans) >= self._MAX_PLANS:  # (eager serving: a class per max_seqlen_k seen)
                self._plans.clear()
            self._plans[key] = plan

    def plans(self) -> int:
        return len(self._plans)

    def seen(self, signature) -> bool:
        """Whether a call with this launcher-defined ``signature`` already launched eagerly. A launcher may use it
        to skip computing its launch keys only if the signature determines every key of the call (all
        argument specialisations, constexprs and launch options)."""
        return signature in self._sigs

    def mark(self, signature) -> None:
        """Record ``signature`` after the call's launches succeeded and their keys were added."""
        with self._lock:
            if len(self._sigs) < self._MAX_SIGNATURES:
                self._sigs.add(signature)

    def missing(self, keys) -> list:
        return [k for k in keys if k not in self._keys]

    def add(self, keys) -> None:
        if keys:
            with self._lock:
                self._keys.update(keys)

    def keys(self) -> tuple:
        return tuple(self._keys)

    def clear(self) -> None:
        with self._lock:
            self._keys.clear()
            self._sigs.clear()
            self._plans.clear()
            self._directs.clear()
            self.epoch += 1

    def __len__(self) -> int:
        return len(self._keys)
