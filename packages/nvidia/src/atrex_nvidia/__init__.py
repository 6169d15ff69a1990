"""ATREX implementations for NVIDIA GPUs. Importing this package loads no kernel module."""

__version__ = "0.1.0"
