"""The probe table (one int64 array the search takes as a single kernel argument) and the probe kernels.

A table holds slices of two kinds:

* **raw**: one byte a position in a numpy array the table points to (the
  builder's tables of the slices it has solved; every value present);
* **mapped**: a block-compressed slice file (:mod:`uci_checkers.egdb.store`)
  mapped into memory; the table holds the file's address.  Opening one costs a
  header check, processes share the pages through the operating system's page
  cache, and a block is decoded (:func:`uci_checkers.egdb.codec.inflate`) into
  the table's own block cache when a probe needs it.  Files leave out the
  values of positions with a capture pending (they are a fifth to a third of all
  positions and the least compressible); the probe recomputes one from its
  captures, which always lead into smaller slices.

Layout of ``eg`` (int64 words)::

    eg[H_MAGIC]            MAGIC
    eg[H_PIECES]           largest piece count loaded (0: nothing loaded, the probe is never called)
    eg[H_SLICES]           slices loaded;  eg[H_MAPPED]: how many of them are mapped
    eg[H_ERROR]            0, or 1 + (key << 32 | block) of the first block that failed to decode
    eg[H_SETS], eg[H_SLOT_SHIFT], eg[H_TAGS], eg[H_STAMPS], eg[H_CACHE_ADDR], eg[H_TICK]
                           the block cache: sets of WAYS slots of 2**slot_shift bytes, a tag (global
                           block number, -1 free) and a last-use stamp per slot, the slots' address
    eg[H_HITS], eg[H_MISSES], eg[H_RESOLVED]   counters (block cache hits, decoded blocks, positions
                           computed from their captures)
    eg[H_SCRATCH]          MAX_LEVELS frames of FRAME words: the stack of those captures
    eg[H_INFLATE]          address of the block decoder's C entry point (codec.inflate_address)
    eg[H_SELF], eg[H_SELF + 1]   the table's own address and length; eg[H_RESOLVER]: the C entry point
                           of the capture resolution, eg[H_ARGS:H_ARGS + 5] its arguments (both
                           called through addresses: numba would otherwise compile their code again
                           into every kernel above them, the search's included)
    eg[DIR + SLOT*key + F_KIND]      KIND_NONE, KIND_RAW or KIND_MAPPED (the slice of material ``key``)
    ... + F_VALUES         raw: address of the values (a byte each); mapped: address of the blocks
    ... + F_OFFSETS        word offset of its men_offsets table
    ... + F_SETS           black-king placements << 32 | white-king placements
    ... + F_INDEX          mapped: address of the block index (int64 byte offsets, blocks + 1)
    ... + F_FORMAT         mapped: log2 positions per block | flags << 8
    ... + F_BLOCK0         mapped: global number of its first block (the cache's tags)
    ... + F_POSITIONS      positions of the slice

Values are the one-byte codes of :mod:`uci_checkers.egdb` (0 draw, D + 1: the game
ends after D plies, the side to move winning when D is odd; WLD_LOSS / WLD_WIN
without a distance).  A slice that is not loaded but whose mirror is gets probed
through the colour-reversed position.

A table writes to itself (its cache, counters and the capture stack), so each
search thread probes its own copy (:func:`fork_table`: same files, own cache).
The array keeps the memory it points into alive: its buffer is owned by an
object that holds the arrays and file mappings (or the table it was forked
from).  A table is only valid in the process that made it (Ray tasks assemble
their own).
"""
from __future__ import annotations

import mmap
from typing import Sequence

import numpy as np

from ..rules import movegen as mg
from ..util.jit import bytes_at, c_kernel, call_address, ctz, kernel, popcount, words_at
from .codec import inflate_address
from .index import N_KEYS, Slice, flip_square_mask, king_set_counts, material_key, padded_board, rank_position, \
    square_mask, unrank_position

MAGIC = 0x4547_4442_3032      # "EGDB02"
H_MAGIC, H_PIECES, H_SLICES, H_MAPPED, H_ERROR = 0, 1, 2, 3, 4
H_SETS, H_SLOT_SHIFT, H_TAGS, H_STAMPS, H_CACHE_ADDR, H_TICK = 5, 6, 7, 8, 9, 10
H_HITS, H_MISSES, H_RESOLVED, H_SCRATCH, H_INFLATE = 11, 12, 13, 14, 15
H_SELF, H_RESOLVER, H_ARGS = 16, 18, 19   # own address (and words at H_SELF + 1), resolver entry, 5 arguments
DIR = 24
SLOT = 8
F_KIND, F_VALUES, F_OFFSETS, F_SETS, F_INDEX, F_FORMAT, F_BLOCK0, F_POSITIONS = range(8)
HEADER_WORDS = DIR + SLOT * N_KEYS

KIND_NONE, KIND_RAW, KIND_MAPPED = 0, 1, 2
FLAG_NO_DISTANCES = 1          # file flags (F_FORMAT >> 8): win/loss/draw only
FLAG_NO_CAPTURES = 2           # positions with a capture pending are not stored
WAYS = 8
MAX_LEVELS = 8                 # nested captures a probe may have to follow (each removes a piece)
# a frame of the capture stack (_resolve): the captures, the position, the fold so far
R_MOVES = 0
R_PATHS = R_MOVES + mg.MAX_MOVES
R_BLACK, R_WHITE, R_KINGS, R_STM, R_COUNT, R_NEXT, R_WIN, R_FLOOR, R_DRAW, R_EXACT, R_WLD = \
    range(R_PATHS + mg.MAX_MOVES, R_PATHS + mg.MAX_MOVES + 11)
FRAME = R_PATHS + mg.MAX_MOVES + 16
DEFAULT_CACHE_BYTES = 32 << 20

NOT_FOUND = -1
_RESOLVE = -2                  # _stored: a capture position of a slice with distances, compute it
_RESOLVE_WLD = -3              # ... of a slice without distances
WLD_LOSS = 253                 # codes of slices stored without distances (odd: the side to move loses)
WLD_WIN = 254
NO_WIN = 32767
KNOWN_WIN_MARGIN = 1500        # a win without a distance scores mate - this - ply (+ progress): below every mate
NOT_FOUND_SCORE = -(1 << 40)   # search_score: no verdict (beyond any search score)


class _Owner(mmap.mmap):
    """Anonymous memory (zero, touched only where used) owning a table, and what its addresses point into."""

    keep: list


def _new_table(words: int, cache_bytes: int) -> np.ndarray:
    owner = _Owner(-1, 8 * words + cache_bytes)
    owner.keep = []
    eg = np.frombuffer(owner, dtype=np.int64, count=words)
    eg[H_MAGIC] = MAGIC
    eg[H_CACHE_ADDR] = eg.ctypes.data + 8 * words
    eg[H_SELF] = eg.ctypes.data
    eg[H_SELF + 1] = words
    return eg


def _keep(eg: np.ndarray) -> list:
    """The list of objects ``eg``'s owner keeps alive (file mappings, a parent table)."""
    return eg.base.obj.keep


def empty_table() -> np.ndarray:
    """A table with nothing loaded: every probe misses (the search skips probing)."""
    eg = np.zeros(DIR, dtype=np.int64)
    eg[H_MAGIC] = MAGIC
    return eg


class MappedSlice:
    """One slice file's memory (``data``: its bytes, ``mapping``: the object that owns them) and where
    its parts are: what :mod:`.store` found when it opened the file."""

    def __init__(self, s: Slice, data: np.ndarray, mapping: object, index_at: int, blocks_at: int, blocks: int,
                 block_shift: int, flags: int, positions: int, offsets: np.ndarray) -> None:
        self.slice, self.data, self.mapping = s, data, mapping
        self.index_at, self.blocks_at, self.blocks = index_at, blocks_at, blocks
        self.block_shift, self.flags, self.positions, self.offsets = block_shift, flags, positions, offsets


def assemble_table(raw: dict[Slice, tuple[np.ndarray, np.ndarray]] | None = None,
                   mapped: Sequence[MappedSlice] = (), cache_bytes: int = DEFAULT_CACHE_BYTES) -> np.ndarray:
    """One probe table from raw slices ``{slice: (codes uint8, men_offsets int64)}`` and mapped ones.

    Neither is copied: the table holds their addresses and keeps them alive.  The
    block cache gets ``cache_bytes`` (at least one set of WAYS of the largest block)
    when there are mapped slices, none otherwise.
    """
    raw = raw or {}
    words = HEADER_WORDS + MAX_LEVELS * FRAME
    for _, offsets in raw.values():
        words += offsets.shape[0]
    for m in mapped:
        words += m.offsets.shape[0]
    slot_shift = max((m.block_shift for m in mapped), default=0)
    sets = 0
    if mapped:
        sets = 1
        while sets * 2 * WAYS << slot_shift <= cache_bytes:
            sets *= 2
    tags_at = words
    words += 2 * sets * WAYS
    eg = _new_table(words, sets * WAYS << slot_shift)
    eg[H_PIECES] = max((s.pieces for s in list(raw) + [m.slice for m in mapped]), default=0)
    eg[H_SLICES] = len(raw) + len(mapped)
    eg[H_MAPPED] = len(mapped)
    eg[H_SETS] = sets
    eg[H_SLOT_SHIFT] = slot_shift
    eg[H_TAGS] = tags_at
    eg[H_STAMPS] = tags_at + sets * WAYS
    eg[tags_at:tags_at + sets * WAYS] = -1
    eg[H_SCRATCH] = HEADER_WORDS
    if mapped:
        eg[H_INFLATE] = inflate_address()
    eg[H_RESOLVER] = _resolver_address()
    at = HEADER_WORDS + MAX_LEVELS * FRAME
    entries = [(s, codes, offsets, None) for s, (codes, offsets) in raw.items()]
    entries += [(m.slice, None, m.offsets, m) for m in mapped]
    block0 = 0
    for s, codes, offsets, m in entries:
        d = DIR + SLOT * s.key
        eg[d + F_OFFSETS] = at
        eg[at:at + offsets.shape[0]] = offsets
        at += offsets.shape[0]
        nbk, nwk = king_set_counts(s)
        eg[d + F_SETS] = (nbk << 32) | nwk
        if m is None:
            codes = np.ascontiguousarray(codes, dtype=np.uint8)
            eg[d + F_KIND] = KIND_RAW
            eg[d + F_VALUES] = codes.ctypes.data
            eg[d + F_POSITIONS] = codes.shape[0]
            _keep(eg).append(codes)
        else:
            base = m.data.ctypes.data
            eg[d + F_KIND] = KIND_MAPPED
            eg[d + F_VALUES] = base + m.blocks_at
            eg[d + F_INDEX] = base + m.index_at
            eg[d + F_FORMAT] = m.block_shift | (m.flags << 8)
            eg[d + F_BLOCK0] = block0
            eg[d + F_POSITIONS] = m.positions
            block0 += m.blocks
            _keep(eg).append(m.mapping)
            _keep(eg).append(m.data)
    return eg


def fork_table(eg: np.ndarray) -> np.ndarray:
    """A copy of ``eg`` for another search thread: the same slices, its own block cache, counters and
    capture stack."""
    if eg.shape[0] <= DIR:
        return eg
    sets, shift = int(eg[H_SETS]), int(eg[H_SLOT_SHIFT])
    twin = _new_table(eg.shape[0], sets * WAYS << shift)
    twin[H_MAGIC + 1:] = eg[H_MAGIC + 1:]
    twin[H_CACHE_ADDR] = twin.ctypes.data + 8 * eg.shape[0]
    twin[H_SELF] = twin.ctypes.data
    tags = int(eg[H_TAGS])
    twin[tags:tags + sets * WAYS] = -1
    twin[tags + sets * WAYS:tags + 2 * sets * WAYS] = 0
    twin[H_ERROR] = twin[H_TICK] = twin[H_HITS] = twin[H_MISSES] = twin[H_RESOLVED] = 0
    _keep(twin).append(eg)
    return twin


# =============================================================================
# Kernels
# =============================================================================
@kernel
def read_code(address, index):
    """The one-byte value ``index`` of the raw slice whose values are at ``address``."""
    return np.int64(bytes_at(address + index, 1)[0])


@kernel
def slice_index(eg, black, white, kings, stm):
    """``(directory entry, index)`` of a position, through its mirror if needed; NOT_FOUND when not loaded."""
    nb = popcount(black)
    nw = popcount(white)
    if nb == 0 or nw == 0 or nb + nw > eg[H_PIECES]:
        return NOT_FOUND, 0
    nbk = popcount(black & kings)
    nwk = popcount(white & kings)
    d = DIR + SLOT * material_key(nb - nbk, nbk, nw - nwk, nwk)
    if eg[d + F_KIND] == KIND_NONE:
        d = DIR + SLOT * material_key(nw - nwk, nwk, nb - nbk, nbk)
        if eg[d + F_KIND] == KIND_NONE:
            return NOT_FOUND, 0
        b2 = padded_board(flip_square_mask(square_mask(white)))
        w2 = padded_board(flip_square_mask(square_mask(black)))
        kings = padded_board(flip_square_mask(square_mask(kings)))
        black = b2
        white = w2
        stm = 1 - stm
    sets = eg[d + F_SETS]
    index = rank_position(black, white, kings, stm, eg, eg[d + F_OFFSETS], sets >> 32, sets & 0xFFFFFFFF)
    return d, index


@kernel
def _block_value(eg, d, index):
    """The stored value ``index`` of the mapped slice at directory entry ``d``, through the block cache;
    NOT_FOUND (and eg[H_ERROR] set) when its block does not decode."""
    shift = eg[d + F_FORMAT] & 255
    block = index >> shift
    gid = eg[d + F_BLOCK0] + block
    ways = eg[H_TAGS] + (gid & (eg[H_SETS] - 1)) * WAYS
    stamps = eg[H_STAMPS] - eg[H_TAGS]
    tick = eg[H_TICK] + 1
    eg[H_TICK] = tick
    start = block << shift
    count = min(np.int64(1) << shift, eg[d + F_POSITIONS] - start)
    offset = index - start
    at = (offset >> 1) + (offset & 1) * ((count + 1) >> 1)      # black to move first, then white
    slot = -1
    for w in range(ways, ways + WAYS):
        if eg[w] == gid:
            slot = w
            break
    if slot >= 0:
        eg[H_HITS] += 1
    else:
        slot = ways
        for w in range(ways + 1, ways + WAYS):
            if eg[w + stamps] < eg[slot + stamps]:
                slot = w
        eg[slot] = -1
        eg[H_MISSES] += 1
        bounds = words_at(eg[d + F_INDEX] + 8 * block, 2)
        lo = bounds[0]
        size = bounds[1] - lo
        cache_slot = (slot - eg[H_TAGS]) << eg[H_SLOT_SHIFT]
        if call_address(eg[H_INFLATE], eg[d + F_VALUES] + lo, size, eg[H_CACHE_ADDR] + cache_slot, count) != count:
            if eg[H_ERROR] == 0:
                key = (d - DIR) // SLOT
                eg[H_ERROR] = 1 + ((key << 32) | block)
            return NOT_FOUND
        eg[slot] = gid
    eg[slot + stamps] = tick
    return np.int64(bytes_at(eg[H_CACHE_ADDR] + ((slot - eg[H_TAGS]) << eg[H_SLOT_SHIFT]) + at, 1)[0])


@kernel
def _stored(eg, black, white, kings, stm):
    """The stored code of a position; _RESOLVE / _RESOLVE_WLD for a capture position a file leaves out;
    NOT_FOUND when its slice is not loaded."""
    d, index = slice_index(eg, black, white, kings, stm)
    if d == NOT_FOUND:
        return NOT_FOUND
    kind = eg[d + F_KIND]
    if kind == KIND_RAW:
        return read_code(eg[d + F_VALUES], index)
    flags = eg[d + F_FORMAT] >> 8
    if (flags & FLAG_NO_CAPTURES) != 0 and mg.has_capture(black, white, kings, stm):
        return _RESOLVE_WLD if (flags & FLAG_NO_DISTANCES) != 0 else _RESOLVE
    return _block_value(eg, d, index)


@kernel
def fold_child(code, win, floor, draw):
    """Fold one move's result (the code of the position it leads to, the opponent's view) into the
    best so far: ``win`` the smallest odd code (D = code - 1 even: the opponent loses after D plies),
    ``floor`` the largest even code (the opponent wins after code - 1 plies), ``draw`` 1 once a move draws."""
    if code == 0:
        return win, floor, np.int64(1)
    if (code & 1) == 1:
        return (code if code < win else win), floor, draw
    return win, (code if code > floor else floor), draw


@kernel
def _fold_result(eg, f, code):
    """Fold a capture's result into the frame at ``f`` (a result without its distance: same classes)."""
    if code >= WLD_LOSS:
        eg[f + R_EXACT] = 0
        code = np.int64(1) if code == WLD_LOSS else np.int64(2)
    eg[f + R_WIN], eg[f + R_FLOOR], eg[f + R_DRAW] = fold_child(code, eg[f + R_WIN], eg[f + R_FLOOR],
                                                                 eg[f + R_DRAW])


@kernel
def _push(eg, level, black, white, kings, stm, wld):
    """A frame for a position with a capture pending: its captures and an empty fold; returns its offset."""
    f = eg[H_SCRATCH] + level * FRAME
    eg[H_RESOLVED] += 1
    n = mg.gen_captures(black, white, kings, stm, eg[f + R_MOVES:f + R_MOVES + mg.MAX_MOVES],
                        eg[f + R_PATHS:f + R_PATHS + mg.MAX_MOVES], 0)
    eg[f + R_BLACK] = black
    eg[f + R_WHITE] = white
    eg[f + R_KINGS] = kings
    eg[f + R_STM] = stm
    eg[f + R_COUNT] = n
    eg[f + R_NEXT] = 0
    eg[f + R_WIN] = NO_WIN
    eg[f + R_FLOOR] = 0
    eg[f + R_DRAW] = 0
    eg[f + R_EXACT] = 1
    eg[f + R_WLD] = 1 if wld else 0
    return f


@kernel
def _resolve(eg, black, white, kings, stm, wld):
    """The code of a position with a capture pending: the best of its captures, whose positions are in
    smaller slices and may have captures pending themselves (a stack of frames in eg's scratch words:
    numba cannot load a cached recursive kernel).  ``wld``: the slice keeps win/loss/draw only."""
    level = 0
    f = _push(eg, 0, black, white, kings, stm, wld)
    while True:
        if eg[f + R_NEXT] < eg[f + R_COUNT]:
            mv = eg[f + R_MOVES + eg[f + R_NEXT]]
            eg[f + R_NEXT] += 1
            s = eg[f + R_STM]
            b2, w2, k2 = mg.make_move(eg[f + R_BLACK], eg[f + R_WHITE], eg[f + R_KINGS], s, mv)
            if (w2 if s == 0 else b2) == 0:
                code = np.int64(1)                       # the opponent has no piece left: lost at once
            else:
                code = _stored(eg, b2, w2, k2, 1 - s)
                if code == _RESOLVE or code == _RESOLVE_WLD:
                    if level + 1 >= MAX_LEVELS:
                        return NOT_FOUND
                    level += 1
                    f = _push(eg, level, b2, w2, k2, 1 - s, code == _RESOLVE_WLD)
                    continue
                if code == NOT_FOUND:
                    return NOT_FOUND
            _fold_result(eg, f, code)
            continue
        if eg[f + R_WIN] != NO_WIN:
            result = eg[f + R_WIN] + 1
        elif eg[f + R_DRAW] != 0:
            result = np.int64(0)
        else:
            result = eg[f + R_FLOOR] + 1
        if result != 0 and (eg[f + R_WLD] != 0 or eg[f + R_EXACT] == 0):
            result = np.int64(WLD_WIN) if (result & 1) == 0 else np.int64(WLD_LOSS)
        if level == 0:
            return result
        level -= 1
        f -= FRAME
        _fold_result(eg, f, result)


def _resolve_from_address(table, words, _a, _b):
    """_resolve() for the table at ``table`` (``words`` long) on the position in its H_ARGS words."""
    eg = words_at(table, words)
    a = H_ARGS
    return _resolve(eg, eg[a], eg[a + 1], eg[a + 2], eg[a + 3], eg[a + 4] != 0)


_RESOLVER: list = []


def _resolver_address() -> int:
    """The address of the C entry point of _resolve (compiled, or loaded from the cache, on first use)."""
    if not _RESOLVER:
        _RESOLVER.append(c_kernel("int64(int64, int64, int64, int64)")(_resolve_from_address))
    return int(_RESOLVER[0].address)


@kernel
def capture_value(eg, black, white, kings, stm, wld):
    """The code of a position whose side to move has a capture, computed from its captures (``wld``: as
    a slice without distances keeps it)."""
    if eg[H_RESOLVER] == 0:
        return NOT_FOUND                     # empty_table(): nothing to compute it from
    a = H_ARGS
    eg[a] = black
    eg[a + 1] = white
    eg[a + 2] = kings
    eg[a + 3] = stm
    eg[a + 4] = 1 if wld else 0
    return call_address(eg[H_RESOLVER], eg[H_SELF], eg[H_SELF + 1], 0, 0)


@kernel
def probe(eg, black, white, kings, stm):
    """The code of a position (0 draw, D + 1, WLD_LOSS / WLD_WIN), or NOT_FOUND when its slice is not
    loaded (or its block is unreadable)."""
    code = _stored(eg, black, white, kings, stm)
    if code == _RESOLVE or code == _RESOLVE_WLD:
        return capture_value(eg, black, white, kings, stm, code == _RESOLVE_WLD)
    return code


@kernel
def probe_indices(eg, bm, bk, wm, wk, offsets, nbk_sets, nwk_sets, order, out):
    """``out[j]`` = the probed code of index ``order[j]`` of slice (bm, bk, wm, wk): every value of a
    slice read the way the search reads it (tests, ``egdb verify``)."""
    for j in range(order.shape[0]):
        black, white, kings, stm = unrank_position(order[j], bm, bk, wm, wk, offsets, nbk_sets, nwk_sets)
        out[j] = probe(eg, black, white, kings, stm)


@kernel
def progress(black, white, kings, winner):
    """How far the winner's men have advanced (rows, summed): promotions are how a won ending with men
    moves on into the slices with distances, so among won positions the search prefers advanced men."""
    men = (black if winner == 0 else white) & ~kings
    total = 0
    while men != 0:
        b = men & -men
        men ^= b
        row = (ctz(b) - ctz(b) // 9) // 4          # bit -> square index 0..31 -> row 0..7 from Black's side
        total += row if winner == 0 else 7 - row
    return 4 * total


# Explicit signature: compiled when the search imports this module, before the search's own
# kernels and the evaluation (see engine.warm_up_kernels for the order of a cold start).
@kernel("int64(int64[:], int64, int64, int64, int64, int64, int64, int64, int64)")
def search_score(eg, black, white, kings, stm, ply, qp, no_progress, mate):
    """The search score of a position: ``mate - ply - D`` for a win in D plies, negated for a loss, 0 for
    a draw; a win stored without its distance scores ``mate - KNOWN_WIN_MARGIN + progress`` (below every
    mate, above every evaluation); ``NOT_FOUND_SCORE`` when the table cannot tell.

    Kings-only positions change nothing for the no-progress counter but captures,
    so a result more than ``no_progress - qp`` plies away may be a draw by that
    rule: those are left to the search (men on the board reset the counter).
    """
    code = probe(eg, black, white, kings, stm)
    if code == NOT_FOUND:
        return NOT_FOUND_SCORE
    if code == 0:
        return 0
    if code >= WLD_LOSS:
        known = mate - KNOWN_WIN_MARGIN + progress(black, white, kings, stm if code == WLD_WIN else 1 - stm)
        return known if code == WLD_WIN else -known
    d = code - 1
    if no_progress > 0 and (black | white) == kings and d > no_progress - qp:
        return NOT_FOUND_SCORE
    if (d & 1) == 1:
        return mate - ply - d
    return -mate + ply + d


def root_choice(eg: np.ndarray, children: list[tuple[int, int, int, int]], stm: int, no_progress: int,
                mate: int) -> tuple[int, int] | None:
    """``(index, score)`` of the best root move when the table knows every child, else None.

    ``children`` holds ``(black, white, kings, no-progress plies)`` after each root
    move and ``stm`` is the side to move there; the score is the root mover's, as
    the search reports it (a win sooner and a loss later are preferred).
    """
    best: tuple[int, int] | None = None
    for i, (b, w, k, qp) in enumerate(children):
        s = int(search_score(eg, np.int64(b), np.int64(w), np.int64(k), np.int64(stm), np.int64(1), np.int64(qp),
                             np.int64(no_progress), np.int64(mate)))
        if s == NOT_FOUND_SCORE or abs(s) < mate - KNOWN_WIN_MARGIN + 256:
            return None      # unknown, or known without a distance: the search chooses
        if best is None or -s > best[1]:
            best = (i, -s)
    return best


def code_to_distance(code: int) -> int | None:
    """Plies to the end of the game (None for a draw)."""
    return None if code <= 0 else code - 1


def outcome(code: int) -> int | None:
    """The stored result from the side to move's view: 1 win, 0 draw, -1 loss (None: not in the database)."""
    if code == NOT_FOUND:
        return None
    if code == 0:
        return 0
    if code >= WLD_LOSS:
        return 1 if code == WLD_WIN else -1
    return 1 if (code - 1) % 2 else -1       # the mover wins in an odd number of plies


def describe(code: int) -> str:
    """``win in 7 plies``, ``loss in 4 plies``, ``draw`` (from the side to move's view)."""
    result = outcome(code)
    if result is None:
        return "not in the database"
    if result == 0:
        return "draw"
    word = "win" if result > 0 else "loss"
    if code >= WLD_LOSS:
        return f"{word} (distance not stored)"
    return f"{word} in {code - 1} plies"


def probe_position(eg: np.ndarray, black: int, white: int, kings: int, stm: int) -> int:
    """Python entry: ``probe`` on plain ints."""
    return int(probe(eg, np.int64(black), np.int64(white), np.int64(kings), np.int64(stm)))


def block_error(eg: np.ndarray) -> tuple[int, int] | None:
    """``(material key, block)`` of the first block a probe could not decode, or None."""
    if eg.shape[0] <= DIR or eg[H_ERROR] == 0:
        return None
    value = int(eg[H_ERROR]) - 1
    return value >> 32, value & 0xFFFFFFFF


def cache_counters(eg: np.ndarray) -> tuple[int, int, int]:
    """``(block cache hits, blocks decoded, capture positions computed)`` since the table was made."""
    if eg.shape[0] <= DIR:
        return 0, 0, 0
    return int(eg[H_HITS]), int(eg[H_MISSES]), int(eg[H_RESOLVED])


__all__ = ["MAGIC", "NOT_FOUND", "NOT_FOUND_SCORE", "MappedSlice", "empty_table", "assemble_table", "fork_table",
           "probe", "probe_position", "probe_indices", "capture_value", "search_score", "root_choice", "describe",
           "code_to_distance", "read_code", "slice_index", "fold_child", "block_error", "cache_counters"]
