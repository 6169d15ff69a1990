"""Makes Triton's CPU interpreter treat bf16 as the GPU does; imported by interpreter subprocesses only.

Two gaps are patched: the interpreter hands bf16 bit patterns (stored as uint16) to ``np.matmul``, and it
truncates fp32 -> bf16 instead of rounding to nearest even. fp32 dots with ``input_precision`` "tf32" /
"tf32x3" are emulated as the GPU runs them (operands rounded to tf32; the 3-pass hi/lo split). Call :func:`install` after
``TRITON_INTERPRET=1`` is set and before any kernel runs; never in the pytest process itself.
"""

import numpy as np


def install() -> None:
    import triton.language as tl
    from triton.runtime import interpreter as _I

    builder = _I.InterpreterBuilder
    orig_dot, orig_cast = builder.create_dot, builder.cast_impl

    def up(h):
        if getattr(h.dtype, "scalar", h.dtype) == tl.bfloat16:
            return _I.TensorHandle((h.data.astype(np.uint32) << 16).view(np.float32), tl.float32)
        return h

    def tf32(x):  # round fp32 to tf32 (10-bit mantissa), to nearest even
        bits = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
        return (((bits + ((bits >> 13) & 1) + 0xFFF) >> 13) << 13).astype(np.uint32).view(np.float32)

    def dot(self, a, b, d, input_precision, max_num_imprecise_acc):
        a, b = up(a), up(b)
        prec = str(input_precision).upper()
        if a.data.dtype == np.float32 and prec.endswith("TF32X3"):
            ah, bh = tf32(a.data), tf32(b.data)
            al, bl = tf32(a.data - ah), tf32(b.data - bh)
            r = np.matmul(ah, bh) + (np.matmul(ah, bl) + np.matmul(al, bh)).astype(np.float32)
            return _I.TensorHandle(r.astype(np.float32) + d.data, d.dtype.scalar)
        if a.data.dtype == np.float32 and prec.endswith("TF32"):
            a, b = _I.TensorHandle(tf32(a.data), a.dtype), _I.TensorHandle(tf32(b.data), b.dtype)
        return orig_dot(self, a, b, d, input_precision, max_num_imprecise_acc)

    def cast(self, src, dst_type):
        if src.dtype.scalar == tl.float32 and dst_type.scalar == tl.bfloat16:
            bits = np.ascontiguousarray(src.data, dtype=np.float32).view(np.uint32).astype(np.uint64)
            out = ((bits + ((bits >> 16) & 1) + 0x7FFF) >> 16).astype(np.uint16)
            out = np.where(np.isnan(src.data), np.uint16(0x7FC0), out)
            return _I.TensorHandle(out, tl.bfloat16)
        return orig_cast(self, src, dst_type)

    builder.create_dot, builder.cast_impl = dot, cast
    builder.create_fp_trunc = lambda self, src, dst_type: self.cast_impl(src, dst_type)
