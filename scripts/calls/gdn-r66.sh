# (Ran at commit ac908ab; the fused kernel it exercises was removed after r69: BENCH_H200.md round 18.)
# Round 18, call r66 (written without a GPU; for the next session that has one): the fused kernel's GPU cases
# (FUSED: test_fused in 8 parts for the workers, its graph capture, the four fused variant hooks on the variant cases),
# then a bench_gdn sweep of three fused configurations against the default on the varlen goal case and T=8192/16/32.
# Every fused configuration compiles its own specialisations on the cold host: the remaining variants go to r67.
#   bash .gpuhost/g/install.sh; bash scripts/calls/gdn-r66.sh
. scripts/gdn-call.sh
# (for a later session: could Triton caches compiled here on the CPU, for this host's Triton, save device time? The
# cache key starts with triton_key(), a hash of the installed Triton's files, libtriton included)
python3 -c "import hashlib, triton; from triton.runtime.cache import triton_key; print('triton', triton.__version__, \
triton.__file__, hashlib.sha256(triton_key().encode()).hexdigest()[:16])" 2>&1 | tee "$OUT/triton_key.txt"
gdn_target_tests 300 fused
GDN_CASES=varlen16x1024_H32_HV32,T8192_H16_HV32 gdn_sweep 250 default,fused,fused_bv32,fused_bv128w8
gdn_archive r66
