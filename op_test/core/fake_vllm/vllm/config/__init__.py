"""The current vLLM config: only ``additional_config`` (where ``--gdn-prefill-backend`` lands)."""

from types import SimpleNamespace

CURRENT = SimpleNamespace(additional_config={})


def get_current_vllm_config():
    return CURRENT
