"""PPU ZW-M890P attention: ``ppu.decode`` (direct-paged short-Q decode) and ``ppu.prefill`` (prep_kv).

``check`` (host-only eligibility), ``scratch`` (KV-cache sizing arithmetic) and ``build`` (lazy native
compilation) import no kernel; ``launch`` holds the launchers. Native sources are under ``native/``.
"""
