import torch


class Model(torch.nn.Module):
    """Gated delta rule, token by token (the atrex-bench reference style: plain torch, no framework)."""

    def __init__(self, scale: float, use_qk_l2norm_in_kernel: bool = True, output_final_state: bool = True):
        super().__init__()
        self.scale = scale
        self.l2 = use_qk_l2norm_in_kernel
        self.output_final_state = output_final_state

    def forward(self, q, k, v, g, beta):
        if self.l2:
            q = (q.float() / torch.sqrt((q.float() ** 2).sum(-1, keepdim=True) + 1e-6)).to(q.dtype)
            k = (k.float() / torch.sqrt((k.float() ** 2).sum(-1, keepdim=True) + 1e-6)).to(k.dtype)
        b, t, h, dk = q.shape
        hv, dv = v.shape[2], v.shape[3]
        rep = hv // h
        q = q.float().repeat_interleave(rep, dim=2)
        k = k.float().repeat_interleave(rep, dim=2)
        v, g, beta = v.float(), g.float(), beta.float()
        state = torch.zeros(b, hv, dk, dv, device=q.device)
        out = torch.zeros(b, t, hv, dv, device=q.device)
        for i in range(t):
            state = state * torch.exp(g[:, i])[..., None, None]
            pred = torch.einsum("bhkv,bhk->bhv", state, k[:, i])
            upd = beta[:, i][..., None] * (v[:, i] - pred)
            state = state + torch.einsum("bhk,bhv->bhkv", k[:, i], upd)
            out[:, i] = self.scale * torch.einsum("bhkv,bhk->bhv", state, q[:, i])
        return out.to(v.dtype), state
