"""``atrex bench run OP --peer-path NAME=PATH``: a baseline library of another release, measured in the
same run as the installed one. A child process (``python -m atrex.validation.peer CONFIG``) puts PATH
first on ``sys.path`` (and ``PYTHONPATH``), so its imports of the library resolve to PATH's copy, and
runs the baselines whose module PATH provides (e.g. ``flash_attn.cute`` -> ``fa4_direct``) on the cases
the parent names, one at a time: the parent writes ``{"case": name}`` lines to its stdin and reads one
JSON line of rows back per case (checked against the reference, then timed, as in the parent). The rows
become ``<label>@<NAME>`` rows carrying the release found in PATH (its dist-info, else the module's
``__version__``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from atrex.errors import AtrexValueError


def parse(value: str) -> tuple[str, Path]:
    """``NAME=PATH`` -> (name, path); PATH must be a folder."""
    name, sep, path = value.partition("=")
    if not sep or not name or not path or "@" in name:
        raise AtrexValueError("--peer-path", value, "NAME=PATH (a name without '@', a folder)")
    p = Path(path).expanduser().resolve()
    if not p.is_dir():
        raise AtrexValueError("--peer-path", value, f"an existing folder ({p} is not one)")
    return name, p


def provides(path: Path, module: str) -> bool:
    base = path.joinpath(*module.split("."))
    return base.is_dir() or base.with_suffix(".py").is_file()


def labels_for(op: str, path: Path) -> dict[str, str | None]:
    """The op's baselines whose module ``path`` provides, as ``{label: None}`` (None: the registered maker)."""
    from atrex.validation.baselines import BASELINES, module_of

    return {lbl: None for lbl in BASELINES[op] if (mod := module_of(lbl)) and provides(path, mod[0])}


class Peer:
    """The parent's handle on one peer child (start, ``run_case``, ``close``)."""

    def __init__(self, name: str, path: Path, op: str, device, graph: bool, makers: dict[str, str | None]):
        self.name, self.path = name, Path(path)
        cfg = {"path": str(self.path), "op": op, "device": str(device), "graph": graph, "makers": makers}
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(self.path),
                                                                          os.environ.get("PYTHONPATH")]))}
        self.proc = subprocess.Popen([sys.executable, "-m", "atrex.validation.peer", json.dumps(cfg)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
        self.busy = False  # a case sent, its rows not read yet (the budget may interrupt the wait)
        hello = self._read()
        if "error" in hello:
            self.close()
            raise AtrexValueError("--peer-path", f"{name}={path}", hello["error"])
        self.versions: dict[str, dict] = hello["versions"]

    def _read(self) -> dict:
        line = self.proc.stdout.readline()
        if not line:
            code = self.proc.wait()
            return {"error": f"peer {self.name} exited with status {code} (its stderr is above)"}
        return json.loads(line)

    @property
    def summary(self) -> str:
        """``dist version`` of the release the peer runs (the first baseline's)."""
        v = next(iter(self.versions.values()), {})
        return f"{v.get('dist') or '?'} {v.get('version') or '?'}"

    def run_case(self, case: str) -> list[dict]:
        """The peer's rows for one case, labelled ``<label>@<name>`` with the release they ran."""
        if self.proc.poll() is not None:
            return [{"contender": f"*@{self.name}", "error": f"peer {self.name} is not running"}]
        self.busy = True
        self.proc.stdin.write(json.dumps({"case": case}) + "\n")
        self.proc.stdin.flush()
        msg = self._read()
        self.busy = False
        if "error" in msg:
            return [{"contender": f"*@{self.name}", "error": msg["error"]}]
        out = []
        for r in msg["rows"]:
            info = self.versions.get(r["contender"], {})
            out.append({**r, "contender": f"{r['contender']}@{self.name}",
                        "peer": {"name": self.name, "path": str(self.path), **info}})
        return out

    def close(self) -> None:
        """End the child: EOF on its stdin; killed at once when it is still measuring a case."""
        if self.proc.poll() is None and self.busy:
            self.proc.kill()
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()
                self.proc.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()


# ---- the child -----------------------------------------------------------------------------------

def _version(path: Path, module: str, dists: tuple[str, ...]) -> dict:
    """The release of ``module`` in ``path``: its dist-info there, else the module's ``__version__``."""
    from importlib import metadata

    norm = {d.lower().replace("_", "-") for d in dists}
    for dist in metadata.distributions(path=[str(path)]):
        name = (dist.metadata["Name"] or "").lower().replace("_", "-")
        if name in norm:
            return {"dist": dist.metadata["Name"], "version": dist.version}
    import importlib

    ver = getattr(importlib.import_module(module), "__version__", None)
    return {"dist": module.split(".")[0], "version": ver if ver not in (None, "0.0.0") else "unknown"}


def _resolve(op: str, path: Path, makers: dict[str, str | None]) -> tuple[dict, dict]:
    """(label -> maker, label -> release); a module not imported from ``path`` is an error."""
    import importlib
    import importlib.util

    from atrex.validation.baselines import BASELINES, module_of

    fns, versions = {}, {}
    for label, spec in makers.items():
        if spec:
            mod_name, _, attr = spec.partition(":")
            fns[label] = getattr(importlib.import_module(mod_name), attr)
        else:
            fns[label] = BASELINES[op][label]
        module, dists = module_of(label) or (spec.partition(":")[0], ())
        found = importlib.util.find_spec(module)
        where = (found.origin or next(iter(found.submodule_search_locations or []), "")) if found else ""
        if not str(where).startswith(str(path)):
            raise RuntimeError(f"{module} is imported from {where or 'nowhere'}, not from {path}")
        versions[label] = _version(path, module, dists)
    return fns, versions


def _case_rows(op: str, case_name: str, device, graph: bool, makers: dict) -> list[dict]:
    from atrex.errors import AtrexError
    from atrex.validation.bench import Reference, _normalize, baseline_entries, measure
    from atrex.validation.cases import cases

    case = next((c for c in cases(op) if c.name == case_name), None)
    if case is None:
        return [{"contender": "-", "error": f"no case {case_name!r}"}]
    kw = case.inputs(device, seed=1)
    try:
        target = _normalize(op, kw).target
    except AtrexError as exc:
        return [{"contender": "-", "error": str(exc).splitlines()[0]}]
    entries, rows = baseline_entries(op, kw, target, Reference(op, kw, device), makers, graph)
    return measure(entries, device, graph) + rows


def main(argv: list[str]) -> int:
    cfg = json.loads(argv[1])
    path = Path(cfg["path"])
    sys.path.insert(0, str(path))
    proto = os.fdopen(os.dup(1), "w")  # the protocol channel; anything else printed goes to stderr
    os.dup2(2, 1)

    def send(msg: dict) -> None:
        proto.write(json.dumps(msg) + "\n")
        proto.flush()

    try:
        import torch

        fns, versions = _resolve(cfg["op"], path, cfg["makers"])
        device = torch.device(cfg["device"])
    except Exception as exc:
        send({"error": f"{type(exc).__name__}: {exc}"[:300]})
        return 1
    send({"versions": versions})
    for line in sys.stdin:
        case = json.loads(line)["case"]
        try:
            send({"rows": _case_rows(cfg["op"], case, device, cfg["graph"], fns)})
        except Exception as exc:
            send({"error": f"{type(exc).__name__}: {exc}"[:300]})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
