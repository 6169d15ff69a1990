"""The validation workflow as a tool: case tables, ``atrex verify``, ``atrex bench``, atrex-bench op dirs.

Kernels enter ATREX through the same mechanical gates: correctness against the
reference over the operator's case table, numerical probes, check/run agreement, performance
against the incumbent in the same run, and a recorded history.
"""
