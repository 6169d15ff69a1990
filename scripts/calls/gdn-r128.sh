# Round 34, call r128 (any sm90 card): where the sequence-parallel plan's time goes (r127: slower than the single chain
# up to T = 8192 at TP 4, faster at 32768). bench_gdn sweeps at TP 4 (1k, 8k, 32k tokens) and TP 8 (8k): per-kernel
# times (torch profiler, eager) and then whole-call graph replay, for the default, the single chain (no_seqpar), the
# segment pass at 64 columns, and the composition with tf32x3 products / 16 columns; then the fused kernel's tests
# (their two-kernel side now takes the single chain) and the plan's own tests (~330 s).
#   (carry [".gpuhost/g", ".gpuhost/tcache.tgz"]) bash .gpuhost/g/install.sh; OUT=$OUT bash scripts/calls/gdn-r128.sh
. scripts/gdn-call.sh
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader | tee "$OUT/smi.txt"
root="$OUT"
export GDN_CASES=T1024_H4_HV8,T8192_H4_HV8,T32768_H4_HV8,T8192_H2_HV4
VARS=default,no_seqpar,seqpar_bv64,scan_tf32x3,scan_bv16,seqpar_bv64_tf32x3_s16
OUT="$root/prof"; mkdir -p "$OUT"; GDN_SWEEP_ARGS="--no-fla" gdn_sweep 110 $VARS > /dev/null
python3 - "$OUT/gdnv/gdn_bench.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))["sweeps"]
for case, rows in d.items():
    for var, r in rows.items():
        km = r.get("kernels_ms") or {}
        ks = " ".join(f"{k.replace('atrex_sm90_gdn_', '')}={v:.4f}" for k, v in km.items()) if isinstance(km, dict) else km
        print(f"{case:16s} {var:24s} {r.get('ms') or 0:.4f} | {ks}")
PY
OUT="$root/graph"; mkdir -p "$OUT"; GDN_SWEEP_ARGS="--no-fla --graph" gdn_sweep 100 $VARS
OUT="$root"
gdn_archive r128
gdn_tests_k $(( 330 - SECONDS )) "fused_rc or seq_parallel or segment_scan" r128-tests.log
gdn_archive r128
