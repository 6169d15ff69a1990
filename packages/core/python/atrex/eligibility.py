"""Eligibility as data: ``Eligibility(ok, reasons)`` with reasons that name the argument."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["Eligibility", "Reason"]


@dataclass(frozen=True, slots=True)
class Reason:
    """Why an implementation declines a call.

    ``code`` is stable and machine-readable (``dtype``, ``head_dim``, ``page_size``,
    ``policy.decode_shape``, ``capture``, ``requires`` ...); ``argument`` names the
    offending argument, ``got`` is what was seen, ``supported`` the domain.
    """

    code: str
    argument: str
    got: Any
    supported: str

    def __str__(self) -> str:
        got = self.got if isinstance(self.got, str) else repr(self.got)
        return f"[{self.code}] `{self.argument}` = {got}; supported: {self.supported}"

    def as_dict(self) -> dict[str, Any]:
        return {"code": self.code, "argument": self.argument, "got": str(self.got), "supported": self.supported}


@dataclass(frozen=True, slots=True)
class Eligibility:
    ok: bool
    reasons: tuple[Reason, ...] = ()

    @staticmethod
    def yes() -> Eligibility:
        return _YES

    @staticmethod
    def no(*reasons: Reason) -> Eligibility:
        if not reasons:
            raise ValueError("Eligibility.no() needs at least one Reason")
        return Eligibility(False, tuple(reasons))

    @staticmethod
    def of(reasons: list[Reason] | tuple[Reason, ...]) -> Eligibility:
        """``yes()`` when ``reasons`` is empty, else ``no(*reasons)``: lets a check collect every reason."""
        return _YES if not reasons else Eligibility(False, tuple(reasons))

    def __bool__(self) -> bool:
        return self.ok

    def __str__(self) -> str:
        if self.ok:
            return "eligible"
        return "; ".join(str(r) for r in self.reasons)


_YES = Eligibility(True, ())
