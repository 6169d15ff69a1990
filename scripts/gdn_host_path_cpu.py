"""Host time of ``gdn_fwd`` calls on a CPU (no GPU): Triton's cached launch path runs against a stub compiled kernel.

Under the sm90 stand-in driver (``op_test/sm90_standin.py``) the launcher plans its calls on CPU tensors; here Triton's
JIT then finds a stub "compiled kernel" (whose ``run`` does nothing) in its cache, so each launch goes through Triton's
binder, specialisation, cache key and launch metadata exactly as a warm GPU call does, minus the C launcher and the
driver. FAST_LAUNCH off / on, twice each, interleaved; microseconds per call. Needs Triton 3.6 (the host's):

    PYTHONPATH=<triton 3.6 site-packages> python scripts/gdn_host_path_cpu.py [CASE ...]   (bench_gdn case names)
"""

import inspect
import os
import sys
import textwrap
import time

os.environ["CUDA_VISIBLE_DEVICES"] = ""
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path[:0] = [os.path.join(ROOT, "packages", "core", "python"), os.path.join(ROOT, "packages", "nvidia", "src"),
                os.path.join(ROOT, "op_test")]

from sm90_standin import record_specialisations  # noqa: E402
from triton import knobs  # noqa: E402
from triton.runtime import jit  # noqa: E402

from atrex_nvidia.chunk_gdn.sm90 import bench_gdn as bg  # noqa: E402
from atrex_nvidia.chunk_gdn.sm90 import launch as L  # noqa: E402


class StubKernel:
    """What Triton's cache would hold after a compile: a launcher that launches nothing."""
    function = None
    packed_metadata = None

    def launch_metadata(self, grid, stream, *args):
        return None

    def run(self, *args):
        pass


def stub_compile(self, key, signature, device, constexprs, options, attrs, warmup):
    kernel = StubKernel()
    self.device_caches[device][0][key] = kernel
    return kernel


def main(names):
    record_specialisations()  # the stand-in driver (its recording hook is cleared: the stub compiles instead)
    knobs.runtime.jit_cache_hook = None
    jit.JITFunction._do_compile = stub_compile
    # FAST_LAUNCH records only calls on a GPU: let this script's CPU calls count as one
    src = textwrap.dedent(inspect.getsource(L._launch_all))
    rule = 'dev.type == "cuda" and _FAST_LAUNCH_OK:'
    if src.count(rule) != 1:
        raise SystemExit("_launch_all's record rule changed: update this script")
    src = src.replace(rule, "True:")
    exec(compile(src, L.__file__, "exec"), L.__dict__)
    cases = {c[0]: c for c in bg.CASES}
    for cid in names:
        fn = bg.atrex_call(bg.make(cases[cid], device="cpu"))
        res = {False: [], True: []}
        with bg._Variant({}):
            for fast in (False, True, False, True):
                L.FAST_LAUNCH = fast
                for _ in range(5):
                    fn()
                n, t = 300, time.perf_counter()
                for _ in range(n):
                    fn()
                res[fast].append((time.perf_counter() - t) / n * 1e6)
        print(f"{cid}: Triton's launch path {', '.join(f'{v:.1f}' for v in res[False])} us/call; "
              f"FAST_LAUNCH {', '.join(f'{v:.1f}' for v in res[True])} us/call")


if __name__ == "__main__":
    main(sys.argv[1:] or ["T8192_H16_HV32", "varlen16x1024_H32_HV32"])
