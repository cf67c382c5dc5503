"""The names of the evaluations' weight layouts: one home that the evaluation kernels and the weights file
reader both read (this module loads no numba, so the engine can check a weights file before it compiles)."""

# search.evaluate's pattern tables: 9 windows of 4x4 squares with 3 states, material and count tables,
# king squares, mobility, runaways and tempo, the two phase sets interleaved
PATTERN_LAYOUT = "patterns-9x4x4-pieces3/material13x13+counts13x7x13x7/king32x2/mob16x2/run4x2/tempo;interleaved"
