"""FA4 b19 domain table for nvidia/sm103 (see fa4_table.py)."""
