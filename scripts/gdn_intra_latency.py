"""How long one intra v3 program takes with no other program on its SM, and with 2 / 4 / 8 per SM (round 18, for the
design of a fused kernel's intra partition): varlen calls of 132 x M one-chunk sequences (64 tokens) with one head,
so the intra grid is 132 x M programs of one chunk each; kernel times from the torch profiler (median of 20 calls).

    python scripts/gdn_intra_latency.py
"""

import torch

from atrex_nvidia.chunk_gdn.sm90.launch import gdn_fwd


def main():
    import torch.profiler as tp
    for m in (1, 2, 4, 8):
        n = 132 * m
        T = 64 * n
        g = torch.Generator(device="cuda").manual_seed(0)
        q, k = (torch.randn(1, T, 1, 128, device="cuda", generator=g).bfloat16() for _ in range(2))
        v = torch.randn(1, T, 1, 128, device="cuda", generator=g).bfloat16()
        gg = torch.nn.functional.logsigmoid(torch.randn(1, T, 1, device="cuda", generator=g))
        beta = torch.rand(1, T, 1, device="cuda", generator=g).bfloat16()
        cu = torch.arange(0, T + 1, 64, device="cuda", dtype=torch.int32)

        def call(q=q, k=k, v=v, gg=gg, beta=beta, cu=cu):
            return gdn_fwd(q, k, v, gg, beta, scale=128 ** -0.5, initial_state=None, output_final_state=True,
                           use_qk_l2norm_in_kernel=True, state_v_first=False, cu_seqlens=cu)
        for _ in range(3):
            call()
        torch.cuda.synchronize()
        with tp.profile(activities=[tp.ProfilerActivity.CUDA]) as prof:
            for _ in range(20):
                call()
            torch.cuda.synchronize()
        times = {}
        for e in prof.events():
            if e.device_type == torch.autograd.DeviceType.CUDA:
                times.setdefault(e.name, []).append(e.time_range.elapsed_us())
        row = "; ".join(f"{name.replace('atrex_sm90_gdn_', '')} {sorted(t)[len(t) // 2]:.1f} us"
                        for name, t in sorted(times.items()))
        print(f"LAT programs/SM {m}: {row}", flush=True)


if __name__ == "__main__":
    main()
