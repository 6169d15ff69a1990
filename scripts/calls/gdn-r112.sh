# Round 32, call r112 (any sm90 card): how fast gl_ws's chain steps at T=32768/16/32 when its output partition does
# no work (scripts/diag/gl_ws_output_idle.patch: only the hand-off protocol left; timing only, the output is not
# written), against the same kernel unpatched, one Nsight Compute duration each (SpeedOfLight section only).
#   (carry [".gpuhost/tcache.tgz"]) bash scripts/calls/gdn-r112.sh
#   (r112 ran at 4bc19f8, one output partition; the patch was regenerated for GL_WS_OUT2's loop bounds since, and
#   idles both output partitions of the current default)
. scripts/gdn-call.sh
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee "$OUT/smi.txt"
gdn_ncu_duration default T32768_H16_HV32
gdn_ncu_duration default_again T32768_H16_HV32
git apply scripts/diag/gl_ws_output_idle.patch && gdn_ncu_duration output_idle T32768_H16_HV32
git apply -R scripts/diag/gl_ws_output_idle.patch
