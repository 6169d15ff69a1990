"""CustomOp: ops registered by name; an out-of-tree class registered under a class's name replaces it when the
in-tree class is instantiated; ``forward`` calls ``self._forward_method``."""

op_registry = {}
op_registry_oot = {}


class CustomOp:
    def __new__(cls, *args, **kwargs):
        return super().__new__(op_registry_oot.get(cls.__name__, cls))

    def __init__(self):
        self._forward_method = self.forward_native

    def forward(self, *args, **kwargs):
        return self._forward_method(*args, **kwargs)

    __call__ = forward  # (an nn.Module in vLLM: calling it runs forward)

    @classmethod
    def register(cls, name):
        def decorator(op_cls):
            op_cls.name = name
            op_registry[name] = op_cls
            return op_cls

        return decorator

    @classmethod
    def register_oot(cls, op_cls=None, name=None):
        reg_name = name or cls.__name__
        assert reg_name not in op_registry_oot, f"Duplicate op name: {reg_name}"
        op_cls.name = reg_name
        op_registry_oot[reg_name] = op_cls
        return op_cls
