"""Attention case table. The tables live in the installed core (``atrex.validation.cases``) so that
``atrex verify`` / ``atrex bench`` work from a wheel; tests import them from here."""

from atrex.validation.cases import FLASH_ATTN_CASES as CASES
from atrex.validation.cases import Case, cases

__all__ = ["CASES", "Case", "cases"]
