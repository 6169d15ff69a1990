"""``import atrex`` is light: no torch, no vendor code, no discovery.

Checked in a fresh interpreter (this test process has long imported torch).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

import atrex

SCRIPT = textwrap.dedent(
    """
    import json, sys

    def vendor():
        return sorted(m for m in sys.modules if m.split(".")[0] in ("atrex_nvidia", "atrex_ppu"))

    facts = {}
    import atrex
    from atrex.dispatch import registry  # noqa: F401  (light too)
    facts["after_import"] = {"torch": "torch" in sys.modules, "vendor": vendor(),
                             "discovered": registry._registry is not None,
                             "atrex_modules": sorted(m for m in sys.modules if m.startswith("atrex"))}
    err, elig, reason = atrex.AtrexError, atrex.Eligibility, atrex.Reason
    nse, plug = atrex.AtrexNotSupportedError, atrex.AtrexPluginError
    facts["errors"] = {"torch": "torch" in sys.modules, "vendor": vendor(),
                       "nse_is_not_impl": issubclass(nse, NotImplementedError) and issubclass(nse, err),
                       "eligibility_ok": bool(elig.yes()) and not elig.no(reason("c", "a", 1, "s"))}
    facts["dir"] = dir(atrex)
    try:
        atrex.no_such_thing
    except AttributeError as exc:
        facts["unknown"] = str(exc)
    fn = atrex.flash_attn_varlen_func
    facts["operator"] = {"torch": "torch" in sys.modules, "name": fn.__name__,
                         "cached": "flash_attn_varlen_func" in vars(atrex),
                         "vendor": vendor(), "discovered": registry._registry is not None}
    print(json.dumps(facts))
    """
)


@pytest.fixture(scope="module")
def facts():
    env = {k: v for k, v in os.environ.items() if not k.startswith("ATREX_")}
    proc = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_import_atrex_imports_neither_torch_nor_vendors(facts):
    after = facts["after_import"]
    assert after["torch"] is False
    assert after["vendor"] == []
    assert after["discovered"] is False
    assert "atrex.api" not in after["atrex_modules"] and "atrex.reference" not in after["atrex_modules"]


def test_errors_and_eligibility_resolve_without_torch(facts):
    e = facts["errors"]
    assert e["torch"] is False and e["vendor"] == []
    assert e["nse_is_not_impl"] and e["eligibility_ok"]


def test_operator_resolves_on_first_access(facts):
    op = facts["operator"]
    assert op["torch"] is True and op["name"] == "flash_attn_varlen_func" and op["cached"]
    # resolving the function still discovers nothing: plugins load on the first dispatch
    assert op["vendor"] == [] and op["discovered"] is False


def test_dir_lists_the_public_names(facts):
    names = set(facts["dir"])
    expected = {"flash_attn_varlen_func", "can_use_flash_attn_varlen_func", "explain_flash_attn_varlen_func",
                "chunk_gated_delta_rule", "can_use_chunk_gated_delta_rule", "explain_chunk_gated_delta_rule",
                "prewarm", "AtrexError", "AtrexTypeError", "AtrexValueError", "AtrexNotSupportedError",
                "AtrexCaptureError", "AtrexPluginError", "Eligibility", "Reason", "__version__"}
    assert expected <= names
    assert set(atrex.__all__) == names


def test_unknown_attribute(facts):
    assert "no_such_thing" in facts["unknown"]
    with pytest.raises(AttributeError, match="no attribute 'definitely_missing'"):
        atrex.definitely_missing  # noqa: B018
    assert not hasattr(atrex, "_private_missing")


def test_exports_resolve_to_their_modules():
    from atrex import errors
    from atrex.eligibility import Eligibility

    assert atrex.AtrexError is errors.AtrexError
    assert atrex.Eligibility is Eligibility
    for name in atrex.__all__:
        assert getattr(atrex, name) is not None, name
