# Round 27, call r97 (if r96's whole-file run does not fit the device time left): information for the next round.
#   1. bench_gdn sweep without fla, T=32768 and T=8192 (H = 16, HV = 32; gl_ws): the default, GL_WS_QSIDE (round
#      25's q side there, r84: slower), GL_WS_QSCALE (round 26's q side: r95 passed its GPU cases), with QNORM_MMA;
#   2. Nsight Compute of gl_rc2 on varlen 16x1024 (what bounds its step), with what is left.
#   (carry [".gpuhost/g", ".gpuhost/tcache.tgz"])
#   bash .gpuhost/g/install.sh; bash scripts/calls/gdn-r97.sh
. scripts/gdn-call.sh
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader > "$OUT/smi.txt"; cat "$OUT/smi.txt"
root="$OUT"; OUT="$root/ws"; mkdir -p "$OUT"
GDN_CASES=T32768_H16_HV32,T8192_H16_HV32 GDN_SWEEP_ARGS=--no-fla gdn_sweep "${R97_SWEEP:-120}" \
  default,ws_qside,ws_qscale,ws_qscale_mma
OUT="$root"
t=$(( ${R97_CAP:-220} - SECONDS ))
if [ "$t" -ge 50 ]; then gdn_ncu "$t" rc2 gl_rc2 varlen16x1024_H32_HV32; else echo "ncu skipped (${t}s left)"; fi
gdn_archive r97
