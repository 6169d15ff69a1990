# Shared steps of the per-call H200 scripts (scripts/gdn-rN.sh from round 11 on): source it, then call the steps.
#   . scripts/gdn-call.sh; gdn_target_tests 120 "mask_out or gva_share"; gdn_sweep 260 default,i3_mo
# Logs go under $OUT (default /tmp/atrex-out); each step prints a short summary for the call's output tail.
set -uo pipefail
OUT="${OUT:-/tmp/atrex-out}"; mkdir -p "$OUT"
export PYTHONPATH="$PWD/packages/core/python:$PWD/packages/nvidia/src:$PWD/packages/ppu/src:${PYTHONPATH:-}"
export ATREX_EXTRA_PLUGINS=atrex_nvidia._plugin:plugin ATREX_STRICT_PLUGINS=1 PYTHONUNBUFFERED=1
GDN_CASES=T8192_H16_HV32,T32768_H16_HV32,varlen16x1024_H32_HV32
# A Triton cache prebuilt on the CPU for the host's Triton (scripts/gdn_host_cache.py, round 19), carried as
# .gpuhost/tcache.tgz (round 21: the folder compresses ~5x, 63 MB -> 12 MB, leaving the carry limit room; run's carry:
# [".gpuhost/g", ".gpuhost/tcache.tgz"]) or as the folder .gpuhost/tcache: unpacked or copied to a writable folder and
# used as TRITON_CACHE_DIR; gdn_archive reports the ATREX kernels the call still compiled (cache misses).
if [ -f .gpuhost/tcache.tgz ] || [ -d .gpuhost/tcache ]; then
  rm -rf /tmp/atrex-tcache
  if [ -f .gpuhost/tcache.tgz ]; then
    mkdir -p /tmp/atrex-tcache; tar xzf .gpuhost/tcache.tgz -C /tmp/atrex-tcache --strip-components=1
  else
    cp -r .gpuhost/tcache /tmp/atrex-tcache
  fi
  export TRITON_CACHE_DIR=/tmp/atrex-tcache
  ls /tmp/atrex-tcache > "$OUT/tcache_before.txt"
  echo "triton cache: $(wc -l < "$OUT/tcache_before.txt") prebuilt entries"
fi

# gdn_target_tests TIMEOUT [PYTEST -k EXPRESSION]: the sm90 target file on 8 workers, failures listed
gdn_target_tests() {
  local k=(); [ -n "${2:-}" ] && k=(-k "$2")
  timeout "$1" python3 -m pytest op_test/nvidia/chunk_gdn/test_chunk_gdn_sm90.py -v -p no:cacheprovider -n ${GDN_TEST_WORKERS:-8} "${k[@]}" \
    > "$OUT/tests.log" 2>&1
  echo "tests: rc $? $(tail -n 1 "$OUT/tests.log")"
  grep -E "^\[gw.*(FAILED|ERROR)" "$OUT/tests.log" | sed 's/.*:://' | head -8
  grep -m 4 -E "^E  " "$OUT/tests.log" | cut -c1-200
}

# gdn_tests_k TIMEOUT EXPRESSION LOG: the sm90 target file's tests matching EXPRESSION on 14 workers into $OUT/LOG,
# failures listed
gdn_tests_k() {
  timeout "$1" python3 -m pytest op_test/nvidia/chunk_gdn/test_chunk_gdn_sm90.py -v -p no:cacheprovider -n 14 -k "$2" \
    > "$OUT/$3" 2>&1
  echo "tests ($2): rc $? $(tail -n 1 "$OUT/$3")"
  grep -E "(FAILED|ERROR)" "$OUT/$3" | sed 's/.*:://' | head -10; grep -m 6 -E "^E  " "$OUT/$3" | cut -c1-240
}

# gdn_target_tests_left CAP: the whole sm90 target file with what is left before CAP seconds into the call (skipped
# under 60 s)
gdn_target_tests_left() {
  local t=$(( $1 - SECONDS - 10 ))
  if [ "$t" -ge 60 ]; then gdn_target_tests "$t"; else echo "target file skipped (${t}s left)"; fi
}

# gdn_sweep TIMEOUT VARIANTS: bench_gdn's sweep of VARIANTS on the three goal cases (fla-core 0.6 in the process
# unless GDN_SWEEP_ARGS=--no-fla)
gdn_sweep() {
  timeout "$1" python3 -m atrex_nvidia.chunk_gdn.sm90.bench_gdn --out "$OUT/gdnv" --sweep --ref-heads "" ${GDN_SWEEP_ARGS:-} \
    --deadline $(($1 - 20)) --cases $GDN_CASES --sweep-cases $GDN_CASES --variants "$2" > "$OUT/sweep.log" 2>&1
  echo "sweep exit $?"; grep -E "^\| [A-Za-z0-9_]+ \|" "$OUT/gdnv/gdn_bench.md" | grep -v "^| case |" | tail -n 30 | cut -c1-200
}

# gdn_bench_cases CAP TIMEOUT NAME MATCH...: gdn_bench_case CAP TIMEOUT for each MATCH in turn (one process each),
# its perf rows printed and everything archived as NAME.tgz after each
gdn_bench_cases() {
  local cap=$1 t=$2 name=$3 c; shift 3
  for c in "$@"; do
    gdn_bench_case "$cap" "$t" "$c"
    grep -h "^| perf" "$OUT"/graph/"$c"/bench_*.md 2>/dev/null | cut -c1-140
    gdn_archive "$name"
  done
}

# gdn_sweep_twice VARIANTS: gdn_sweep of VARIANTS on varlen 16x1024 with the perf case's fp32 initial state (--h0), by
# graph replay, ATREX alone, in two processes (logs under $OUT/sweep1 and $OUT/sweep2; 80 s each): a launcher option
# against the default, as rounds 30-31 timed them
gdn_sweep_twice() {
  local root="$OUT" i
  for i in 1 2; do
    OUT="$root/sweep$i"; mkdir -p "$OUT"
    GDN_CASES=varlen16x1024_H32_HV32 GDN_SWEEP_ARGS="--no-fla --graph --h0" gdn_sweep 80 "$1"
  done
  OUT="$root"
}

# gdn_cache_report: the ATREX kernels compiled during the call despite the prebuilt cache (entries it did not have)
gdn_cache_report() {
  [ -f "$OUT/tcache_before.txt" ] || return 0
  ls /tmp/atrex-tcache | sort | comm -13 <(sort "$OUT/tcache_before.txt") - | while read -r d; do
    ls /tmp/atrex-tcache/"$d" | sed -n 's/^__grp__\(.*\)\.json$/\1/p'
  done | sort | uniq -c > "$OUT/tcache_misses.txt"
  echo "triton cache misses (ATREX kernels): $(grep -c atrex_ "$OUT/tcache_misses.txt")"; grep atrex_ "$OUT/tcache_misses.txt" | head -8
}

# gdn_archive NAME: every log under $OUT in one archive (a call returns at most 8 files)
gdn_archive() {
  gdn_cache_report
  tar czf "$OUT/$1.tgz" -C "$OUT" --exclude "$1.tgz" . 2>/dev/null
}

# gdn_verify TIMEOUT: `atrex verify chunk_gdn --size small` (gates and probes against the reference), FAIL rows listed
gdn_verify() {
  timeout "$1" python3 -m atrex verify chunk_gdn --size small > "$OUT/verify_chunk_gdn.log" 2>&1
  echo "verify exit $?"; tail -n 2 "$OUT/verify_chunk_gdn.log" | cut -c1-200
  grep -h -E "FAIL|decay-0" "$OUT/verify_chunk_gdn.log" | head -6 | cut -c1-200
}

# gdn_graph_bench TIMEOUT: `atrex bench run chunk_gdn --size perf --graph` with fla-core 0.6 in the same run, records
# appended to $OUT/history.jsonl (set ATREX_BENCH_COMMIT to the commit measured)
gdn_graph_bench() {
  timeout "$1" python3 -m atrex bench run chunk_gdn --size perf --graph --out "$OUT/graph" \
    --history "$OUT/history.jsonl" --no-progress > "$OUT/bench_graph.log" 2>&1
  echo "bench graph exit $?"; grep -h "^| perf" "$OUT"/graph/bench_*.md | cut -c1-140
}

# gdn_ncu_duration NAME CASE [LAUNCH_HOOK=VALUE ...]: Nsight Compute's duration (SpeedOfLight section only) of one
# state-pass launch in a bench_gdn CASE, log $OUT/ncu_NAME.log, a one-line summary printed
gdn_ncu_duration() {
  local name=$1 case=$2; shift 2
  timeout 150 ncu --clock-control none --kernel-name regex:atrex_sm90_gdn_state --launch-skip 1 --launch-count 1 \
    --section SpeedOfLight python3 scripts/gdn_ncu.py "$case" "$@" > "$OUT/ncu_$name.log" 2>&1
  echo "$name: ncu rc $? $(grep -E 'Duration' "$OUT/ncu_$name.log" | tr -s ' ')"
}

# gdn_ncu TIMEOUT NAME KERNEL_REGEX CASE [LAUNCH_HOOK=VALUE ...]: Nsight Compute source-level profile (SASS, warp-stall
# samples) of one launch of the kernel matching KERNEL_REGEX in a bench_gdn CASE (scripts/gdn_ncu.py): $OUT/NAME_sass.csv.gz
# and $OUT/NAME_details.txt (the report itself is not kept)
gdn_ncu() {
  local t=$1 name=$2 regex=$3; shift 3
  timeout "$t" ncu --clock-control none --kernel-name "regex:$regex" --launch-skip 1 --launch-count 1 --set full \
    --import-source yes -o "$OUT/$name" python3 scripts/gdn_ncu.py "$@" > "$OUT/ncu_$name.log" 2>&1
  echo "ncu exit $?"; tail -n 2 "$OUT/ncu_$name.log" | cut -c1-200
  ncu -i "$OUT/$name.ncu-rep" --page source --csv --print-source sass > "$OUT/${name}_sass.csv" 2> "$OUT/${name}_sass.err"
  ncu -i "$OUT/$name.ncu-rep" --page details > "$OUT/${name}_details.txt" 2>&1
  grep -E "Duration|Issued Warp Per Scheduler|Warp Cycles Per Issued|L2 Cache Throughput" "$OUT/${name}_details.txt" | head -4
  gzip -f "$OUT/${name}_sass.csv"; rm -f "$OUT/$name.ncu-rep"
}

# gdn_fused_probe TIMEOUT ARG...: scripts/gdn_fused_probe.py ARG... with scripts/diag/fused_probe.patch applied to the
# tree for the run (then reverted): where the fused kernel hangs (each partition's last step) or which intermediate
# tile is first wrong. Full log in $OUT/probe.log.
gdn_fused_probe() {
  local t=$1; shift
  if ! patch -p1 -s --no-backup-if-mismatch < scripts/diag/fused_probe.patch; then
    echo "probe: the patch does not apply"; return 0
  fi
  timeout "$t" python3 scripts/gdn_fused_probe.py "$@" > "$OUT/probe.log" 2>&1
  echo "probe exit $?"; grep -E "^PROBE|Error" "$OUT/probe.log" | head -40 | cut -c1-220
  patch -R -p1 -s --no-backup-if-mismatch < scripts/diag/fused_probe.patch
}

# gdn_diag_sweeps TIMEOUT CONFIG...: timing-only diagnostics. Each CONFIG is NAME or NAME:PATCH[+PATCH...] (files
# scripts/diag/PATCH.patch, applied to kernels_gluon.py in order); the default launch is then timed by gdn_sweep on
# $GDN_CASES with logs under $OUT/NAME, ATREX alone (round 26: no fla autotune per process). The kernel file is
# restored after each CONFIG and at the end.
gdn_diag_sweeps() {
  local t=$1; shift
  local F=packages/nvidia/src/atrex_nvidia/chunk_gdn/sm90/kernels_gluon.py root="$OUT" cfg name p
  cp "$F" "$root/kernels_gluon.orig"
  for cfg in "$@"; do
    name=${cfg%%:*}
    cp "$root/kernels_gluon.orig" "$F"
    if [ "$cfg" != "$name" ]; then
      for p in $(echo "${cfg#*:}" | tr '+' ' '); do
        patch -p1 -s --no-backup-if-mismatch < "scripts/diag/$p.patch"
      done
    fi
    OUT="$root/$name"; mkdir -p "$OUT"
    echo "== $name ($(grep -c DIAGNOSTIC "$F") patched lines)"
    GDN_SWEEP_ARGS=--no-fla gdn_sweep "$t" default | grep default
  done
  cp "$root/kernels_gluon.orig" "$F"; OUT="$root"
}

# gdn_bench_case CAP TIMEOUT MATCH [PYTHON]: the graph bench of the perf cases matching MATCH, in its own process, with
# fla-core 0.6 in the same run; its timeout cut to what is left before CAP seconds into the call (skipped under 30 s);
# PYTHON runs first in that process (e.g. a launcher knob: "import atrex_nvidia.chunk_gdn.sm90.launch as L; L.X = 1").
# Appends to $OUT/history.jsonl, tables under $OUT/graph/MATCH/.
gdn_bench_case() {
  local cap=$1 t; t=$(( $2 < cap - SECONDS ? $2 : cap - SECONDS )); [ "$t" -ge 30 ] || { echo "bench $3 skipped"; return; }
  timeout "$t" python3 -c "import sys, runpy; ${4:-pass}
sys.argv = ['atrex'] + sys.argv[1:]; runpy.run_module('atrex', run_name='__main__')" \
    bench run chunk_gdn --size perf --match "$3" --graph --out "$OUT/graph/$3" --history "$OUT/history.jsonl" \
    --no-progress >> "$OUT/bench_graph.log" 2>&1
  echo "bench $3 exit $? at ${SECONDS}s"
}
