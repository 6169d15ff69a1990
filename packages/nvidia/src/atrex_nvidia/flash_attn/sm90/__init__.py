"""FA4 b19 domain table for nvidia/sm90 (see fa4_table.py)."""
