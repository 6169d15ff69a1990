"""Device helpers shared by the Triton kernels of ``decode_splitkv`` and ``paged_prefill`` (inlined into both)."""

import triton
import triton.language as tl


@triton.jit
def _softcap_log2(s, cap_log2):
    """``cap * log2(e) * tanh(s)`` with ``cap_log2 = cap * log2(e)``, as ``1 - 2 / (exp(2 s) + 1)``."""
    return cap_log2 * (1.0 - 2.0 / (tl.exp2(s * (2.0 * 1.4426950408889634)) + 1.0))


@triton.jit
def _online_softmax_step(acc, m_i, l_i, s, v):
    """One key tile of the online softmax in the log2 domain: scores ``s`` (``-inf`` where invisible) and values
    ``v`` update the running max ``m_i``, the denominator ``l_i`` and the accumulator ``acc`` (fp32). A row that
    has seen no visible key keeps ``m_i = -inf`` and adds nothing (its shift is taken as 0, so no NaN)."""
    m_new = tl.maximum(m_i, tl.max(s, 1))
    m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)
    p = tl.exp2(s - m_safe[:, None])
    alpha = tl.exp2(m_i - m_safe)
    l_i = l_i * alpha + tl.sum(p, 1)
    acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
    return acc, m_new, l_i
