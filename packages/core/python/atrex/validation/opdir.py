"""Operators defined in the atrex-bench layout (``data/<op>/``): ``reference.py`` (a ``Model``),
``input.py`` (``_make_inputs(**input_kwargs)``), ``shapes.json``, ``metadata.json`` and optionally
``roofline.json``. ``atrex verify --op-dir DIR`` checks an ATREX operator against such a reference
over its shapes, with the evaluator's comparison (float64 allclose, atol 1e-2, rtol 0.05 by default)."""

from __future__ import annotations

import importlib.util
import inspect
import json
from dataclasses import dataclass
from pathlib import Path

import torch

from atrex.errors import AtrexValueError

ATOL, RTOL = 1e-2, 0.05
REQUIRED = ("reference.py", "input.py", "shapes.json", "metadata.json")

#: ATREX operators an external op can be mapped onto (by name or by metadata origin symbol).
ATREX_OPS = {
    "chunk_gated_delta_rule": "atrex.api.chunk_gdn:chunk_gated_delta_rule",
    "flash_attn_varlen_func": "atrex.api.flash_attn:flash_attn_varlen_func",
}


@dataclass
class OpDir:
    path: Path
    model_cls: type
    make_inputs: object
    shapes: dict
    metadata: dict
    roofline: dict | None

    @property
    def name(self) -> str:
        return str(self.metadata.get("id") or self.path.name)


def _load_module(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load(path: str | Path) -> OpDir:
    path = Path(path)
    missing = [f for f in REQUIRED if not (path / f).is_file()]
    if missing:
        raise AtrexValueError("--op-dir", str(path), f"an atrex-bench operator folder with {', '.join(REQUIRED)} "
                              f"(missing: {', '.join(missing)})")
    ref = _load_module(path / "reference.py", f"atrex_opdir_{path.name}_reference")
    inp = _load_module(path / "input.py", f"atrex_opdir_{path.name}_input")
    if not hasattr(ref, "Model") or not hasattr(inp, "_make_inputs"):
        raise AtrexValueError("--op-dir", str(path), "reference.py defining Model and input.py defining _make_inputs")
    roof = path / "roofline.json"
    return OpDir(path, ref.Model, inp._make_inputs, json.loads((path / "shapes.json").read_text()),
                 json.loads((path / "metadata.json").read_text()),
                 json.loads(roof.read_text()) if roof.is_file() else None)


def resolve_atrex_op(op_dir: OpDir, name: str | None):
    """The ATREX callable to check: ``--atrex-op`` if given, else from metadata origin symbol."""
    if name is None:
        origin = json.dumps(op_dir.metadata.get("origin", {}))
        name = next((n for n in ATREX_OPS if n in origin), None)
    if name not in ATREX_OPS:
        raise AtrexValueError("--atrex-op", name, "one of " + ", ".join(ATREX_OPS) + " (or an origin symbol naming one)")
    module, _, attr = ATREX_OPS[name].partition(":")
    return name, getattr(importlib.import_module(module), attr)


def _flatten(x) -> list[torch.Tensor]:
    if isinstance(x, torch.Tensor):
        return [x]
    if isinstance(x, (list, tuple)):
        return [t for item in x for t in _flatten(item) if t is not None]
    return []


def check(op_dir: OpDir, fn, device, atol: float = ATOL, rtol: float = RTOL, seed: int = 0) -> list[dict]:
    """Run reference and ATREX over every shape; returns one result dict per shape."""
    params = set(inspect.signature(fn).parameters)
    results = []
    for key in sorted(op_dir.shapes, key=lambda s: int(s) if s.isdigit() else s):
        shape = op_dir.shapes[key]
        init_kwargs = shape.get("init_kwargs", {})
        input_kwargs = shape.get("input_kwargs", {})
        torch.manual_seed(seed + (int(key) if key.isdigit() else 0))
        inputs = op_dir.make_inputs(**input_kwargs)
        inputs = {k: (v.to(device) if isinstance(v, torch.Tensor) else v) for k, v in inputs.items()}
        model = op_dir.model_cls(**init_kwargs).to(device)
        with torch.no_grad():
            expected = _flatten(model(**inputs))
            call_kwargs = {k: v for k, v in {**init_kwargs, **inputs}.items() if k in params}
            try:
                got = _flatten(fn(**call_kwargs))
            except Exception as exc:
                results.append({"shape": key, "ok": False, "detail": f"{type(exc).__name__}: {exc}"[:200]})
                continue
        ok, worst = len(got) >= len(expected), 0.0
        for e, g in zip(expected, got):
            if e.shape != g.shape:
                ok = False
                worst = float("inf")
                break
            e64, g64 = e.double(), g.double()
            ok = ok and bool(torch.allclose(g64, e64, atol=atol, rtol=rtol))
            worst = max(worst, (g64 - e64).abs().max().item() if e.numel() else 0.0)
        results.append({"shape": key, "ok": ok, "detail": f"max|err| {worst:.2e} (atol {atol}, rtol {rtol})"})
    return results
