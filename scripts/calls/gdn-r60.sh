# Round 16, call r60 (diagnostic, timing only): is gl_ws's chain step limited by the load traffic from L2? Each step
# every one of the 128 CTAs (32 value heads x 4 V blocks of 32) loads k, q, A, Aqk and its v block, ~52 KB; the four
# V-block CTAs of a head load the same k, q, A, Aqk (TMA multicast in a cluster of four would cut that traffic ~4x).
# Timed (bench_gdn sweep, state kernel, T=8192/16/32 and T=32768/16/32): as is; without the q and Aqk loads (the
# output partition's dots read stale tiles: 36% less traffic per step, same dots); and with the output dots removed
# too (r53's no-output-dots patch), to set against r53's 0.126 / 0.472 ms with the loads. Wrong outputs: times only.
#   bash .gpuhost/g/install.sh; bash scripts/calls/gdn-r60.sh
. scripts/gdn-call.sh
GDN_CASES=T8192_H16_HV32,T32768_H16_HV32 gdn_diag_sweeps 110 base no_output_loads:gl_ws_no_output_loads no_output_loads_dots:gl_ws_no_output_loads+gl_ws_no_output_dots
gdn_archive r60
