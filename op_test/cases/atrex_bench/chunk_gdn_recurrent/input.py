import torch


def _make_inputs(batch=1, seq_len=64, num_heads=2, num_v_heads=4, head_dim=32, dtype="bfloat16"):
    dt = getattr(torch, dtype)
    return {
        "q": torch.randn(batch, seq_len, num_heads, head_dim).to(dt),
        "k": torch.randn(batch, seq_len, num_heads, head_dim).to(dt),
        "v": torch.randn(batch, seq_len, num_v_heads, head_dim).to(dt),
        "g": torch.nn.functional.logsigmoid(torch.randn(batch, seq_len, num_v_heads)),
        "beta": torch.sigmoid(torch.randn(batch, seq_len, num_v_heads)).to(dt),
    }
