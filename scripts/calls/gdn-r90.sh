# Round 26, call r90: where gl_rc's step goes now (varlen 16x1024, the round-25 default). Timing-only patches
# (scripts/diag; their outputs are wrong by design), each timed by bench_gdn's sweep in its own process, ATREX alone:
#   base                   the default;
#   no_output_store        the output partition stores one value per chunk instead of its 64x64 tile;
#   no_qk                  the output partition forms no Q K^T and no decay tile (Aqk = 0);
#   no_output_dots         the output partition forms no dots at all (no q load, no Q K^T, Q S_c, Aqk U_c);
#   idle                   no dots and no tile store: the output partition only waits and releases (the chain alone).
# If the state pass drops with the first three, the output partition is still on the step's path (then: a TMA-store
# epilogue, or one Q K^T per head); if only "idle" drops, the tensor cores the two partitions share are; if "idle"
# does not drop, the chain step itself is what is left. Then Nsight Compute's warp-stall samples of one gl_rc launch.
# The patched kernels are in the carried cache (scripts/gdn_host_cache.py run with each patch applied).
#   (carry [".gpuhost/g", ".gpuhost/tcache.tgz"])
#   bash .gpuhost/g/install.sh; bash scripts/calls/gdn-r90.sh
. scripts/gdn-call.sh
nvidia-smi --query-gpu=name --format=csv,noheader > "$OUT/smi.txt"; cat "$OUT/smi.txt"
GDN_CASES=varlen16x1024_H32_HV32
gdn_diag_sweeps 70 base no_output_store:gl_rc_no_output_store no_qk:gl_rc_no_qk \
  no_output_dots:gl_rc_no_output_dots idle:gl_rc_no_output_dots+gl_rc_no_output_store
gdn_ncu 150 rc gl_rc varlen16x1024_H32_HV32
gdn_archive r90
