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

First layers by game phase
--------------------------
A network has one first layer (``NETWORK_LAYOUT``) or ``N_PHASES`` of them (``PHASE_NETWORK_LAYOUT``),
one per game phase as GuiNN has four nets: at most 6 pieces, 7-8, more with a king on the board, more
without (:func:`phase_of`).  A position's accumulators are those of its phase's layer; the search's lazy
stack (below) knows which layer a ply's accumulators were made with, and refreshes when a move changes
the phase.  The weights file's layout says which of the two a network is (:data:`NET_SIZES`).

Layers
------
``[acc_stm, acc_opp]`` (``2 H``) -> clipped ReLU -> ``L2`` -> clipped ReLU -> ``L3``
-> clipped ReLU -> 1, where the three small layers come in ``N_BUCKETS`` sets
chosen by the number of pieces (:func:`bucket_of`), as GuiNN chooses a net by game
phase; the first layer is shared by all buckets.  The output is the score in
centi-men from the side to move's view.

Quantisation (integer weights; the first layer's fit in int16)
--------------------------------------------------------------
Activations are integers in ``0..QA`` (``QA`` stands for 1.0).  First-layer
weights and bias are ``round(w * QA)``; the later layers' weights are ``round(w *
QB)`` and biases ``round(b * QA * QB)``, so a neuron's sum is in ``QA * QB``
units and ``sum // QB`` brings it back to activation units.  The output layer's
weights and bias are also multiplied by the centi-men scale of the training data,
so the output sum divided by ``QA * QB`` is the score in centi-men.  The file holds the
integers as int32; the kernel array (:func:`kernel_net`) holds only what the kernels read: each
bucket's biases and output weights as float32 (exact, see ``EXACT``), the small hidden layers' weights
as bytes and the first layer as int16, whose rows the search adds into int16 accumulators
(``check_ranges`` proves no accumulator can leave int16: half the memory traffic of float32 rows,
measured +7% nodes a second).  The two small hidden layers' weights must be bytes (-128..127): the
kernel array holds them in the order :func:`uci_checkers.util.jit.dot_weight_bytes` gives for this CPU, and
:func:`uci_checkers.util.jit.clipped_layers` runs everything after the first layer in exact int32
(byte dot products, ``vpdpbusd`` where the CPU has AVX-512 VNNI; ``sum // QB`` as a shift).

The incremental accumulator
---------------------------
Each search thread keeps one accumulator pair per ply in ``acc`` (:func:`new_accumulators`, int16,
flat: ply ``p``'s Black accumulator at ``p * ROW``, White's ``H`` further; the search passes
the weights and the stack as one array, :func:`thread_array`), and each node's position in its
workspace (:func:`note_position`).  The accumulators are computed lazily: :func:`evaluate_at` walks
back from the node to the nearest ply whose accumulators are up to date (a full recompute at ply 1,
the root's children), then applies each move's difference forward (:func:`update`: the pieces that left a square
are subtracted, those that arrived added: two to four rows of ``W1`` for a plain
move). Unmaking a move costs nothing: the parent's accumulators are still on the
stack. Nodes that never evaluate (table cut-offs) never pay for an update.

Net array layout (:func:`net_size` integers): per first layer (one, or one per phase) ``W1``
(feature-major, ``N_IN x H``) and ``B1`` (``H``), then per bucket ``W2`` (``L2 x 2H``,
neuron-major), ``B2``, ``W3`` (``L3 x L2``), ``B3``, ``WO`` (``L3``), ``BO`` (1).
"""
from __future__ import annotations

import numpy as np

from ..util.jit import borrow, clipped_layers, ctz, dot_weight_bytes, kernel, popcount
from ..rules.bitboard import SQUARE_TO_BIT
from .layouts import NETWORK_LAYOUT, PHASE_NETWORK_LAYOUT

N_IN = 128                     # 4 kinds x 32 oriented squares, per perspective
H = 192                        # accumulator width per perspective
L2 = 16
L3 = 32
N_BUCKETS = 4                  # by piece count: 1-6, 7-12, 13-18, 19-24
QA = 127                       # activation 1.0
QB = 64                        # weight 1.0 of the small layers (a power of two: the kernels shift)
SCORE_CLAMP = 2500             # centi-men: far below the mate scores of the search
N_PHASES = 4                   # first layers of a phase network: <= 6 pieces, 7-8, more with a king, more without
LAYOUT = NETWORK_LAYOUT        # names the sizes above (a test checks that it still does)
PHASE_LAYOUT = PHASE_NETWORK_LAYOUT

O_W1 = 0                       # inside one first layer: W1, then B1
O_B1 = O_W1 + N_IN * H
FT_SIZE = O_B1 + H             # one first layer's integers
# offsets inside one bucket's block
B_W2 = 0
B_B2 = B_W2 + L2 * 2 * H
B_W3 = B_B2 + L2
B_B3 = B_W3 + L3 * L2
B_WO = B_B3 + L3
B_BO = B_WO + L3
BUCKET_SIZE = B_BO + 1


def net_size(layers: int) -> int:
    """Integers in the net array of a network with ``layers`` first layers (1 or ``N_PHASES``)."""
    return layers * FT_SIZE + N_BUCKETS * BUCKET_SIZE


def buckets_at(layers: int) -> int:
    """Where the small layers' buckets begin in the net array of a network with ``layers`` first layers."""
    return layers * FT_SIZE


NET_SIZE = net_size(1)
PHASE_NET_SIZE = net_size(N_PHASES)
NET_SIZES = {LAYOUT: NET_SIZE, PHASE_LAYOUT: PHASE_NET_SIZE}     # a weights file's size, by its layout


def first_layers(net: np.ndarray) -> int:
    """How many first layers the integer net array holds (1 or ``N_PHASES``), from its size."""
    size = np.asarray(net).shape
    for layers in (1, N_PHASES):
        if size == (net_size(layers),):
            return layers
    raise ValueError(f"network must have shape ({NET_SIZE},) or ({PHASE_NET_SIZE},), not {size}")


def phase_of(pieces: int, has_king: bool) -> int:
    """The game phase (0..N_PHASES-1) whose first layer a phase network uses for a position."""
    return 0 if pieces <= 6 else 1 if pieces <= 8 else 2 if has_king else 3

# The kernel array (kernel_net) holds what the kernels read, each part on a 64-byte boundary (16
# float32 words): per bucket its B2, B3, WO and BO as float32; the phase table (float32: for piece count
# n and a king on the board or not, at 2n + king, where the position's first layer begins among the int16
# rows: 0 throughout for a one-layer network); then each bucket's W2 and W3 as signed bytes (ordered by
# util.jit.dot_weight_bytes); then per first layer W1 and B1 as int16 (the rows the accumulators add).
LINE = 16                                # float32 words in 64 bytes
K_B2 = 0                                 # float32 offsets inside one bucket's block of the kernel array
K_B3 = K_B2 + L2
K_WO = K_B3 + L3
K_BO = K_WO + L3
K_BUCKET = -(-(K_BO + 1) // LINE) * LINE
O_PHASES = N_BUCKETS * K_BUCKET          # float32 index of the phase table
PHASE_SLOTS = 4 * LINE                   # 2 * 25 entries used
O_BYTES = O_PHASES + PHASE_SLOTS         # float32 index where the bytes begin
BYTES_W2 = 0                             # byte offsets inside one bucket's bytes
BYTES_W3 = L2 * 2 * H
BUCKET_BYTES = BYTES_W3 + L3 * L2
O_ROWS16 = O_BYTES + -(-(N_BUCKETS * BUCKET_BYTES) // (4 * LINE)) * LINE   # float32 index of the int16 rows
ROWS16 = FT_SIZE                         # int16 values of one first layer: W1 (feature-major), then B1
R16_B1 = N_IN * H                        # B1's int16 index in them
assert ROWS16 % (2 * LINE) == 0          # each first layer's rows begin on a 64-byte boundary


def kernel_net_size(layers: int) -> int:
    """float32 words of the kernel array of a network with ``layers`` first layers."""
    return O_ROWS16 + layers * ROWS16 // 2

# The small layers' sums are exact int32 below EXACT (``check_ranges``; the bound of float32's exact
# integers, which the file format has always promised).  The accumulators are int16: the first layer's
# weights and bias are small (the shipped n15: at most 164 and 63, an accumulator within 1,819), and
# ``check_ranges`` proves for every neuron that its bias and its 24 largest weights stay below 2^15.
EXACT = 2**24
ACC_LIMIT = 2**15
MAX_PIECES = 24

# The accumulator stack: plies 0..ACC_PLIES-1 of the search, each two perspectives of H (flat, int16).
ACC_PLIES = 128
ROW = 2 * H
ACC_SIZE = ACC_PLIES * ROW
ACC_WORDS = ACC_SIZE // 2              # float32 words the int16 stack takes at the head of a thread array


def kernel_net(net: np.ndarray) -> np.ndarray:
    """The quantised integer weights as the kernels take them: each bucket's biases and output weights
    as float32 (the same integers), the phase table (``O_PHASES``), the small hidden layers' weights as
    bytes (``O_BYTES``) and the first layers as int16 (``O_ROWS16``).  An array that already is one is
    returned as it is."""
    if net.dtype == np.float32 and net.shape in ((kernel_net_size(1),), (kernel_net_size(N_PHASES),)):
        return net
    w = np.asarray(net)
    layers = first_layers(w)
    o_buckets = buckets_at(layers)
    out = np.zeros(kernel_net_size(layers), dtype=np.float32)
    out[O_ROWS16:].view(np.int16)[:] = w[:o_buckets]     # W1 then B1 per layer, as check_ranges allows
    if layers > 1:
        for pieces in range(MAX_PIECES + 1):
            for king in range(2):
                out[O_PHASES + 2 * pieces + king] = phase_of(pieces, bool(king)) * ROWS16
    raw = out[O_BYTES:].view(np.int8)
    for b in range(N_BUCKETS):
        base = o_buckets + b * BUCKET_SIZE
        k = b * K_BUCKET
        out[k + K_B2:k + K_B2 + L2] = w[base + B_B2:base + B_W3]
        out[k + K_B3:k + K_B3 + L3] = w[base + B_B3:base + B_WO]
        out[k + K_WO:k + K_WO + L3] = w[base + B_WO:base + B_BO]
        out[k + K_BO] = w[base + B_BO]
        at = b * BUCKET_BYTES
        w2 = np.clip(w[base + B_W2:base + B_B2], -128, 127).reshape(L2, 2 * H)
        w3 = np.clip(w[base + B_W3:base + B_B3], -128, 127).reshape(L3, L2)
        raw[at + BYTES_W2:at + BYTES_W3] = dot_weight_bytes(w2)
        raw[at + BYTES_W3:at + BUCKET_BYTES] = dot_weight_bytes(w3)
    return out


def check_ranges(net: np.ndarray) -> None:
    """Raise ValueError unless the integer weights keep every sum of the kernels exact."""
    w = np.asarray(net, dtype=np.int64)
    layers = first_layers(w)
    o_buckets = buckets_at(layers)
    if np.abs(w[:o_buckets]).max(initial=0) >= 2**15:
        raise ValueError("first-layer weights out of int16 range")
    for layer in range(layers):
        ft = layer * FT_SIZE
        w1 = np.abs(w[ft + O_W1:ft + O_B1]).reshape(N_IN, H)
        largest = np.sort(w1, axis=0)[-MAX_PIECES:].sum(axis=0) + np.abs(w[ft + O_B1:ft + FT_SIZE])
        if largest.max(initial=0) >= ACC_LIMIT:
            raise ValueError("first-layer weights too large for int16 accumulators")
    for b in range(N_BUCKETS):
        base = o_buckets + b * BUCKET_SIZE
        small = w[base + B_W2:base + B_B2], w[base + B_W3:base + B_B3]
        if min(x.min() for x in small) < -128 or max(x.max() for x in small) > 127:
            raise ValueError("hidden-layer weights out of byte range (-128..127)")
        w2 = np.abs(w[base + B_W2:base + B_B2]).reshape(L2, 2 * H).sum(axis=1) + np.abs(w[base + B_B2:base + B_W3])
        w3 = np.abs(w[base + B_W3:base + B_B3]).reshape(L3, L2).sum(axis=1) + np.abs(w[base + B_B3:base + B_WO])
        if QA * max(w2.max(), w3.max()) >= EXACT:
            raise ValueError("hidden-layer weights too large for exact sums")
        if QA * np.abs(w[base + B_WO:base + B_BO]).sum() + abs(w[base + B_BO]) >= EXACT:
            raise ValueError("output weights too large for exact sums")
    if np.abs(w).max() >= 2**31:
        raise ValueError("weights out of int32 range")


def _feature_table() -> np.ndarray:
    """FEAT[persp, piece, bit]: input index of a piece on ``bit`` for perspective ``persp``
    (piece: 0 black man, 1 black king, 2 white man, 3 white king); the kernels compute the same
    index arithmetically (:func:`_row_of`), this table is for readers and tests."""
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
    """The accumulator stack of one search thread (int16)."""
    return np.zeros(ACC_SIZE, dtype=np.int16)


def thread_array(net: np.ndarray) -> np.ndarray:
    """What one search thread passes down its kernels: its own accumulator stack (int16, two to a
    float32 word, ``ACC_WORDS``) followed by the weights (:func:`kernel_net`), in one float32 array (one
    argument fewer at every recursive call)."""
    return np.concatenate([new_accumulators().view(np.float32), kernel_net(net)])


def no_network() -> np.ndarray:
    """The thread array of a search that evaluates with the pattern tables (empty)."""
    return np.zeros(0, dtype=np.float32)


@kernel
def bucket_of(black, white):
    """The bucket (0..N_BUCKETS-1) of the small layers for a position's piece count."""
    n = popcount(black | white)
    b = (n - 1) // 6
    return 0 if b < 0 else (N_BUCKETS - 1 if b >= N_BUCKETS else b)


@kernel
def phase_rows(net, black, white, kings):
    """Where the first layer of a position's phase begins among the int16 rows (:func:`_rows16`)."""
    return int(net[O_PHASES + 2 * popcount(black | white) + (1 if kings != 0 else 0)])


@kernel
def _at(offset):
    """``offset`` (never negative) proven non-negative to LLVM: numba then drops its negative-index
    wraparound from ``array[offset + j]`` and the loops vectorize (measured: 12 times faster)."""
    return offset & 0x3FFFFFFF


@kernel
def _row_of(piece, bit):
    """The first-layer rows (offsets into :func:`_rows16`) of a piece on ``bit``, Black's view and White's."""
    s = bit - bit // 9                       # the square 0..31 (bitboard.SQUARE_TO_BIT inverted)
    colour = piece >> 1
    king = piece & 1
    f0 = (2 * colour + king) * 32 + s
    f1 = (2 * (1 - colour) + king) * 32 + 31 - s
    return _at(f0 * H), _at(f1 * H)


@kernel
def _rows16(net):
    """The int16 first layers (each W1's rows, then its B1 at ``R16_B1``) inside a kernel net."""
    return net[O_ROWS16:].view(np.int16)


@kernel
def _squares_of(piece, b, w, k):
    """The squares of one kind of piece (0 black man, 1 black king, 2 white man, 3 white king)."""
    side = b if piece < 2 else w
    return side & k if (piece & 1) else side & ~k


# The loops below are written out in each kernel on purpose: a call that passes the arrays costs
# numba's reference counting per call, more than the 2 x H additions themselves.
@kernel
def refresh(black, white, kings, net, acc, row, layer):
    """Compute both accumulators of a position from scratch into ply ``row`` of ``acc``, with the first
    layer whose rows begin at ``layer`` (:func:`phase_rows`)."""
    a = _at(row * ROW)
    w = _rows16(net)
    b1 = _at(layer + R16_B1)
    for j in range(H):
        acc[a + j] = w[b1 + j]
        acc[a + H + j] = w[b1 + j]
    for piece in range(4):
        x = _squares_of(piece, black, white, kings)
        while x != 0:
            f0, f1 = _row_of(piece, ctz(x))
            f0 = _at(layer + f0)
            f1 = _at(layer + f1)
            x &= x - 1
            for j in range(H):
                acc[a + j] += w[f0 + j]
            for j in range(H):
                acc[a + H + j] += w[f1 + j]


@kernel
def update(b0, w0, k0, b1, w1, k1, net, acc, src, dst, layer):
    """Ply ``dst`` of ``acc`` = ply ``src`` (position 0) changed into the accumulators of position 1:
    the rows of the pieces that left a square subtracted, of those that arrived added (the rows of the
    first layer that begins at ``layer``, the one ``src`` was made with)."""
    a = _at(dst * ROW)
    s = _at(src * ROW)
    w = _rows16(net)
    # a step (one piece leaves, one arrives) or a single capture (two leave) is one pass over the
    # rows: the copy and the changes together, each accumulator read and written once
    gone_n = 0
    came_n = 0
    g0 = g1 = x0 = x1 = c0 = c1 = 0
    for piece in range(4):
        old = _squares_of(piece, b0, w0, k0)
        new = _squares_of(piece, b1, w1, k1)
        gone = old & ~new
        while gone != 0:
            if gone_n == 0:
                g0, g1 = _row_of(piece, ctz(gone))
            else:
                x0, x1 = _row_of(piece, ctz(gone))
            gone_n += 1
            gone &= gone - 1
        came = new & ~old
        if came != 0:
            c0, c1 = _row_of(piece, ctz(came))
            came_n += popcount(came)
    g0 = _at(layer + g0)             # proven non-negative again after the phis (or nothing vectorizes)
    g1 = _at(layer + g1)
    x0 = _at(layer + x0)
    x1 = _at(layer + x1)
    c0 = _at(layer + c0)
    c1 = _at(layer + c1)
    if came_n == 1 and gone_n == 1:
        for j in range(H):
            acc[a + j] = acc[s + j] - w[g0 + j] + w[c0 + j]
        for j in range(H):
            acc[a + H + j] = acc[s + H + j] - w[g1 + j] + w[c1 + j]
        return
    if came_n == 1 and gone_n == 2:
        for j in range(H):
            acc[a + j] = acc[s + j] - w[g0 + j] - w[x0 + j] + w[c0 + j]
        for j in range(H):
            acc[a + H + j] = acc[s + H + j] - w[g1 + j] - w[x1 + j] + w[c1 + j]
        return
    # several captured pieces, or a king's capture back to its own square: copy, then row by row
    for j in range(ROW):
        acc[a + j] = acc[s + j]
    for piece in range(4):
        old = _squares_of(piece, b0, w0, k0)
        new = _squares_of(piece, b1, w1, k1)
        gone = old & ~new
        while gone != 0:
            f0, f1 = _row_of(piece, ctz(gone))
            f0 = _at(layer + f0)
            f1 = _at(layer + f1)
            gone &= gone - 1
            for j in range(H):
                acc[a + j] -= w[f0 + j]
            for j in range(H):
                acc[a + H + j] -= w[f1 + j]
        came = new & ~old
        while came != 0:
            f0, f1 = _row_of(piece, ctz(came))
            f0 = _at(layer + f0)
            f1 = _at(layer + f1)
            came &= came - 1
            for j in range(H):
                acc[a + j] += w[f0 + j]
            for j in range(H):
                acc[a + H + j] += w[f1 + j]


_layers = clipped_layers(H, L2, L3, QB.bit_length() - 1)     # everything after the first layer


@kernel
def forward(acc, row, stm, bucket, net):
    """The score (centi-men, side to move's view) of the accumulators at ply ``row``."""
    a = _at(row * ROW + stm * H)             # the side to move's accumulator first
    o = _at(row * ROW + (1 - stm) * H)
    base = _at(bucket * K_BUCKET)
    wbytes = _at(O_BYTES * 4 + bucket * BUCKET_BYTES)
    out = _layers(acc, a, o, net, wbytes + BYTES_W2, wbytes + BYTES_W3, base + K_B2, base + K_B3, base + K_WO,
                  base + K_BO)
    score = out // (QA * QB)                 # floor division, as the reference's
    return -SCORE_CLAMP if score < -SCORE_CLAMP else (SCORE_CLAMP if score > SCORE_CLAMP else score)


@kernel
def evaluate_position(black, white, kings, stm, net, acc):
    """The network's score of one position, computed from scratch (ply 0 of ``acc``)."""
    refresh(black, white, kings, net, acc, 0, phase_rows(net, black, white, kings))
    return forward(acc, 0, stm, bucket_of(black, white), net)


# --- the search's lazy accumulator stack ------------------------------------------------------
# ``ws[base + 4 * ply ...]``: black, white, kings of the node at ``ply`` and the state of acc[ply]: 0 not
# computed for it, else 1 + where the first layer it was computed with begins (:func:`phase_rows`).  The
# search owns the workspace; these kernels own this region.
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
def evaluate_at(ws, base, ply, stm, nn):
    """The network's score of the node at ``ply`` (side ``stm`` to move; ``nn`` a :func:`thread_array`):
    bring its accumulators up to date from the nearest ancestor computed with its phase's first layer,
    going back no further than its phase does (there, or at ply 1, a full recompute), then run the layers."""
    whole = borrow(nn)
    acc = whole[:ACC_WORDS].view(np.int16)
    net = whole[ACC_WORDS:]
    at = base + POS_WORDS * ply
    layer = phase_rows(net, ws[at], ws[at + 1], ws[at + 2])
    done = layer + 1
    q = ply
    while q > 1 and ws[base + POS_WORDS * q + 3] != done:
        up = base + POS_WORDS * (q - 1)
        if ws[up + 3] != done and phase_rows(net, ws[up], ws[up + 1], ws[up + 2]) != layer:
            break                             # the parent is of another phase: recompute here
        q -= 1
    at = base + POS_WORDS * q
    if ws[at + 3] != done:
        refresh(ws[at], ws[at + 1], ws[at + 2], net, acc, q, layer)
        ws[at + 3] = done
    while q < ply:
        at = base + POS_WORDS * q
        update(ws[at], ws[at + 1], ws[at + 2], ws[at + 4], ws[at + 5], ws[at + 6], net, acc, q, q + 1, layer)
        q += 1
        ws[at + POS_WORDS + 3] = done
    at = base + POS_WORDS * ply
    return forward(acc, ply, stm, bucket_of(ws[at], ws[at + 1]), net)


def evaluation_terms(position, net: np.ndarray) -> dict[str, int]:
    """The network's static score of ``position`` as the engine's ``eval`` shows it: one term
    (``network``, Black's view), ``total`` (Black's view) and ``total_stm`` (the side to move's).
    ``net``: the integer weights, or :func:`kernel_net` of them (then not copied again)."""
    score = int(evaluate_position(position.black, position.white, position.kings, position.turn,
                                  kernel_net(net), new_accumulators()))
    sign = 1 if position.turn == 0 else -1
    return {"network": sign * score, "total": sign * score, "total_stm": score}
