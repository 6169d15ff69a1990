# Round 35, call r132 (any sm90 card, ~560 s):
#   on an H200: the goal records at main's defaults (gdn-r103.sh's steps, ~420 s), then what fits of the H100 part;
#   elsewhere: (1) the composition kernel alone over its launch options (scripts/gdn_scan_probe.py; TP 4 and TP 8,
#   4 to 16 segments); (2) TP 8 below 8k by graph replay, the sequence-parallel plan against the single chain and
#   smaller segments (ATREX alone).
#   (carry [".gpuhost/g", ".gpuhost/tcache.tgz"]) bash .gpuhost/g/install.sh; ATREX_BENCH_COMMIT=<sha> OUT=$OUT \
#   bash scripts/calls/gdn-r132.sh
. scripts/gdn-call.sh
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader | tee "$OUT/smi.txt"
root="$OUT"
if grep -q H200 "$OUT/smi.txt"; then
  gdn_bench_cases 300 140 r132 varlen T32768
  OUT="$root/sweep"; mkdir -p "$OUT"
  GDN_CASES=varlen16x1024_H32_HV32 GDN_SWEEP_ARGS="--no-fla --graph --h0" gdn_sweep 70 h0pf0,default
  OUT="$root"
  gdn_archive r132
  gdn_bench_cases 420 110 r132 T8192-H16-HV32
fi
left=$(( 560 - SECONDS ))
[ "$left" -lt 60 ] && { echo "nothing more (${left}s left)"; exit 0; }
timeout $(( left * 2 / 3 )) python3 scripts/gdn_scan_probe.py --prec tf32x3 --out "$root/scan_probe.json" > "$root/scan_probe.log" 2>&1
echo "scan probe exit $?"; sort -k7 -n "$root/scan_probe.log" | grep -v failed | head -3
python3 - "$root/scan_probe.json" <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))["rows"]
best = {}
for r in rows:
    k = (r["HV"], r["NA"])
    if r["rrmse_ht"] < 1e-5 and (k not in best or r["us"] < best[k]["us"]):
        best[k] = r
cur = {(r["HV"], r["NA"]): r for r in rows if (r["prec"], r["BVS"], r["warps"], r["stages"]) == ("tf32x3", 16, 8, 3)}
for k in sorted(best):
    b, c = best[k], cur.get(k)
    print(f"HV {k[0]} NA {k[1]:2d}: default {c['us'] if c else float('nan'):6.2f} us; best {b['us']:6.2f} us "
          f"({b['prec']} BVS {b['BVS']} warps {b['warps']} stages {b['stages']}; rrmse {b['rrmse_ht']:.1e})")
PY
OUT="$root/tp8"; mkdir -p "$OUT"
GDN_CASES=T2048_H2_HV4,T4096_H2_HV4,T8192_H2_HV4 GDN_SWEEP_ARGS="--no-fla --graph" \
  gdn_sweep $(( 560 - SECONDS )) default,no_seqpar,seqpar_c4
OUT="$root"
gdn_archive r132
