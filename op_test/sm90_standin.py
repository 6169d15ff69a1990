"""A GPU-free sm90 target for Triton: the launchers' specialisations are recorded, not compiled or launched.

``record_specialisations()`` makes Triton's active driver a stand-in that reports an sm90 target (device 0, stream
0, torch device cpu) and installs a ``knobs.runtime.jit_cache_hook`` that records each specialisation a launcher asks
for and returns before any compile or launch. Used by ``nvidia/test_triton_sm90_compile.py`` (the compile gate).
"""

import re

import torch
from triton import knobs
from triton.backends.compiler import GPUTarget
from triton.runtime import driver

SM90 = GPUTarget("cuda", 90, 32)


class Sm90StandIn:
    """Just enough of a Triton driver for the binder: an sm90 target, device 0, stream 0."""

    def get_current_target(self):
        return SM90

    def get_current_device(self):
        return 0

    def get_current_stream(self, device=None):
        return 0

    def get_active_torch_device(self):
        return torch.device("cpu")


def record_specialisations():
    """Activate the stand-in driver and the recording hook; returns the dict it fills:
    ``"<kernel name>|<key>" -> (JITFunction, compile options)``; the options include ``maxnreg`` where the launch
    set one."""
    driver.set_active(Sm90StandIn())
    specs = {}

    def record(*, key, repr, fn, compile, is_manual_warmup, already_compiled):
        # the launch's register cap (Triton's ``maxnreg``) is in the key's options, not in ``compile``
        cap = re.search(r"'maxnreg': (\d+)", key)
        if cap:
            compile = dict(compile, maxnreg=int(cap.group(1)))
        specs.setdefault(f"{fn.name}|{key}", (fn.jit_function, compile))
        return True  # handled: Triton neither compiles nor launches

    knobs.runtime.jit_cache_hook = record
    return specs
