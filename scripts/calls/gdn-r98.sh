# Round 28, call r98 (folds round 27's r96 into it): one call, one whole-file run with every candidate knob on.
#   1. the new GPU cases: test_rc_round27_options_same_bits (GL_RC_L2_PREFETCH, GL_RC_HT_REMAT; gl_rc and gl_rc2,
#      bit for bit), the gl_rc2 rings test, test_pdl_same_bits_eager_and_in_chained_graphs (launch.PDL);
#   2. bench_gdn sweep by CUDA-graph replay (--graph), ATREX alone, varlen 16x1024: the default (gl_rc2), PDL, the L2
#      prefetch, HT_REMAT, both, QNORM_MMA with and without the prefetch, all of them;
#   3. the same at T=32768 and T=8192: the default, PDL, GL_WS_QSIDE + GL_WS_QSCALE (r97 on an H100: 0.905 against
#      0.947 ms and 0.258 against 0.266, eager), both;
#   5. the whole sm90 target file with GL_WS_QSIDE, GL_WS_QSCALE and GL_RC_QNORM_MMA switched on in the call's tree,
#      and GL_RC_L2_PREFETCH, GL_RC_HT_REMAT, PDL too where step 1 passed (a failure names its knob by its test).
#   (carry [".gpuhost/g", ".gpuhost/tcache.tgz"])
#   bash .gpuhost/g/install.sh; ATREX_BENCH_COMMIT=<sha> GDN_TEST_WORKERS=14 bash scripts/calls/gdn-r98.sh
. scripts/gdn-call.sh
L=packages/nvidia/src/atrex_nvidia/chunk_gdn/sm90/launch.py
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader > "$OUT/smi.txt"; cat "$OUT/smi.txt"
gdn_tests_k 150 "round27_options or rc2_rings or pdl" tests_new.log
knobs="GL_WS_QSIDE|GL_WS_QSCALE|GL_RC_QNORM_MMA"
if tail -n 1 "$OUT/tests_new.log" | grep -q " passed" && ! tail -n 1 "$OUT/tests_new.log" | grep -qE "failed|error"; then
  knobs="$knobs|GL_RC_L2_PREFETCH|GL_RC_HT_REMAT|PDL"
fi
root="$OUT"; OUT="$root/sweep"; mkdir -p "$OUT"
GDN_CASES=varlen16x1024_H32_HV32 GDN_SWEEP_ARGS="--no-fla --graph" gdn_sweep 130 \
  default,pdl,rc2_pf,rc2_remat,rc2_pf_remat,rc2_mma,rc2_mma_pf,rc2_all
OUT="$root/ws"; mkdir -p "$OUT"
GDN_CASES=T32768_H16_HV32,T8192_H16_HV32 GDN_SWEEP_ARGS="--no-fla --graph" gdn_sweep 110 default,pdl,ws_qscale,pdl_ws_qscale
OUT="$root"
# 4. the varlen graph bench with fla-core 0.6 in the same run, the default plus each bit-equal knob (PDL, the L2
#    prefetch, HT_REMAT) that passed step 1 and was faster than the default in step 2's graph sweep
hook=$(python3 - "$root/sweep/gdnv/gdn_bench.json" "$knobs" <<'PY'
import json, sys
try:
    sw = json.load(open(sys.argv[1]))["sweeps"]["varlen16x1024_H32_HV32"]
except Exception:
    sw = {}
base = sw.get("default", {}).get("ms")
sets = []
for name, knob in (("pdl", "PDL"), ("rc2_pf", "GL_RC_L2_PREFETCH"), ("rc2_remat", "GL_RC_HT_REMAT")):
    ms = sw.get(name, {}).get("ms")
    if base and ms and ms < base and knob in sys.argv[2]:
        sets.append(f"L.{knob} = True")
print("import atrex_nvidia.chunk_gdn.sm90.launch as L; " + "; ".join(sets) if sets else "pass")
PY
)
echo "graph bench hook: $hook"
if grep -q H200 "$OUT/smi.txt"; then gdn_bench_case 420 150 varlen "$hook"; else echo "graph bench skipped (not an H200)"; fi
grep -h "^| perf" "$OUT"/graph/varlen/bench_*.md 2>/dev/null | cut -c1-140
sed -i -E "s/^($knobs) = False\$/\\1 = True/" $L
grep -E "^(GL_WS_QSIDE|GL_WS_QSCALE|GL_RC_QNORM_MMA|GL_RC_L2_PREFETCH|GL_RC_HT_REMAT|PDL) =" $L | tr '\n' ' '; echo
gdn_target_tests_left 585
gdn_archive r98
