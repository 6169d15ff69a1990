"""The layer module's pre-0.22 path: its own globals, the same CustomOp class."""

from vllm.model_executor.layers.mamba.gdn.qwen_gdn_linear_attn import (  # noqa: F401
    CALLS,
    ChunkGatedDeltaRule,
    fused_recurrent_gated_delta_rule_packed_decode,
    fused_sigmoid_gating_delta_rule_update,
)
