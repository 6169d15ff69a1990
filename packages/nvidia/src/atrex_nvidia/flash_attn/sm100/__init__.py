"""FA4 domain tables (per FA4 release) for nvidia/sm100 (see fa4_table.py)."""
