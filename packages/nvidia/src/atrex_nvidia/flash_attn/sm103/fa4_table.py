"""``nvidia.fa4`` domains on nvidia/sm103 (B300 class): FA4 (b19 and b36) runs the same 10.x code as
on sm100 (its compile key carries arch 103), so this is sm100's generic envelope; dedicated
SM103 kernels (AKA q4, short-Q decode, HD256 prefill) are later work. Not hardware-verified.
"""

from __future__ import annotations

import dataclasses

from atrex_nvidia.flash_attn.sm100.fa4_table import TABLES as _SM100

#: FA4 release -> domain
TABLES = {v: dataclasses.replace(d, arch="sm103", fa4_arch=103) for v, d in _SM100.items()}
