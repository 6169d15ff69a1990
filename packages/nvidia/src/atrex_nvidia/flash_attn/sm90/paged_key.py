"""What ATREX's paged SM90 attention launchers (``decode_splitkv``, ``paged_prefill``) share: the call class that
keys their launch plans (``atrex_nvidia/launch_plan.py``), the capture check and the empty-tensor stand-ins."""

from atrex.errors import AtrexCaptureError
from atrex_nvidia.launch_plan import MISS, Arg, int_class, kept_runner
from atrex_nvidia.triton_warm import launch_key


def class_key(call, out, extra, seqlen_k=None) -> tuple:
    """Everything a paged attention launch plan is built from and everything Triton specialises its launches on:
    dtypes, exact shapes and strides of the tensors (rows and batch aside), flags, the device and its SM count,
    ``batch`` / ``max_seqlen_q`` / ``num_splits`` exactly, ``seqlen_k`` (what the launcher's plan reads of
    ``max_seqlen_k``, which grows every decode step: the kernels never see it), the == 1 / % 16 / int32 class of
    ``total_q`` and ``total_q * num_heads_q``, each pointer's 16-byte alignment, ``out``'s strides and the
    launcher's ``extra`` (its overrides). A record the core's memo served carries its validated class
    (``call.cls``), which stands for the dtypes, shapes, strides, flags and scalars."""
    q, k, v, bt, sk, cu = call.q, call.k, call.v, call.block_table, call.seqused_k, call.cu_seqlens_q
    if call.cls is not None and call.aligned16 and rest_aligned(call, out):  # (host cost: the memo's usual record)
        return short_key(call, out, extra, seqlen_k)
    ptrs = bt.data_ptr() | sk.data_ptr() | cu.data_ptr()
    if call.cls is None or not call.aligned16:  # (a memo-served record's aligned16 covers q, k, v and out)
        ptrs |= q.data_ptr() | k.data_ptr() | v.data_ptr() | out.data_ptr()
    elif out is not call.out:
        ptrs |= out.data_ptr()
    opt = (call.q_descale, call.k_descale, call.v_descale, call.s_aux)
    has_opt = opt[0] is not None or opt[1] is not None or opt[2] is not None or opt[3] is not None
    if has_opt:
        for t in opt:
            if t is not None:
                ptrs |= t.data_ptr()
    align = not ptrs & 15 or tuple(None if t is None else t.data_ptr() & 15 for t in (q, k, v, bt, sk, cu, out, *opt))
    tq = call.total_q
    dyn = (call.batch, call.max_seqlen_q, seqlen_k, int_class(tq), int_class(tq * call.num_heads_q), align,
           out.stride(), extra)
    if call.cls is not None:  # the core's validated class fixes everything else
        return call.cls, dyn
    opt_key = tuple(None if t is None else (t.dtype, t.shape, t.stride()) for t in opt) if has_opt else None
    return (call.device, call.dtype, out.dtype, q.stride(), k.shape, k.stride(), v.stride(), bt.shape[1],
            bt.stride(), call.num_heads_q, call.num_splits, call.target.sm_count, call.softcap > 0, call.window_left,
            call.window_right, call.return_lse, opt_key, dyn)


def rest_aligned(call, out) -> bool:
    """Whether the pointers a memo-served record's ``aligned16`` leaves out are 16-byte aligned: the block table,
    ``seqused_k``, ``cu_seqlens_q``, the descales and sinks the class has, and ``out`` when it is not ``call.out``
    (the operator allocated it)."""
    ptrs = call.block_table.data_ptr() | call.seqused_k.data_ptr() | call.cu_seqlens_q.data_ptr()
    if call.is_fp8:
        for t in (call.q_descale, call.k_descale, call.v_descale):
            if t is not None:
                ptrs |= t.data_ptr()
    if call.s_aux is not None:
        ptrs |= call.s_aux.data_ptr()
    if out is not call.out:
        ptrs |= out.data_ptr()
    return not ptrs & 15


def short_key(call, out, extra, seqlen_k) -> tuple:
    """:func:`class_key` of a memo-served record whose pointers are all 16-byte aligned (``call.aligned16`` and
    :func:`rest_aligned`): the class fixes which optional tensors exist (descales only with fp8) and the strides of
    ``call.out``; the lengths enter as Triton specialises them (== 1, multiples of 16, past int32)."""
    tq = call.total_q
    n = tq * call.num_heads_q
    return (call.cls, call.batch, call.max_seqlen_q, seqlen_k, tq == 1, not tq & 15, not n & 15, n > 0x7FFFFFFF,
            None if out is call.out else out.stride(), extra)


def runner(warm, run, plan_key, go, device_of):
    """A paged launcher's runner for one memo class and per-call key (``launch_plan.kept_runner``). Within them the
    plan key is fixed while every pointer is aligned (its lengths, alignment and ``out`` strides are the class's
    and the key's), so the plan ``run`` kept serves later aligned calls through ``go(plan, call, out, stream)``.
    ``device_of(plan)``: the device its kernels were loaded on."""
    def find(call, out):
        if not (call.aligned16 and rest_aligned(call, out)):
            return None
        lp = warm.plan(plan_key(call, out))
        return None if lp is None or lp.go is None else (lp, device_of(lp))

    def go_kept(lp, stream, call, out):
        return go(lp, call, out, stream) if rest_aligned(call, out) else MISS

    return kept_runner(warm, run, find, go_kept)


def require_compiled(warm, impl_id: str, call, specs) -> tuple[list, list]:
    """(the launch keys of ``specs`` ((kernel, args, meta) triples), those ``warm`` has not launched yet); under
    capture any missing key raises :class:`AtrexCaptureError` (before allocation or launch)."""
    keys = [launch_key(kernel, args, meta) for kernel, args, meta in specs]
    missing = warm.missing(keys)
    if missing and call.capturing:
        raise AtrexCaptureError(
            f"{impl_id}: the Triton specialisation {missing[0][0]} for this call is not compiled and CUDA-graph "
            "capture is active; prewarm first (atrex.prewarm('flash_attn_varlen', [call kwargs]) or one eager call "
            "with the same static shape) before capturing")
    return keys, missing


def nonempty(t, stand_in):
    """A zero-size KV cache or table has no valid pointer; no element is read then (no visible key)."""
    return t if t.numel() else stand_in


def pointer_args(call) -> list:
    """The kernels' leading pointer arguments (q, k, v, block table, ``seqused_k``, ``cu_seqlens_q``, the three
    descales, the sinks) as expressions over ``call`` for a generated launch (``launch_plan.generate``): None where
    the class has no tensor, the stand-ins :func:`nonempty` picks for an empty cache or table."""
    def p(name):
        return None if getattr(call, name) is None else Arg(f"call.{name}.data_ptr()")

    q = p("q")
    return [q, p("k") if call.k.numel() else q, p("v") if call.v.numel() else q,
            p("block_table") if call.block_table.numel() else p("seqused_k"), p("seqused_k"), p("cu_seqlens_q"),
            p("q_descale"), p("k_descale"), p("v_descale"), p("s_aux")]
