"""The network evaluation: a small, integer-quantised network whose first layer the search updates
incrementally (the NNUE design), as numba kernels.

Inputs and colour symmetry
--------------------------
A position is seen from each colour's point of view (a *perspective*): 128 binary
inputs, one per (kind, oriented square) with kinds own man, own king, opp man,
opp king and the board turned so that the perspective's men move toward higher
squares (Black reads square ``s`` as it is, White reads it as ``31 - s``, squares
0-31).  One shared first layer (``N_IN`` x ``H``, plus a bias) turns each
perspective's inputs into an accumulator of ``H`` sums, so a position has two
accumulators, Black's and White's.  The rest of the network reads the side to
move's accumulator first, then the other's: the same position with colours
swapped, board turned round and the other side to move gives the same score by
construction, and the order says who is to move (tempo).

Layers
------
``[acc_stm, acc_opp]`` (``2 H``) -> clipped ReLU -> ``L2`` -> clipped ReLU -> ``L3``
-> clipped ReLU -> 1, where the three small layers come in ``N_BUCKETS`` sets
chosen by the number of pieces (:func:`bucket_of`), as GuiNN chooses a net by game
phase; the first layer is shared by all buckets.  The output is the score in
centi-men from the side to move's view.

Quantisation (all weights int32; the first layer's fit in int16)
----------------------------------------------------------------
Activations are integers in ``0..QA`` (``QA`` stands for 1.0).  First-layer
weights and bias are ``round(w * QA)``; the later layers' weights are ``round(w *
QB)`` and biases ``round(b * QA * QB)``, so a neuron's sum is in ``QA * QB``
units and ``sum // QB`` brings it back to activation units.  The output layer's
weights and bias are also multiplied by the centi-men scale of the training data,
so the output sum divided by ``QA * QB`` is the score in centi-men.

The incremental accumulator
---------------------------
The search keeps one accumulator pair per ply in ``acc`` (:func:`new_accumulators`),
and each node's position in its workspace (:func:`note_position`). The accumulators are
computed lazily: :func:`evaluate_at` walks back from the node to the nearest ply whose
accumulators are up to date (a full recompute at ply 1, the root's children), then
applies each move's difference forward (:func:`update`: the pieces that left a square
are subtracted, those that arrived added: two to four rows of ``W1`` for a plain
move). Unmaking a move costs nothing: the parent's accumulators are still on the
stack. Nodes that never evaluate (table cut-offs) never pay for an update.

Net array layout (int32, ``NET_SIZE`` entries): ``W1`` (feature-major, ``N_IN x H``),
``B1`` (``H``), then per bucket ``W2`` (``L2 x 2H``, neuron-major), ``B2``, ``W3``
(``L3 x L2``), ``B3``, ``WO`` (``L3``), ``BO`` (1).
"""
from __future__ import annotations

import numpy as np

from ..util.jit import ctz, kernel, popcount
from ..rules.bitboard import SQUARE_TO_BIT

N_IN = 128                     # 4 kinds x 32 oriented squares, per perspective
H = 128                        # accumulator width per perspective
L2 = 32
L3 = 32
N_BUCKETS = 4                  # by piece count: 1-6, 7-12, 13-18, 19-24
QA = 127                       # activation 1.0
QB = 64                        # weight 1.0 of the small layers
SCORE_CLAMP = 2500             # centi-men: far below the mate scores of the search
LAYOUT = f"nnue-2x{N_IN}-{H}x2-crelu-{N_BUCKETS}x{L2}x{L3}x1-qa{QA}-qb{QB}"

O_W1 = 0
O_B1 = O_W1 + N_IN * H
O_BUCKETS = O_B1 + H
# offsets inside one bucket's block
B_W2 = 0
B_B2 = B_W2 + L2 * 2 * H
B_W3 = B_B2 + L2
B_B3 = B_W3 + L3 * L2
B_WO = B_B3 + L3
B_BO = B_WO + L3
BUCKET_SIZE = B_BO + 1
NET_SIZE = O_BUCKETS + N_BUCKETS * BUCKET_SIZE

# the search's plies 0..MAX_PLY-1, plus two rows of scratch (the clipped inputs and hidden layers)
ACC_PLIES = 128
ACC_SCRATCH = ACC_PLIES


def _feature_table() -> np.ndarray:
    """FEAT[persp, piece, bit]: input index of a piece on ``bit`` for perspective ``persp``
    (piece: 0 black man, 1 black king, 2 white man, 3 white king)."""
    t = np.zeros((2, 4, 64), dtype=np.int64)
    for persp in range(2):
        for piece in range(4):
            colour, king = piece // 2, piece % 2
            rel = 0 if colour == persp else 1
            for s in range(32):
                o = s if persp == 0 else 31 - s
                t[persp, piece, SQUARE_TO_BIT[s]] = (2 * rel + king) * 32 + o
    return t


FEAT = _feature_table()


def new_accumulators() -> np.ndarray:
    """The per-ply accumulator stack of one search thread (plus its scratch rows)."""
    return np.zeros((ACC_PLIES + 2, 2, H), dtype=np.int32)


def no_network() -> tuple[np.ndarray, np.ndarray]:
    """The (net, acc) pair the search gets when it evaluates with pattern tables."""
    return np.zeros(0, dtype=np.int32), np.zeros((1, 1, 1), dtype=np.int32)


@kernel
def bucket_of(black, white):
    """The bucket (0..N_BUCKETS-1) of the small layers for a position's piece count."""
    n = popcount(black | white)
    b = (n - 1) // 6
    return 0 if b < 0 else (N_BUCKETS - 1 if b >= N_BUCKETS else b)


@kernel
def _add_piece(acc, row, net, piece, bit, sign):
    """Add (sign 1) or subtract (-1) the first-layer rows of one piece in both perspectives."""
    f0 = O_W1 + FEAT[0, piece, bit] * H
    f1 = O_W1 + FEAT[1, piece, bit] * H
    if sign > 0:
        for j in range(H):
            acc[row, 0, j] += net[f0 + j]
            acc[row, 1, j] += net[f1 + j]
    else:
        for j in range(H):
            acc[row, 0, j] -= net[f0 + j]
            acc[row, 1, j] -= net[f1 + j]


@kernel
def refresh(black, white, kings, net, acc, row):
    """Compute both accumulators of a position from scratch into ``acc[row]``."""
    for j in range(H):
        acc[row, 0, j] = net[O_B1 + j]
        acc[row, 1, j] = net[O_B1 + j]
    for piece in range(4):
        side = black if piece < 2 else white
        x = side & kings if (piece & 1) else side & ~kings
        while x != 0:
            _add_piece(acc, row, net, piece, ctz(x), 1)
            x &= x - 1


@kernel
def update(b0, w0, k0, b1, w1, k1, net, acc, src, dst):
    """``acc[dst]`` = ``acc[src]`` (of position 0) changed into the accumulators of position 1."""
    for j in range(H):
        acc[dst, 0, j] = acc[src, 0, j]
        acc[dst, 1, j] = acc[src, 1, j]
    for piece in range(4):
        if piece < 2:
            old = b0 & k0 if (piece & 1) else b0 & ~k0
            new = b1 & k1 if (piece & 1) else b1 & ~k1
        else:
            old = w0 & k0 if (piece & 1) else w0 & ~k0
            new = w1 & k1 if (piece & 1) else w1 & ~k1
        gone = old & ~new
        while gone != 0:
            _add_piece(acc, dst, net, piece, ctz(gone), -1)
            gone &= gone - 1
        came = new & ~old
        while came != 0:
            _add_piece(acc, dst, net, piece, ctz(came), 1)
            came &= came - 1


@kernel
def forward(acc, row, stm, bucket, net):
    """The score (centi-men, side to move's view) of the accumulators ``acc[row]``."""
    sc = ACC_SCRATCH
    # clipped inputs: the side to move's accumulator first
    for j in range(H):
        a = acc[row, stm, j]
        acc[sc, 0, j] = 0 if a < 0 else (QA if a > QA else a)
        c = acc[row, 1 - stm, j]
        acc[sc, 1, j] = 0 if c < 0 else (QA if c > QA else c)
    base = O_BUCKETS + bucket * BUCKET_SIZE
    for i in range(L2):
        w = base + B_W2 + i * 2 * H
        s = np.int32(0)
        for j in range(H):
            s += acc[sc, 0, j] * net[w + j]
        for j in range(H):
            s += acc[sc, 1, j] * net[w + H + j]
        s = (s + net[base + B_B2 + i]) // QB
        acc[sc + 1, 0, i] = 0 if s < 0 else (QA if s > QA else s)
    for i in range(L3):
        w = base + B_W3 + i * L2
        s = np.int32(0)
        for j in range(L2):
            s += acc[sc + 1, 0, j] * net[w + j]
        s = (s + net[base + B_B3 + i]) // QB
        acc[sc + 1, 1, i] = 0 if s < 0 else (QA if s > QA else s)
    out = np.int64(net[base + B_BO])
    for j in range(L3):
        out += np.int64(acc[sc + 1, 1, j]) * net[base + B_WO + j]
    score = out // (QA * QB)
    return -SCORE_CLAMP if score < -SCORE_CLAMP else (SCORE_CLAMP if score > SCORE_CLAMP else score)


@kernel
def evaluate_position(black, white, kings, stm, net, acc):
    """The network's score of one position, computed from scratch (ply 0 of ``acc``)."""
    refresh(black, white, kings, net, acc, 0)
    return forward(acc, 0, stm, bucket_of(black, white), net)


# --- the search's lazy accumulator stack ------------------------------------------------------
# ``ws[base + 4 * ply ...]``: black, white, kings of the node at ``ply`` and whether acc[ply] is
# up to date (1) for it.  The search owns the workspace; these kernels own this region.
POS_WORDS = 4
POS_REGION = POS_WORDS * ACC_PLIES


@kernel
def note_position(ws, base, ply, black, white, kings):
    """A node at ``ply`` was entered: remember its position; its accumulators are not computed yet."""
    at = base + POS_WORDS * ply
    ws[at] = black
    ws[at + 1] = white
    ws[at + 2] = kings
    ws[at + 3] = 0


@kernel
def evaluate_at(ws, base, ply, stm, net, acc):
    """The network's score of the node at ``ply`` (side ``stm`` to move): bring its accumulators up
    to date from the nearest computed ancestor (a full recompute at ply 1), then run the layers."""
    q = ply
    while q > 1 and ws[base + POS_WORDS * q + 3] == 0:
        q -= 1
    at = base + POS_WORDS * q
    if ws[at + 3] == 0:
        refresh(ws[at], ws[at + 1], ws[at + 2], net, acc, q)
        ws[at + 3] = 1
    while q < ply:
        at = base + POS_WORDS * q
        update(ws[at], ws[at + 1], ws[at + 2], ws[at + 4], ws[at + 5], ws[at + 6], net, acc, q, q + 1)
        q += 1
        ws[at + POS_WORDS + 3] = 1
    at = base + POS_WORDS * ply
    return forward(acc, ply, stm, bucket_of(ws[at], ws[at + 1]), net)
