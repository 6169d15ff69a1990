"""FA4 b19 domain table for nvidia/sm100 (see fa4_table.py)."""
