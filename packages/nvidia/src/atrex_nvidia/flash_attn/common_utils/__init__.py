"""Helpers shared by more than one NVIDIA arch (the FA4 domain type, check engine and launcher)."""
