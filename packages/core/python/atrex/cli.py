"""The ``atrex`` command line: ``env``, ``explain``, ``prewarm``, ``demo``."""

from __future__ import annotations

import functools
import json
import sys

import click


def resolve_device(name: str | None):
    """``--device``: cuda:current when a GPU is visible and none is named, else cpu. A device that does
    not exist here is a one-line usage error (exit 2), never a traceback from the first allocation."""
    import torch

    if not name:
        return torch.device("cuda", torch.cuda.current_device()) if torch.cuda.is_available() else torch.device("cpu")
    try:
        dev = torch.device(name)
    except (RuntimeError, ValueError) as exc:
        raise click.BadParameter(str(exc).splitlines()[0], param_hint="--device") from None
    if dev.type == "cuda":
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if count == 0:
            raise click.UsageError(f"--device {name}: no CUDA device is visible")
        if dev.index is not None and dev.index >= count:
            raise click.UsageError(f"--device {name}: only {count} CUDA device(s) visible")
    elif dev.type != "cpu":
        raise click.BadParameter(f"{name!r}: ATREX's commands take cpu or cuda[:N]", param_hint="--device")
    return dev


_device = resolve_device


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="atrex-core", prog_name="atrex")
def main() -> None:
    """ATREX: hardware-specific GPU operators for LLM serving, behind one API."""


def env_report(device=None) -> dict:
    from atrex import __version__, env
    from atrex.dispatch.registry import get_registry

    reg = get_registry()  # first: with ATREX_STRICT_PLUGINS=1 a broken plugin fails before torch loads

    import torch

    from atrex.dispatch.target import classify_device

    dev = _device(device)
    target = classify_device(dev)
    ops: dict[str, list] = {}
    for impl in reg.impls:
        ops.setdefault(impl.spec.op, []).append({
            "id": impl.id, "plugin": impl.plugin, "archs": list(impl.spec.archs), "priority": impl.spec.priority,
            "summary": impl.spec.summary,
            "disabled": impl.id in env.settings().disabled,
            "candidate_here": impl in reg.candidates(impl.spec.op, target.id),
        })
    for lst in ops.values():
        lst.sort(key=lambda d: (d["priority"], d["plugin"], d["id"]))
    s = env.settings()
    return {
        "atrex_core": __version__,
        "torch": torch.__version__,
        "device": str(dev),
        "target": {"id": target.id, "family": target.family, "arch": target.arch, "name": target.name,
                   "capability": list(target.capability) if target.capability else None,
                   "runtime": target.runtime, "sm_count": target.sm_count, "emulated": target.emulated},
        "plugins": [p.as_dict() for p in reg.plugins],
        "implementations": ops,
        "settings": {"strict_plugins": s.strict_plugins, "disabled": sorted(s.disabled),
                     "forced": s.forced_impl, "allow_reference": s.allow_reference, "ppu_emulate": s.ppu_emulate},
    }


@main.command("env")
@click.option("--json", "as_json", is_flag=True, help="machine-readable output")
@click.option("--device", default=None, help="torch device to classify (default: cuda:current if present, else cpu)")
def env_cmd(as_json: bool, device: str | None) -> None:
    """Detected target, plugins (distribution, version, state) and registered implementations."""
    rep = env_report(device)
    if as_json:
        click.echo(json.dumps(rep, indent=2))
        return
    t = rep["target"]
    click.echo(f"atrex-core {rep['atrex_core']}  torch {rep['torch']}")
    cap = ".".join(map(str, t["capability"])) if t["capability"] else "-"
    click.echo(f"device {rep['device']}: target {t['id']}  name {t['name']!r}  capability {cap}  "
               f"runtime {t['runtime'] or '-'}" + ("  [EMULATED]" if t["emulated"] else ""))
    click.echo("plugins:")
    if not rep["plugins"]:
        click.echo("  (none installed: `uv sync` in the ATREX workspace installs both; elsewhere install the "
                   "atrex-nvidia / atrex-ppu wheels, see the README's Install section)")
    for p in rep["plugins"]:
        line = f"  {p['name']:<8} {p['distribution'] or '?'} {p['version'] or ''}  [{p['state']}]"
        if p["error"]:
            line += f"  {p['error']}"
        click.echo(line)
    click.echo("implementations:")
    for op, lst in rep["implementations"].items():
        click.echo(f"  {op}:")
        for i in lst:
            flags = " (disabled)" if i["disabled"] else ""
            flags += "  <- candidate here" if i["candidate_here"] else ""
            archs = "every target" if i["archs"] == ["*"] else ", ".join(i["archs"])
            click.echo(f"    {i['id']:<24} prio {i['priority']:<8} {archs}{flags}")


def _attn_kwargs(device, dtype, q_lens, k_lens, heads, kv_heads, head_dim, page_size, causal, window, softcap,
                 sinks, lse, num_splits):
    from atrex.inputs import DTYPES, attn_inputs

    kw = attn_inputs(q_lens, k_lens, num_heads_q=heads, num_heads_k=kv_heads, head_dim=head_dim,
                     dtype=DTYPES[dtype], page_size=page_size or None, device=device, causal=causal,
                     window_size=list(window) if window else None, softcap=softcap, sinks=sinks, return_lse=lse)
    kw["num_splits"] = num_splits
    return kw


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


_attn_options = [
    click.option("--device", default=None),
    click.option("--dtype", default="bf16", type=click.Choice(["bf16", "fp16", "fp32", "fp8", "fp8_e5m2"])),
    click.option("--q-lens", default="1", help="comma-separated query lengths, one per sequence"),
    click.option("--k-lens", default="1024", help="comma-separated KV lengths"),
    click.option("--heads", default=32, show_default=True),
    click.option("--kv-heads", default=8, show_default=True),
    click.option("--head-dim", default=128, show_default=True),
    click.option("--page-size", default=16, show_default=True, help="0 = non-paged (cu_seqlens_k)"),
    click.option("--causal/--no-causal", default=True),
    click.option("--window", nargs=2, type=int, default=None, help="LEFT RIGHT (-1 = unbounded)"),
    click.option("--softcap", default=0.0),
    click.option("--sinks", is_flag=True),
    click.option("--lse", is_flag=True),
    click.option("--num-splits", default=0),
]

_gdn_options = [
    click.option("--device", default=None),
    click.option("--dtype", default="bf16", type=click.Choice(["bf16", "fp16", "fp32"])),
    click.option("--seq-lens", default="8192", help="comma-separated lengths; several = varlen (B=1)"),
    click.option("--heads", default=16, show_default=True),
    click.option("--v-heads", default=32, show_default=True),
    click.option("--head-dim", default=128, show_default=True),
    click.option("--state", default="fp32", type=click.Choice(["none", "fp32", "bf16"])),
    click.option("--v-first/--k-first", default=True),
    click.option("--l2norm/--no-l2norm", default=True),
    click.option("--gate", default="none", type=click.Choice(["none", "A_log", "A_log+dt_bias"]),
                 help="fla's in-kernel gate (use_gate_in_kernel) with these [HV] fp32 parameters"),
    click.option("--beta-sigmoid", default="none", type=click.Choice(["none", "sigmoid", "sigmoid-neg-eig"]),
                 help="use_beta_sigmoid_in_kernel (and allow_neg_eigval)"),
]


_decode_options = [
    click.option("--device", default=None),
    click.option("--dtype", default="bf16", type=click.Choice(["bf16", "fp16", "fp32"])),
    click.option("--batch", default=32, show_default=True, help="sequences (packed, vLLM-style)"),
    click.option("--tokens", default=1, show_default=True, help="tokens per sequence (> 1: MTP slots)"),
    click.option("--heads", default=16, show_default=True),
    click.option("--v-heads", default=32, show_default=True),
    click.option("--head-dim", default=128, show_default=True),
    click.option("--pool", default="fp32", type=click.Choice(["fp32", "bf16"])),
    click.option("--v-first/--k-first", default=True),
    click.option("--l2norm/--no-l2norm", default=True),
]


def _decode_kwargs(device, dtype, batch, tokens, heads, v_heads, head_dim, pool, v_first, l2norm):
    from atrex.inputs import DTYPES, gdn_decode_inputs

    return gdn_decode_inputs([tokens] * batch, num_heads=heads, num_v_heads=v_heads, head_k_dim=head_dim,
                             head_v_dim=head_dim, dtype=DTYPES[dtype], pool=pool, state_v_first=v_first,
                             mtp=tokens > 1, l2norm=l2norm, extra_slots=0, device=device)


def _apply(options):
    def deco(fn):
        for opt in reversed(options):
            fn = opt(fn)
        return fn

    return deco


def _gdn_kwargs(device, dtype, seq_lens, heads, v_heads, head_dim, state, v_first, l2norm, gate="none",
                beta_sigmoid="none"):
    import torch

    from atrex.inputs import DTYPES, gdn_inputs

    lens = _ints(seq_lens)
    kw = gdn_inputs(lens if len(lens) > 1 else None, batch=1, seq_len=lens[0], num_heads=heads,
                    num_v_heads=v_heads, head_k_dim=head_dim, head_v_dim=head_dim, dtype=DTYPES[dtype],
                    initial_state=None if state == "none" else state, state_v_first=v_first, l2norm=l2norm,
                    device=device)
    if gate != "none":  # (zeros: a prewarm or an explain needs the shapes and dtypes only)
        kw.update(use_gate_in_kernel=True, A_log=torch.zeros(v_heads, device=device),
                  dt_bias=torch.zeros(v_heads, device=device) if gate == "A_log+dt_bias" else None)
    if beta_sigmoid != "none":
        kw.update(use_beta_sigmoid_in_kernel=True, allow_neg_eigval=beta_sigmoid == "sigmoid-neg-eig")
    return kw


def _atrex_errors(fn):
    """Report an ATREX error (malformed shape, nothing supports it) as a one-block CLI error, exit 1."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        from atrex.errors import AtrexError

        try:
            return fn(*args, **kwargs)
        except AtrexError as exc:
            raise click.ClickException(f"{type(exc).__name__}: {exc}") from exc

    return wrapper


@main.group()
def explain() -> None:
    """Print the dispatch trace for a call shape, without running anything."""


@explain.command("flash_attn")
@_apply(_attn_options)
@click.option("--json", "as_json", is_flag=True)
@_atrex_errors
def explain_attn(device, dtype, q_lens, k_lens, heads, kv_heads, head_dim, page_size, causal, window, softcap,
                 sinks, lse, num_splits, as_json):
    """Explain flash_attn_varlen_func for a vLLM-style call."""
    import atrex

    kw = _attn_kwargs(_device(device), dtype, _ints(q_lens), _ints(k_lens), heads, kv_heads, head_dim, page_size,
                      causal, window, softcap, sinks, lse, num_splits)
    trace = atrex.explain_flash_attn_varlen_func(**kw)
    click.echo(json.dumps(trace.as_dict(), indent=2) if as_json else str(trace))


@explain.command("chunk_gdn")
@_apply(_gdn_options)
@click.option("--json", "as_json", is_flag=True)
@_atrex_errors
def explain_gdn(device, dtype, seq_lens, heads, v_heads, head_dim, state, v_first, l2norm, gate, beta_sigmoid,
                as_json):
    """Explain chunk_gated_delta_rule for an fla/vLLM-style call."""
    import atrex

    kw = _gdn_kwargs(_device(device), dtype, seq_lens, heads, v_heads, head_dim, state, v_first, l2norm, gate,
                     beta_sigmoid)
    trace = atrex.explain_chunk_gated_delta_rule(**kw)
    click.echo(json.dumps(trace.as_dict(), indent=2) if as_json else str(trace))


@explain.command("gdn_decode")
@_apply(_decode_options)
@click.option("--json", "as_json", is_flag=True)
@_atrex_errors
def explain_decode(device, dtype, batch, tokens, heads, v_heads, head_dim, pool, v_first, l2norm, as_json):
    """Explain fused_recurrent_gated_delta_rule for a vLLM-style decode / MTP step."""
    import atrex

    kw = _decode_kwargs(_device(device), dtype, batch, tokens, heads, v_heads, head_dim, pool, v_first, l2norm)
    trace = atrex.explain_fused_recurrent_gated_delta_rule(**kw)
    click.echo(json.dumps(trace.as_dict(), indent=2) if as_json else str(trace))


@main.group()
def prewarm() -> None:
    """Compile ahead (before CUDA-graph capture) the kernels a call shape needs."""


@prewarm.command("flash_attn")
@_apply(_attn_options)
@_atrex_errors
def prewarm_attn(device, dtype, q_lens, k_lens, heads, kv_heads, head_dim, page_size, causal, window, softcap,
                 sinks, lse, num_splits):
    import atrex

    kw = _attn_kwargs(_device(device), dtype, _ints(q_lens), _ints(k_lens), heads, kv_heads, head_dim, page_size,
                      causal, window, softcap, sinks, lse, num_splits)
    for impl_id, status in atrex.prewarm("flash_attn_varlen", [kw]):
        click.echo(f"{impl_id}: {status}")


@prewarm.command("chunk_gdn")
@_apply(_gdn_options)
@_atrex_errors
def prewarm_gdn(device, dtype, seq_lens, heads, v_heads, head_dim, state, v_first, l2norm, gate, beta_sigmoid):
    import atrex

    kw = _gdn_kwargs(_device(device), dtype, seq_lens, heads, v_heads, head_dim, state, v_first, l2norm, gate,
                     beta_sigmoid)
    for impl_id, status in atrex.prewarm("chunk_gated_delta_rule", [kw]):
        click.echo(f"{impl_id}: {status}")


@prewarm.command("gdn_decode")
@_apply(_decode_options)
@_atrex_errors
def prewarm_decode(device, dtype, batch, tokens, heads, v_heads, head_dim, pool, v_first, l2norm):
    import atrex

    kw = _decode_kwargs(_device(device), dtype, batch, tokens, heads, v_heads, head_dim, pool, v_first, l2norm)
    for impl_id, status in atrex.prewarm("fused_recurrent_gated_delta_rule", [kw]):
        click.echo(f"{impl_id}: {status}")


@main.command()
@click.option("--device", default=None,
              help="cpu, cuda, cuda:1 ... (default: the current GPU when ATREX has kernels for it, else cpu)")
def demo(device: str | None) -> None:
    """Run both operators on a realistic small shape and compare with float64 oracles."""
    from atrex.demo import default_device, run_demo

    if not run_demo(resolve_device(device) if device else default_device()):
        sys.exit(1)


def _register_validation_commands() -> None:
    from atrex.validation.commands import bench, verify

    main.add_command(verify)
    main.add_command(bench)


_register_validation_commands()


if __name__ == "__main__":  # pragma: no cover
    main()
