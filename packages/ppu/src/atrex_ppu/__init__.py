"""ATREX implementations for T-Head PPU ZW-M890P. Importing this package loads no kernel module."""

__version__ = "0.1.0"
