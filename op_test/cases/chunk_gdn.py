"""Gated-DeltaNet case table (see flash_attn.py here for why it lives in the core package)."""

from atrex.validation.cases import CHUNK_GDN_CASES as CASES
from atrex.validation.cases import Case, cases

__all__ = ["CASES", "Case", "cases"]
