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
