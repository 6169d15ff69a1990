"""Compatibility shims for serving engines."""
