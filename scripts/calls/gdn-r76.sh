# Round 22, call r76 (written after r73, which ran on an H100: the fused kernel correct on its smoke cases and 30 of
# its 31 GPU cases, but 2.4x slower than the two-kernel call, ~6.8 us per chunk step against the ~1.4 us its tensor
# work needs). One call for both open questions, in the same process as fla-core 0.6 each time:
#   1. round 19's intra knobs (r71/r72, never run): their GPU cases (DIAG16 inverse, UT-inverse accuracy, packed slot
#      map), then a bench_gdn sweep of default / i3_d16 / i3_d16_r128 / i3_map_packed / i3_d16_r128_packed on the
#      varlen goal case, T=8192/16/32 and T=32768/16/32 (the two-kernel call: half its varlen time is the intra kernel);
#   2. r75's question on T=8192/16/32, which partition bounds the fused kernel: FUSED_RC = True in this call's copy of
#      the tree, timed as it is, with the aux partition's inverse replaced by A = I, and with the chain partition's dots
#      removed (scripts/diag patches; their outputs are wrong by design, the rrmse column shows it).
# Budget: ~540 s of the 600 s a call may run; the patched kernels are in the carried cache (built by
# scripts/gdn_host_cache.py with each patch applied). (The GPU cases still compiled 47 intra specialisations on the
# host: the cache covers the bench's calls, not the target file's; BENCH_H200.md round 22.)
#   (carry [".gpuhost/g", ".gpuhost/tcache.tgz"])
#   bash .gpuhost/g/install.sh; bash scripts/calls/gdn-r76.sh
. scripts/gdn-call.sh
gdn_target_tests 100 "diag16 or ut_inverse or slot_map"
root="$OUT"
OUT="$root/intra"; mkdir -p "$OUT"
gdn_sweep 200 default,i3_d16,i3_d16_r128,i3_map_packed,i3_d16_r128_packed
OUT="$root/fused"; mkdir -p "$OUT"
F=packages/nvidia/src/atrex_nvidia/chunk_gdn/sm90/launch.py
sed -i 's/^FUSED_RC = False/FUSED_RC = True/' "$F"; grep -E "^FUSED_(RC|DIAG16) =" "$F"
GDN_CASES=T8192_H16_HV32 gdn_diag_sweeps 70 base aux_no_inverse:fused_aux_no_inverse chain_no_dots:fused_chain_no_dots
git checkout -q -- "$F"
OUT="$root"
gdn_archive r76
