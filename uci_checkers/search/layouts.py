"""The names of the evaluations' weight layouts and of the shipped weights files: one home that the
evaluation kernels, the weights file reader and the engine's options read (this module loads neither numpy
nor numba, so the engine can name and check a weights file before it compiles)."""

# search.evaluate's pattern tables: 9 windows of 4x4 squares with 3 states, material and count tables,
# king squares, mobility, runaways and tempo, the two phase sets interleaved
PATTERN_LAYOUT = "patterns-9x4x4-pieces3/material13x13+counts13x7x13x7/king32x2/mob16x2/run4x2/tempo;interleaved"

# search.nnue's network: two perspectives of 128 inputs (4 kinds x 32 squares) into 192 clipped-ReLU
# neurons each, 4 piece-count buckets of 16 -> 32 -> 1, activations quantised by 127, small weights by 64
NETWORK_LAYOUT = "nnue-2x128-192x2-crelu-4x16x32x1-qa127-qb64"
# the same with four first layers by game phase (at most 6 pieces, 7-8, more with a king, more without)
PHASE_NETWORK_LAYOUT = "nnue-2x128-4phasex192x2-crelu-4x16x32x1-qa127-qb64"

# the weights files in uci_checkers/data/
DEFAULT_NAME = "eval-n17.weights"      # the network (n17): the default evaluation
PATTERN_NAME = "eval-w5.weights"       # the pattern tables (w5): selectable, and the eleven-man deck's
