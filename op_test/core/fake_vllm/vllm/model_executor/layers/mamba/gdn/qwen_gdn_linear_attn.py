"""Qwen's GatedDeltaNet layer module: the prefill CustomOp and the decode kernels as module globals."""

from vllm.config import get_current_vllm_config
from vllm.model_executor.custom_op import CustomOp

CALLS = []


def _resolve_gdn_prefill_backend(vllm_config):
    requested = str(vllm_config.additional_config.get("gdn_prefill_backend", "auto"))
    return requested, "flashinfer" if requested in ("auto", "flashinfer") else requested


@CustomOp.register("chunk_gated_delta_rule")
class ChunkGatedDeltaRule(CustomOp):
    def __init__(self):
        super().__init__()
        _, self.gdn_prefill_backend = _resolve_gdn_prefill_backend(get_current_vllm_config())
        self._forward_method = self.forward_cuda if self.gdn_prefill_backend == "flashinfer" else self.forward_native

    def forward_native(self, q, k, v, g, beta, initial_state, output_final_state, cu_seqlens=None,
                       chunk_indices=None, chunk_offsets=None, use_qk_l2norm_in_kernel=True, core_attn_out=None,
                       aiter_prefill_metadata=None):
        CALLS.append("triton")
        return "vllm-triton", None

    def forward_cuda(self, q, k, v, g, beta, initial_state, output_final_state, cu_seqlens=None,
                     chunk_indices=None, chunk_offsets=None, use_qk_l2norm_in_kernel=True, core_attn_out=None,
                     aiter_prefill_metadata=None):
        CALLS.append("flashinfer")
        return "vllm-flashinfer", None


def fused_sigmoid_gating_delta_rule_update(A_log, a, b, dt_bias, q, k, v, beta=1.0, threshold=20.0, scale=None,
                                           initial_state=None, inplace_final_state=True, cu_seqlens=None,
                                           ssm_state_indices=None, num_accepted_tokens=None,
                                           use_qk_l2norm_in_kernel=False, is_kda=False):
    CALLS.append("sigmoid")
    return "vllm-sigmoid", initial_state


def fused_recurrent_gated_delta_rule_packed_decode(mixed_qkv, a, b, A_log, dt_bias, scale, initial_state, out,
                                                   ssm_state_indices, use_qk_l2norm_in_kernel=False):
    CALLS.append("packed")
    return out, initial_state
