"""A probe kernel for ``_gdn_cases.gates_book_check``: ``kernels._book_slot`` run once per chunk slot, its results
stored (a Triton kernel's globals are its module's, so it cannot be defined inside the check)."""

import triton
import triton.language as tl

from atrex_nvidia.chunk_gdn.sm90 import kernels as K_


@triton.jit
def atrex_test_book_probe(cu, co, out, N):
    s = tl.program_id(0)
    n, c0, live = K_._book_slot(cu, co, s, N, True, s == 0)
    tl.store(out + 3 * s, n)
    tl.store(out + 3 * s + 1, c0)
    tl.store(out + 3 * s + 2, live.to(tl.int32))
