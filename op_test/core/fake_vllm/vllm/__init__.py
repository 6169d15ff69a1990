"""A minimal stand-in for vLLM, written for ATREX's plugin tests (op_test/core/test_vllm_plugin.py).

It has only what the plugin touches, with the mechanics the plugin relies on (read from vLLM's sources, not copied):
module globals looked up at call time, the attention-backend registry's overrides, CustomOp's out-of-tree
replacement by class name, the general-plugin entry points, a CUDA platform read through NVML. Its kernels only
record that they ran. Tests set ``__version__`` and the platform's fields.
"""

__version__ = "0.34.0"
