"""Case tables shared by tests, ``atrex verify`` and ``atrex bench``.

A case is data: the builder arguments of :mod:`atrex.inputs`, a size class and how to count its
work. ``small`` cases run anywhere (the CPU reference included); ``perf`` cases are the
serving-sized workloads the kernels are measured on and only make sense on an accelerator.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch

from atrex.inputs import attn_inputs, gdn_decode_inputs, gdn_inputs

OPS = ("flash_attn", "chunk_gdn", "gdn_decode")


@dataclass(frozen=True)
class Case:
    op: str  # flash_attn | chunk_gdn | gdn_decode
    name: str
    size: str  # small | perf
    kind: str  # prefill | decode (attention), prefill (chunk_gdn), decode | mtp (gdn_decode)
    params: dict = field(default_factory=dict)

    def inputs(self, device, seed: int = 0) -> dict:
        p = dict(self.params)
        if self.op == "flash_attn":
            q_lens, k_lens = p.pop("q_lens"), p.pop("k_lens")
            return attn_inputs(q_lens, k_lens, device=device, seed=seed, **p)
        seq_lens = p.pop("seq_lens", None)
        if self.op == "gdn_decode":
            return gdn_decode_inputs(seq_lens, device=device, seed=seed, **p)
        return gdn_inputs(seq_lens, device=device, seed=seed, **p)

    # ---- work counts (useful FLOPs and compulsory bytes) ----------------------------------------------
    def flops(self) -> float:
        p = self.params
        if self.op == "flash_attn":
            d = p.get("head_dim", 64)
            total = 0.0
            for sq, sk in zip(p["q_lens"], p["k_lens"]):
                pairs = causal_pairs(sq, sk) if p.get("causal", True) else sq * sk
                total += 4 * pairs * d * p.get("num_heads_q", 8)
            return total
        if self.op == "gdn_decode":  # per token and value head: decay, S k, rank-1 update, S q (about 7 K V)
            kd, vd = p.get("head_k_dim", 64), p.get("head_v_dim", 64)
            return 7.0 * kd * vd * self._decode_tokens() * p.get("num_v_heads", 8)
        # GDN chunked algorithm, per token per value head (docs/chunk_gated_delta_rule.md, "Chunked form"): KK^T, solve, W, U, WS, QS, QK^T,
        # (QK^T)U, state update: about 2*(C*K + C*C/2 + C*K + C*V + K*V + K*V + C*K + C*V + K*V) FLOPs.
        kd, vd, c = p.get("head_k_dim", 64), p.get("head_v_dim", 64), 64
        per_token = 2 * (c * kd + c * c / 2 + c * kd + c * vd + 2 * kd * vd + c * kd + c * vd + kd * vd)
        tokens = sum(p["seq_lens"]) if p.get("seq_lens") else p.get("batch", 1) * p.get("seq_len", 0)
        return per_token * tokens * p.get("num_v_heads", 8)

    def bytes(self) -> float:
        """The fewest bytes: each input read once, the output written once (KV pages actually read)."""
        p = self.params
        if self.op == "flash_attn":
            dt = p.get("dtype", torch.bfloat16)
            es = torch.empty(0, dtype=dt).element_size()
            d, hq, hk = p.get("head_dim", 64), p.get("num_heads_q", 8), p.get("num_heads_k", 2)
            tq = sum(p["q_lens"])
            page = p.get("page_size") or 1
            kv_tokens = sum(math.ceil(n / page) * page for n in p["k_lens"]) if p.get("page_size") else sum(p["k_lens"])
            return (tq * hq * d * es) * 2 + 2 * kv_tokens * hk * d * es
        kd, vd = p.get("head_k_dim", 64), p.get("head_v_dim", 64)
        h, hv = p.get("num_heads", 4), p.get("num_v_heads", 8)
        if self.op == "gdn_decode":  # each live sequence's state read once, written once per token (MTP) or once
            es = torch.empty(0, dtype=p.get("dtype", torch.bfloat16)).element_size()
            ps = 4 if p.get("pool", "fp32") == "fp32" else 2
            lens = p.get("seq_lens") or [p.get("seq_len", 1)] * p.get("batch", 4)
            lens = lens[: len(lens) - p.get("padded", 0)]
            writes = sum(lens) if p.get("mtp") else len(lens)
            state = hv * kd * vd * ps * (len(lens) + writes)
            return state + sum(lens) * ((2 * h * kd + 2 * hv * vd) * es + hv * 8)
        tokens = sum(p["seq_lens"]) if p.get("seq_lens") else p.get("batch", 1) * p.get("seq_len", 0)
        return tokens * (2 * h * kd + 2 * hv * vd) * 2 + tokens * hv * 8

    def _decode_tokens(self) -> int:
        p = self.params
        lens = p.get("seq_lens") or [p.get("seq_len", 1)] * p.get("batch", 4)
        return sum(lens[: len(lens) - p.get("padded", 0)])

    def describe(self) -> str:
        return self.name


def causal_pairs(sq: int, sk: int) -> float:
    """(query, key) pairs visible under the bottom-right causal mask: row i sees min(sk, i + sk - sq + 1)."""
    if sq <= sk:
        return sq * (sk - sq + 1) + sq * (sq - 1) / 2
    return sk * (sk + 1) / 2


def _attn(name, size, kind, q_lens, k_lens, **kw):
    kw.setdefault("causal", True)
    return Case("flash_attn", name, size, kind, {"q_lens": list(q_lens), "k_lens": list(k_lens), **kw})


def _gdn(name, size, **kw):
    return Case("chunk_gdn", name, size, "prefill", kw)


BF16 = torch.bfloat16

FLASH_ATTN_CASES: tuple[Case, ...] = (
    # small: every contract feature on shapes the CPU reference handles in milliseconds
    _attn("small/decode-gqa4-page16", "small", "decode", [1, 1, 1], [37, 300, 16], num_heads_q=8, num_heads_k=2,
          head_dim=64, page_size=16),
    _attn("small/mtp4-page64", "small", "decode", [4, 4], [130, 64], num_heads_q=8, num_heads_k=1, head_dim=128,
          page_size=64),
    _attn("small/prefill-varlen", "small", "prefill", [37, 1, 64], [37, 1, 64], num_heads_q=4, num_heads_k=4,
          head_dim=64, page_size=None),
    _attn("small/chunked-prefill-paged", "small", "prefill", [17, 5], [100, 5], num_heads_q=8, num_heads_k=2,
          head_dim=128, page_size=16),
    _attn("small/window-sinks-lse", "small", "prefill", [9, 3], [40, 3], num_heads_q=4, num_heads_k=2, head_dim=64,
          page_size=16, window_size=[7, 0], sinks=True, return_lse=True),
    _attn("small/softcap-d256", "small", "prefill", [8], [8], num_heads_q=4, num_heads_k=1, head_dim=256,
          page_size=None, softcap=50.0),
    _attn("small/zero-and-one-length", "small", "decode", [0, 1, 1], [5, 1, 0], num_heads_q=4, num_heads_k=2,
          head_dim=64, page_size=16, return_lse=True),
    _attn("small/fp8-descales", "small", "decode", [1, 2], [40, 70], num_heads_q=8, num_heads_k=1, head_dim=128,
          page_size=16, dtype=torch.float8_e4m3fn),
    # perf: prefill
    _attn("prefill/gqa32-8-d128-1k2k3k4k", "perf", "prefill", [1000, 2000, 3000, 4096], [1000, 2000, 3000, 4096],
          num_heads_q=32, num_heads_k=8, head_dim=128, page_size=None),
    _attn("prefill/mha32-d128-2x8192-noncausal", "perf", "prefill", [8192, 8192], [8192, 8192], num_heads_q=32,
          num_heads_k=32, head_dim=128, page_size=None, causal=False),
    _attn("prefill/mha32-d128-2x8192-causal", "perf", "prefill", [8192, 8192], [8192, 8192], num_heads_q=32,
          num_heads_k=32, head_dim=128, page_size=None),
    _attn("prefill/qwen3next-16-2-d256-8x1024", "perf", "prefill", [1024] * 8, [1024] * 8, num_heads_q=16,
          num_heads_k=2, head_dim=256, page_size=None),
    _attn("prefill/qwen3next-16-2-d256-4x4096", "perf", "prefill", [4096] * 4, [4096] * 4, num_heads_q=16,
          num_heads_k=2, head_dim=256, page_size=None),
    _attn("prefill/qwen3next-16-2-d256-1x16384", "perf", "prefill", [16384], [16384], num_heads_q=16, num_heads_k=2,
          head_dim=256, page_size=None),
    # perf: paged prefill as vLLM calls it (page 16): fp8 against bf16 at one shape, and the head dims FA4's paged
    # path serves slowly or not at all, against the non-paged d128 case above at the same lengths
    *(
        _attn(f"prefill/paged-p16-gqa32-8-d128-4x4096-{n}", "perf", "prefill", [4096] * 4, [4096] * 4,
              num_heads_q=32, num_heads_k=8, head_dim=128, page_size=16, dtype=dt)
        for n, dt in (("bf16", BF16), ("fp8", torch.float8_e4m3fn))
    ),
    *(
        _attn(f"prefill/paged-p16-gqa32-8-d{d}-1k2k3k4k", "perf", "prefill", [1000, 2000, 3000, 4096],
              [1000, 2000, 3000, 4096], num_heads_q=32, num_heads_k=8, head_dim=d, page_size=16)
        for d in (80, 96, 256)
    ),
    # perf: decode matrix (32q/8kv, d128), pages 16 and 128, q 1 and 4
    *(
        _attn(f"decode/b{b}-lk{lk}-p{page}-q{q}", "perf", "decode", [q] * b, [lk] * b, num_heads_q=32,
              num_heads_k=8, head_dim=128, page_size=page, shuffle_blocks=True)
        for b, lk in ((1, 8192), (1, 32768), (8, 8192), (8, 32768), (32, 4096), (64, 4096), (64, 16384),
                      (128, 2048), (256, 1024))
        for page in (16, 128)
        for q in (1, 4)
    ),
)

CHUNK_GDN_CASES: tuple[Case, ...] = (
    _gdn("small/varlen-gva-vfirst", "small", seq_lens=[100, 1, 65, 0, 64], num_heads=2, num_v_heads=4,
         head_k_dim=32, head_v_dim=32, state_v_first=True),
    _gdn("small/fixed-kfirst-nostate", "small", batch=2, seq_len=130, num_heads=2, num_v_heads=2, head_k_dim=64,
         head_v_dim=64, initial_state=None),
    _gdn("small/no-l2norm-bf16-state", "small", seq_lens=[63, 1], num_heads=1, num_v_heads=3, head_k_dim=16,
         head_v_dim=32, l2norm=False, initial_state="bf16"),
    _gdn("perf/T4096-H16-HV32", "perf", batch=1, seq_len=4096, num_heads=16, num_v_heads=32, head_k_dim=128,
         head_v_dim=128, initial_state=None, state_v_first=True),
    _gdn("perf/T8192-H16-HV32", "perf", batch=1, seq_len=8192, num_heads=16, num_v_heads=32, head_k_dim=128,
         head_v_dim=128, initial_state=None, state_v_first=True),
    _gdn("perf/T32768-H16-HV32", "perf", batch=1, seq_len=32768, num_heads=16, num_v_heads=32, head_k_dim=128,
         head_v_dim=128, initial_state=None, state_v_first=True),
    _gdn("perf/T8192-H32-HV32", "perf", batch=1, seq_len=8192, num_heads=32, num_v_heads=32, head_k_dim=128,
         head_v_dim=128, initial_state=None, state_v_first=True),
    _gdn("perf/varlen-16x1024-H32-HV32", "perf", seq_lens=[1024] * 16, num_heads=32, num_v_heads=32,
         head_k_dim=128, head_v_dim=128, initial_state="fp32", state_v_first=True),
    # fp16 inputs at the Qwen3-Next shape
    _gdn("perf/T8192-H16-HV32-fp16", "perf", batch=1, seq_len=8192, num_heads=16, num_v_heads=32, head_k_dim=128,
         head_v_dim=128, initial_state=None, state_v_first=True, dtype=torch.float16),
    # serving shapes (no goal attached): Qwen3-Next's linear-attention layers as one GPU sees them under tensor
    # parallelism (TP 2 and 4 split the 16 q/k and 32 value heads), and chunked-prefill batches of mixed lengths (not
    # multiples of 64, a 1-token sequence) that continue cached fp32 states
    _gdn("perf/serve-tp4-T8192-H4-HV8", "perf", batch=1, seq_len=8192, num_heads=4, num_v_heads=8, head_k_dim=128,
         head_v_dim=128, initial_state=None, state_v_first=True),
    _gdn("perf/serve-tp4-T32768-H4-HV8", "perf", batch=1, seq_len=32768, num_heads=4, num_v_heads=8, head_k_dim=128,
         head_v_dim=128, initial_state=None, state_v_first=True),
    _gdn("perf/serve-tp8-T8192-H2-HV4", "perf", batch=1, seq_len=8192, num_heads=2, num_v_heads=4, head_k_dim=128,
         head_v_dim=128, initial_state=None, state_v_first=True),
    _gdn("perf/serve-tp2-mixed8-H8-HV16", "perf", seq_lens=[3500, 2048, 1000, 777, 513, 200, 63, 1], num_heads=8,
         num_v_heads=16, head_k_dim=128, head_v_dim=128, initial_state="fp32", state_v_first=True),
    _gdn("perf/serve-tp1-mixed20-H16-HV32", "perf",
         seq_lens=[1, 7, 33, 64, 65, 100, 130, 255, 300, 480, 512, 640, 777, 900, 1024, 1100, 1500, 2048, 3000, 3500],
         num_heads=16, num_v_heads=32, head_k_dim=128, head_v_dim=128, initial_state="fp32", state_v_first=True),
)



def _dec(name, size, **kw):
    return Case("gdn_decode", name, size, "mtp" if kw.get("mtp") else "decode", kw)


GDN_DECODE_CASES: tuple[Case, ...] = (
    _dec("small/decode-gva-padded", "small", seq_lens=[1] * 6, num_heads=2, num_v_heads=4, head_k_dim=32,
         head_v_dim=32, padded=2),
    _dec("small/mtp-bf16-pool", "small", seq_lens=[3, 1, 2, 3, 3], num_heads=1, num_v_heads=2, head_k_dim=64,
         head_v_dim=64, mtp=True, padded=1, pool="bf16"),
    _dec("small/fixed-kfirst-returned-fp16", "small", batch=3, seq_len=2, num_heads=2, num_v_heads=2,
         head_k_dim=16, head_v_dim=16, state_v_first=False, inplace=False, dtype=torch.float16, beta=False),
    _dec("small/no-l2norm-k128", "small", seq_lens=[1, 1, 1], num_heads=1, num_v_heads=1, head_k_dim=128,
         head_v_dim=128, l2norm=False),
    # perf: Qwen3-Next's linear-attention heads (16 q/k, 32 value heads, K = V = 128), bf16, fp32 pool in vLLM's
    # layout; decode (T = 1, one slot per sequence) and MTP (T = 2, 4: a slot per token, accepted-token offsets)
    *(
        _dec(f"perf/b{b}-t{t}-H16-HV32", "perf", seq_lens=[t] * b, num_heads=16, num_v_heads=32, head_k_dim=128,
             head_v_dim=128, mtp=t > 1, extra_slots=0)
        for t in (1, 2, 4)
        for b in (1, 8, 32, 64, 128, 256)
    ),
)

TABLES = {"flash_attn": FLASH_ATTN_CASES, "chunk_gdn": CHUNK_GDN_CASES, "gdn_decode": GDN_DECODE_CASES}
#: CLI names -> operator ids of the registry
OP_IDS = {"flash_attn": "flash_attn_varlen", "chunk_gdn": "chunk_gated_delta_rule",
          "gdn_decode": "fused_recurrent_gated_delta_rule"}


def cases(op: str, size: str | None = None, match: str | None = None) -> list[Case]:
    table = TABLES[op]
    return [c for c in table if (size is None or c.size == size) and (match is None or match in c.name)]
