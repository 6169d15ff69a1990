"""Attention implementations of atrex-ppu (kernel modules load lazily, never at import)."""
