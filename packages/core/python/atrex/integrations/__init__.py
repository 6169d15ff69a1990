"""Integrations with serving engines. Each subpackage imports its engine lazily, never at ``import atrex``."""
