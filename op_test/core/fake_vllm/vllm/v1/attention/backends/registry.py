"""The attention-backend registry: an enum of class paths and a table of overrides."""

import enum
import importlib

_OVERRIDES = {}


class AttentionBackendEnum(enum.Enum):
    FLASH_ATTN = "vllm.v1.attention.backends.flash_attn.FlashAttentionBackend"

    def get_path(self):
        return _OVERRIDES.get(self, self.value)

    def get_class(self):
        module, _, name = self.get_path().rpartition(".")
        return getattr(importlib.import_module(module), name)

    def is_overridden(self):
        return self in _OVERRIDES


def register_backend(backend, class_path=None, is_mamba=False):
    _OVERRIDES[backend] = class_path
    return lambda cls: cls
