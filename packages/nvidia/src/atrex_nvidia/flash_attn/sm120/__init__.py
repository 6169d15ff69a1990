"""FA4 b19 domain table for nvidia/sm120 (see fa4_table.py)."""
