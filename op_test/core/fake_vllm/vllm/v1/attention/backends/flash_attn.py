"""The FLASH_ATTN backend: its impl reads the kernel from this module's globals at every call."""

CALLS = []


def flash_attn_varlen_func(*args, **kwargs):
    """vLLM's kernel: records the call and fills ``out`` with 7."""
    CALLS.append(("flash_attn_varlen_func", sorted(kwargs)))
    out = kwargs.get("out")
    if out is not None:
        out.fill_(7)
    return out


def get_scheduler_metadata(**kwargs):
    CALLS.append(("get_scheduler_metadata", sorted(kwargs)))
    return "fa3-schedule"


class FlashAttentionBackend:
    @staticmethod
    def get_name():
        return "FLASH_ATTN"


class FlashAttentionImpl:
    def forward(self, **kwargs):
        return flash_attn_varlen_func(**kwargs)  # a global, looked up at call time
