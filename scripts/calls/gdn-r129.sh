# Round 34, call r129 (any sm90 card): the sequence-parallel plan at its new defaults (segment pass at 64 columns,
# the composition with S in registers, tf32x3 products over 16 columns, segments of 8 chunks and more): its tests and
# the fused kernel's, a graph-replay sweep against the single chain and the other settings at TP 4 (1k-32k tokens) and
# TP 8, per-kernel times of the default at 2k and 8k, then the whole sm90 target file with the time left (~560 s).
#   (carry [".gpuhost/g", ".gpuhost/tcache.tgz"]) bash .gpuhost/g/install.sh; OUT=$OUT bash scripts/calls/gdn-r129.sh
. scripts/gdn-call.sh
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader | tee "$OUT/smi.txt"
gdn_tests_k 100 "seq_parallel or segment_scan or one_sequence or fused_rc" r129-seq.log
root="$OUT"
OUT="$root/graph"; mkdir -p "$OUT"
GDN_CASES=T1024_H4_HV8,T2048_H4_HV8,T4096_H4_HV8,T8192_H4_HV8,T32768_H4_HV8,T8192_H2_HV4,varlen1x8192_H4_HV8 \
  GDN_SWEEP_ARGS="--no-fla --graph" gdn_sweep 170 default,no_seqpar,seqpar_c4,seqpar_bv32,scan_ieee,scan_bv32,seqpar_max8
OUT="$root/prof"; mkdir -p "$OUT"
GDN_CASES=T2048_H4_HV8,T8192_H4_HV8 GDN_SWEEP_ARGS="--no-fla" gdn_sweep 40 default,no_seqpar > /dev/null
python3 - "$OUT/gdnv/gdn_bench.json" <<'PY'
import json, sys
for case, rows in json.load(open(sys.argv[1]))["sweeps"].items():
    for var, r in rows.items():
        km = r.get("kernels_ms") or {}
        ks = " ".join(f"{k.replace('atrex_sm90_gdn_', '')}={v['ms_per_fwd'] * 1e3:.1f}us" for k, v in km.items())
        print(f"{case:14s} {var:10s} {ks}")
PY
OUT="$root"
gdn_archive r129
GDN_TEST_WORKERS=14 gdn_target_tests $(( 570 - SECONDS ))
gdn_archive r129
