"""``python -m atrex.integrations.vllm``: what the vLLM plugin would do on this machine (nothing is patched).

Run it in the environment vLLM runs in, with the same ``ATREX_*`` variables. Exit status 0 when at least one op is
routed to ATREX, 1 otherwise.
"""

from __future__ import annotations

import sys

from atrex.integrations.vllm import plan


def main() -> int:
    p = plan()
    print(p.describe())
    return 0 if p.routed else 1


if __name__ == "__main__":
    sys.exit(main())
