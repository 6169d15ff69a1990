"""The errors ATREX raises on purpose (docs/errors.md).

Every class derives from :class:`AtrexError` and from the builtin a caller would
catch anyway (``TypeError``, ``ValueError``, ``NotImplementedError``, ``RuntimeError``),
so serving engines that already catch ``NotImplementedError`` to fall back keep working.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from atrex.eligibility import Eligibility

__all__ = [
    "AtrexCaptureError",
    "AtrexError",
    "AtrexNotSupportedError",
    "AtrexPluginError",
    "AtrexTypeError",
    "AtrexValueError",
]


def _fmt(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."


class AtrexError(Exception):
    """Base of everything ATREX raises on purpose."""


class _ArgumentError(AtrexError):
    """An error about one argument: names it, shows what was seen and what is allowed."""

    def __init__(self, argument: str, got: Any, expected: str, detail: str | None = None):
        self.argument = argument
        self.got = got
        self.expected = expected
        msg = f"argument `{argument}`: got {_fmt(got) if not isinstance(got, str) else got}; expected {expected}"
        if detail:
            msg += f" ({detail})"
        super().__init__(msg)


class AtrexTypeError(_ArgumentError, TypeError):
    """Wrong Python type, metadata with the wrong dtype, or an unknown keyword."""


class AtrexValueError(_ArgumentError, ValueError):
    """Malformed input under the contract: shapes, ranks, strides, devices, aliasing."""


class AtrexCaptureError(AtrexError, RuntimeError):
    """An eligible call would compile during CUDA-graph capture: prewarm it first."""


class AtrexPluginError(AtrexError, RuntimeError):
    """A backend plugin failed to load (raised only with ATREX_STRICT_PLUGINS=1)."""


class AtrexNotSupportedError(AtrexError, NotImplementedError):
    """A well-formed call that no installed implementation accepts, or a rejected feature.

    Attributes:
        op: operator id (``flash_attn_varlen``, ``chunk_gated_delta_rule``).
        target: device target id, e.g. ``nvidia/sm90``.
        rejections: ``[(impl_id, Eligibility), ...]`` in priority order.
        failed_plugins: ``[PluginRecord, ...]`` for plugins that did not load.
    """

    def __init__(
        self,
        message: str,
        *,
        op: str | None = None,
        target: str | None = None,
        rejections: Sequence[tuple[str, Eligibility]] = (),
        failed_plugins: Sequence[Any] = (),
        argument: str | None = None,
    ):
        self.op = op
        self.target = target
        self.rejections = list(rejections)
        self.failed_plugins = list(failed_plugins)
        self.argument = argument
        lines = [message]
        for impl_id, elig in self.rejections:
            lines.append(f"  - {impl_id}: " + "; ".join(str(r) for r in elig.reasons))
        for rec in self.failed_plugins:
            lines.append(f"  ! plugin {rec.name} ({rec.distribution} {rec.version}) {rec.state}: {rec.error}")
        super().__init__("\n".join(lines))

    @classmethod
    def feature(cls, argument: str, got: Any, supported: str, *, op: str | None = None) -> AtrexNotSupportedError:
        """A rejected feature (e.g. dropout) that no implementation will ever take."""
        err = cls(f"argument `{argument}`: got {_fmt(got)}; supported: {supported}", op=op, argument=argument)
        return err
