"""What the patched vLLM functions compute (CPU tensors: ATREX's torch reference serves them) and when they hand a
call back to vLLM's kernel: counted per reason, logged once per reason. A fake vLLM stands in (``fake_vllm``).

The GDN cases are checked against float64 oracles of vLLM's kernel semantics (``vllm_fakes``): the in-kernel gate,
slot 0 as padding, the V-first state; so a wrong translation in the integration shows up as a numeric mismatch.
"""

from __future__ import annotations

import importlib
import logging

import pytest
import torch
from vllm_fakes import delta_rule, fake_vllm_env, vllm_decode, vllm_gates

import atrex
from atrex.errors import AtrexNotSupportedError
from atrex.inputs import attn_inputs

QWEN = "vllm.model_executor.layers.mamba.gdn.qwen_gdn_linear_attn"
TOL = {"atol": 2e-4, "rtol": 2e-4}


@pytest.fixture
def fake_vllm(monkeypatch):
    yield from fake_vllm_env(monkeypatch)


@pytest.fixture
def vllm(fake_vllm):
    """The fake vLLM with the plugin loaded and both hooked modules imported: (flash_attn module, qwen module)."""
    importlib.import_module("vllm.plugins").load_general_plugins()
    return importlib.import_module("vllm.v1.attention.backends.flash_attn"), importlib.import_module(QWEN)


def counts(op):
    from atrex.integrations.vllm import fallback_counts

    return {reason: n for (o, reason), n in fallback_counts().items() if o == op}


# ------------------------------------------------------------------ attention


def vllm_attention_kwargs(**extra):
    """A decode + prefill batch as vLLM's FlashAttentionImpl passes it (keywords; FA4-era extras set to None)."""
    kw = attn_inputs([1, 5], [37, 20], num_heads_q=4, num_heads_k=2, head_dim=64, dtype=torch.float32, out=True)
    kw.update(window_size=[-1, -1], softcap=0.0, scheduler_metadata=None, fa_version=3, num_splits=0, s_aux=None,
              alibi_slopes=None, q_descale=None, k_descale=None, v_descale=None, dynamic_causal=None, mask_mod=None,
              aux_tensors=None)
    kw.update(extra)
    return kw


def test_attention_runs_atrex_with_vllm_keywords(vllm):
    fa, _ = vllm
    kw = vllm_attention_kwargs()
    want = atrex.flash_attn_varlen_func(**{k: (v.clone() if k == "out" else v) for k, v in kw.items()
                                           if k not in ("dynamic_causal", "mask_mod", "aux_tensors")})
    got = fa.FlashAttentionImpl().forward(**kw)  # vLLM's impl, reading the patched global
    assert got is kw["out"] and torch.equal(got, want)
    assert fa.CALLS == [] and counts("flash_attn") == {}


def test_attention_lse_calls_return_the_pair(vllm):
    fa, _ = vllm
    out, lse = fa.flash_attn_varlen_func(**vllm_attention_kwargs(return_softmax_lse=True, causal=False))
    assert lse.shape == (4, out.shape[0]) and fa.CALLS == []


@pytest.mark.parametrize("extra, reason", [
    ({"mask_mod": object()}, "vLLM passed mask_mod (FA4-only masking)"),
    ({"dynamic_causal": torch.ones(2, dtype=torch.bool)}, "vLLM passed dynamic_causal (FA4-only masking)"),
    ({"alibi_slopes": torch.ones(4)}, "unsupported `alibi_slopes`"),
    ({"softcap": -1.0}, "AtrexValueError on argument `softcap`"),
])
def test_attention_declined_calls_run_vllms_kernel(vllm, caplog, extra, reason):
    fa, _ = vllm
    for _ in range(3):
        kw = vllm_attention_kwargs(**extra)
        assert torch.all(fa.flash_attn_varlen_func(**kw) == 7)  # vLLM's (fake) kernel wrote it
    assert fa.CALLS == [("flash_attn_varlen_func", sorted(kw))] * 3  # with every keyword vLLM passed
    [(got, n)] = counts("flash_attn").items()
    assert got.startswith(reason) and n == 3
    logged = [r for r in caplog.records if r.name == "vllm.atrex" and "served by vLLM's own kernel" in r.message]
    assert len(logged) == 1 and reason in logged[0].message


def test_attention_without_a_vllm_kernel_raises_atrexs_reason(vllm):
    from atrex.integrations.vllm import _attn

    wrapper = _attn.make_varlen(None)
    with pytest.raises(AtrexNotSupportedError, match="alibi_slopes"):
        wrapper(**vllm_attention_kwargs(alibi_slopes=torch.ones(4)))
    with pytest.raises(AtrexNotSupportedError, match="no FlashAttention kernel"):
        wrapper(**vllm_attention_kwargs(mask_mod=object()))


def test_scheduler_metadata_is_not_precomputed(vllm):
    fa, _ = vllm
    assert fa.get_scheduler_metadata(batch_size=2, max_seqlen_q=1) is None and fa.CALLS == []


# ------------------------------------------------------------------ GDN prefill


def prefill_case(seq_lens=(5, 0, 9), h=2, hv=4, d=16, seed=0):
    gen = torch.Generator().manual_seed(seed)
    t = sum(seq_lens)

    def rnd(*shape):
        return torch.randn(*shape, generator=gen)

    cu = torch.tensor([0, *torch.tensor(seq_lens).cumsum(0).tolist()], dtype=torch.int32)
    q, k = torch.nn.functional.normalize(rnd(1, t, h, d), dim=-1), torch.nn.functional.normalize(rnd(1, t, h, d), dim=-1)
    return dict(q=q, k=k, v=rnd(1, t, hv, d), g=-torch.rand(1, t, hv, generator=gen), beta=torch.rand(1, t, hv, generator=gen),
                initial_state=rnd(len(seq_lens), hv, d, d), output_final_state=True, cu_seqlens=cu,
                chunk_indices=None, chunk_offsets=None, use_qk_l2norm_in_kernel=False)


def prefill_oracle(kw):
    cu = kw["cu_seqlens"].tolist()
    o = torch.zeros(kw["v"].shape[1:], dtype=torch.float64)
    finals = []
    for n in range(len(cu) - 1):
        lo, hi = cu[n], cu[n + 1]
        on, states = delta_rule(*(kw[x][0, lo:hi] for x in ("q", "k", "v", "g", "beta")), kw["initial_state"][n],
                                scale=kw["q"].shape[-1] ** -0.5, l2=kw["use_qk_l2norm_in_kernel"])
        o[lo:hi] = on
        finals.append(states[-1] if states else kw["initial_state"][n].double())
    return o, torch.stack(finals)


def make_op(qwen):
    op = qwen.ChunkGatedDeltaRule()
    assert getattr(type(op), "__atrex__", False) and type(op).name == "chunk_gated_delta_rule"
    return op


@pytest.mark.parametrize("l2", [False, True])
def test_prefill_matches_the_v_first_oracle(vllm, l2):
    _, qwen = vllm
    kw = prefill_case()
    kw["use_qk_l2norm_in_kernel"] = l2
    o, final = make_op(qwen)(**kw)
    want_o, want_final = prefill_oracle(kw)
    torch.testing.assert_close(o[0].double(), want_o, **TOL)
    torch.testing.assert_close(final.double(), want_final, **TOL)
    assert qwen.CALLS == [] and counts("gdn_prefill") == {}


def test_prefill_fills_core_attn_out(vllm):
    _, qwen = vllm
    kw = prefill_case()
    buf = torch.full((kw["v"].shape[1] + 3, *kw["v"].shape[2:]), float("nan"))
    o, _ = make_op(qwen)(**kw, core_attn_out=buf)
    assert o.data_ptr() == buf.data_ptr()
    torch.testing.assert_close(buf[:kw["v"].shape[1]].double(), prefill_oracle(kw)[0], **TOL)


@pytest.mark.parametrize("version, fallback", [("0.34.0", "triton"), ("0.30.0", "flashinfer")])
def test_prefill_declined_runs_vllms_chosen_forward(fake_vllm, version, fallback):
    """0.33+ resolve 'auto' to the Triton/FLA route (the op is then always called); older releases keep vLLM's
    FlashInfer choice, which stays the fallback."""
    importlib.import_module("vllm").__version__ = version
    importlib.import_module("vllm.plugins").load_general_plugins()
    qwen = importlib.import_module(QWEN)
    op = make_op(qwen)
    assert op.gdn_prefill_backend == fallback
    assert op(**prefill_case(), aiter_prefill_metadata=object()) == (f"vllm-{fallback}", None)
    assert counts("gdn_prefill") == {"aiter_prefill_metadata given (ROCm AITER prefill)": 1}


def test_prefill_explicit_vllm_backend_is_respected(vllm, caplog):
    _, qwen = vllm
    importlib.import_module("vllm.config").CURRENT.additional_config["gdn_prefill_backend"] = "flashinfer"
    caplog.set_level(logging.INFO, logger="vllm.atrex")
    for _ in range(2):
        assert qwen.ChunkGatedDeltaRule()(**prefill_case()) == ("vllm-flashinfer", None)
    assert sum("requested explicitly" in r.message for r in caplog.records) == 1


def test_prefill_fp64_is_declined_by_atrex_and_counted(vllm):
    _, qwen = vllm
    kw = {k: (v.double() if torch.is_tensor(v) and v.is_floating_point() else v) for k, v in prefill_case().items()}
    assert make_op(qwen)(**kw) == ("vllm-triton", None)
    [(reason, n)] = counts("gdn_prefill").items()
    assert n == 1 and reason == "unsupported `q` (supported: bfloat16, float16 or float32)"


# ------------------------------------------------------------------ GDN decode


def decode_case(tokens_per_seq, slots, pool_size=6, h=2, hv=4, d=16, seed=1):
    gen = torch.Generator().manual_seed(seed)
    t = sum(tokens_per_seq)

    def rnd(*shape):
        return torch.randn(*shape, generator=gen)

    cu = torch.tensor([0, *torch.tensor(tokens_per_seq).cumsum(0).tolist()], dtype=torch.int32)
    return dict(A_log=rnd(hv) * 0.5, a=rnd(t, hv), b=rnd(t, hv), dt_bias=rnd(hv) * 0.5, q=rnd(1, t, h, d),
                k=rnd(1, t, h, d), v=rnd(1, t, hv, d), initial_state=rnd(pool_size, hv, d, d) * 0.3,
                inplace_final_state=True, cu_seqlens=cu, ssm_state_indices=torch.tensor(slots, dtype=torch.int32),
                use_qk_l2norm_in_kernel=True)


def decode_oracle(kw, pool, accepted=None):
    g, beta = vllm_gates(kw["A_log"], kw["a"], kw["dt_bias"], kw["b"])
    cu = kw["cu_seqlens"].tolist()
    tokens = [(cu[n], cu[n + 1]) for n in range(len(cu) - 1)]
    return vllm_decode(pool, kw["ssm_state_indices"], tokens, kw["q"][0], kw["k"][0], kw["v"][0], g, beta,
                       scale=kw["q"].shape[-1] ** -0.5, l2=kw["use_qk_l2norm_in_kernel"], accepted=accepted)


def test_decode_step_updates_the_pool_like_vllm(vllm):
    _, qwen = vllm
    kw = decode_case([1, 1, 1, 1], [3, 0, 5, 1])  # slot 0: a padded entry (vLLM's NULL_BLOCK_ID)
    pool0 = kw["initial_state"].clone()
    want_o, want_pool = decode_oracle(kw, pool0)
    o, pool = qwen.fused_sigmoid_gating_delta_rule_update(**kw)
    assert pool is kw["initial_state"]
    torch.testing.assert_close(pool.double(), want_pool, **TOL)  # slot 0 untouched, 1 3 5 updated
    real = torch.tensor([0, 2, 3])
    torch.testing.assert_close(o[0, real].double(), want_o[real], **TOL)
    assert qwen.CALLS == [] and counts("gdn_decode") == {}


def test_mtp_step_writes_each_tokens_state(vllm):
    _, qwen = vllm
    slots = [[2, 3, 0], [4, 5, 1], [0, 0, 0], [0, 0, 0]]  # rows past N (graph padding) are sliced off
    kw = decode_case([3, 2], slots, pool_size=7)
    kw["num_accepted_tokens"] = torch.tensor([1, 2, 1, 1], dtype=torch.int32)
    pool0 = kw["initial_state"].clone()
    want_o, want_pool = decode_oracle(kw, pool0, accepted=kw["num_accepted_tokens"])
    o, pool = qwen.fused_sigmoid_gating_delta_rule_update(**kw)
    torch.testing.assert_close(pool.double(), want_pool, **TOL)
    torch.testing.assert_close(o[0].double(), want_o, **TOL)


@pytest.mark.parametrize("extra, reason", [
    ({"is_kda": True}, "is_kda=True (per-channel KDA gate)"),
    ({"inplace_final_state": False}, "inplace_final_state=False"),
    ({"ssm_state_indices": None}, "no state pool or no ssm_state_indices"),
])
def test_decode_declined_runs_vllms_kernel(vllm, extra, reason):
    _, qwen = vllm
    kw = decode_case([1, 1], [1, 2])
    kw.update(extra)
    assert qwen.fused_sigmoid_gating_delta_rule_update(**kw)[0] == "vllm-sigmoid"
    [(got, n)] = counts("gdn_decode").items()
    assert n == 1 and got.startswith(reason)


def packed_case(slots, h=2, hv=4, d=16, pool_size=5, seed=2):
    gen = torch.Generator().manual_seed(seed)
    bsz, width = len(slots), 2 * h * d + hv * d
    wide = torch.randn(bsz, width + 24, generator=gen)  # a row stride wider than the packed q|k|v
    return dict(mixed_qkv=wide[:, :width], a=torch.randn(bsz, hv, generator=gen), b=torch.randn(bsz, hv, generator=gen),
                A_log=torch.randn(hv, generator=gen) * 0.5, dt_bias=torch.randn(hv, generator=gen) * 0.5,
                scale=d ** -0.5, initial_state=torch.randn(pool_size, hv, d, d, generator=gen) * 0.3,
                out=torch.full((bsz, 1, hv, d), float("nan")), ssm_state_indices=torch.tensor(slots, dtype=torch.int32),
                use_qk_l2norm_in_kernel=True), (h, d, hv)


def test_packed_decode_matches_vllm_and_zeroes_padding(vllm):
    _, qwen = vllm
    kw, (h, d, hv) = packed_case([2, 0, 4])
    qkv, pool0 = kw["mixed_qkv"], kw["initial_state"].clone()
    q, k = qkv[:, :h * d].reshape(-1, h, d), qkv[:, h * d:2 * h * d].reshape(-1, h, d)
    g, beta = vllm_gates(kw["A_log"], kw["a"], kw["dt_bias"], kw["b"])
    want_o, want_pool = vllm_decode(pool0, kw["ssm_state_indices"], [(i, i + 1) for i in range(3)], q, k,
                                    qkv[:, 2 * h * d:].reshape(-1, hv, d), g, beta, scale=kw["scale"], l2=True)
    out, pool = qwen.fused_recurrent_gated_delta_rule_packed_decode(**kw)
    assert out is kw["out"] and pool is kw["initial_state"]
    torch.testing.assert_close(out[:, 0].double(), want_o, **TOL)  # the padded row: zeros, as vLLM's kernel writes
    torch.testing.assert_close(pool.double(), want_pool, **TOL)
    assert qwen.CALLS == []


def test_packed_decode_with_a_mismatched_state_runs_vllms_kernel(vllm):
    _, qwen = vllm
    kw, _ = packed_case([1, 2])
    kw["initial_state"] = kw["initial_state"][:, :3]  # 3 value heads: q|k|v no longer splits
    assert qwen.fused_recurrent_gated_delta_rule_packed_decode(**kw)[0] is kw["out"]
    assert qwen.CALLS == ["packed"] and len(counts("gdn_decode")) == 1
