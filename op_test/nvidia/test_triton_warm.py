"""CPU tier: the launch keys behind the capture guards of ATREX's Triton kernels."""

import torch

from atrex_nvidia.triton_warm import WarmRecord, launch_key


def _kernel():
    pass


def test_key_separates_what_triton_specialises_on():
    x = torch.zeros(64, dtype=torch.float16)
    base = launch_key(_kernel, (x, 32, 2.5, None), dict(BLOCK=64, num_warps=4))
    assert base == launch_key(_kernel, (torch.ones(64, dtype=torch.float16), 48, 7.0, None),
                              dict(num_warps=4, BLOCK=64))  # same dtype/alignment, int % 16, floats ignored
    others = [
        launch_key(_kernel, (x.bfloat16(), 32, 2.5, None), dict(BLOCK=64, num_warps=4)),  # dtype
        launch_key(_kernel, (x[1:], 32, 2.5, None), dict(BLOCK=64, num_warps=4)),  # 16-byte alignment
        launch_key(_kernel, (x, 33, 2.5, None), dict(BLOCK=64, num_warps=4)),  # divisibility by 16
        launch_key(_kernel, (x, 1, 2.5, None), dict(BLOCK=64, num_warps=4)),  # == 1
        launch_key(_kernel, (x, 1 << 33, 2.5, None), dict(BLOCK=64, num_warps=4)),  # int64
        launch_key(_kernel, (x, 32, 2.5, None), dict(BLOCK=128, num_warps=4)),  # constexpr
        launch_key(_kernel, (x, 32, 2.5, None), dict(BLOCK=64, num_warps=8)),  # launch option
    ]
    assert len({base, *others}) == len(others) + 1


def test_key_separates_jit_twins_that_differ_in_do_not_specialize():
    """The GDN launcher compiles its state kernels a second time without the specialisation of T (for T == 1):
    one kernel name, two JIT functions, which must not share launch keys."""
    from atrex_nvidia.chunk_gdn.sm90 import triton_state
    kern = triton_state.atrex_sm90_gdn_state_output_v2
    twin = triton_state.NO_T1_SPECIALISATION[kern]
    assert twin.__name__ == kern.__name__ == "atrex_sm90_gdn_state_output_v2"
    args, meta = (torch.zeros(8), 1, 2), dict(BV=32, num_warps=4)
    assert launch_key(kern, args, meta) != launch_key(twin, args, meta)
    assert launch_key(kern, args, meta)[0] == launch_key(twin, args, meta)[0] == kern.__name__


def test_record_reports_missing_until_added():
    rec = WarmRecord()
    keys = [("k", (1,), ()), ("k", (2,), ())]
    assert rec.missing(keys) == keys
    rec.add(keys[:1])
    assert rec.missing(keys) == keys[1:] and len(rec) == 1
    rec.clear()
    assert len(rec) == 0


def test_signature_memo_is_cleared_with_the_keys():
    rec = WarmRecord()
    assert not rec.seen(("sig", 1))
    rec.add([("k",)])
    rec.mark(("sig", 1))
    assert rec.seen(("sig", 1)) and not rec.seen(("sig", 2))
    rec.clear()
    assert not rec.seen(("sig", 1)) and len(rec) == 0
