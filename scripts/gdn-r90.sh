# Round 26 (next session), call r90: where gl_rc's step goes now (varlen 16x1024, the round-25 default). Timing-only
# patches (scripts/diag; their outputs are wrong by design), each timed by bench_gdn's sweep in its own process:
#   base                   the default;
#   gl_rc_no_output_store  the output partition stores one value per chunk instead of its 64x64 tile;
#   gl_rc_no_qk            the output partition forms no Q K^T and no decay tile (Aqk = 0).
# If the state pass drops with either, the output partition is still on the step's path (then: a TMA-store epilogue,
# or one Q K^T per head); if not, the chain step itself is what is left.
#   (carry [".gpuhost/g", ".gpuhost/tcache.tgz"])
#   bash .gpuhost/g/install.sh; bash scripts/gdn-r90.sh
. scripts/gdn-call.sh
nvidia-smi --query-gpu=name --format=csv,noheader > "$OUT/smi.txt"; cat "$OUT/smi.txt"
GDN_CASES=varlen16x1024_H32_HV32
gdn_diag_sweeps 130 base gl_rc_no_output_store:gl_rc_no_output_store gl_rc_no_qk:gl_rc_no_qk
gdn_archive r90
