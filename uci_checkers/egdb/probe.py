"""The probe table (every loaded slice in one int64 array) and the probe kernel the search calls.

Layout of the table ``eg`` (int64 words)::

    eg[0]                  MAGIC
    eg[1]                  largest piece count loaded (0: nothing loaded, the probe is never called)
    eg[2]                  number of slices loaded
    eg[DIR + 4*key + 0]    1 when the slice of material ``key`` is loaded
    eg[DIR + 4*key + 1]    word offset of its values (8 one-byte values per word, little-endian)
    eg[DIR + 4*key + 2]    word offset of its men_offsets table
    eg[DIR + 4*key + 3]    black-king placements << 32 | white-king placements
    ...                    the men_offsets tables and the packed values

Values are the one-byte codes of :mod:`uci_checkers.egdb` (0 draw, D + 1: the game
ends after D plies, the side to move winning when D is odd).  A slice that is not
loaded but whose mirror is gets probed through the colour-reversed position.

One array (instead of one per slice) so that the search takes the whole database
as a single kernel argument, and ``empty_table()`` (``eg[1] == 0``) costs the
search one comparison per node.
"""
from __future__ import annotations

import numpy as np

from ..util.jit import ctz, kernel, popcount
from .index import N_KEYS, Slice, king_set_counts, material_key, rank_position, square_mask, padded_board, \
    flip_square_mask

MAGIC = 0x4547_4442_3031      # "EGDB01"
DIR = 8
HEADER_WORDS = DIR + 4 * N_KEYS
NOT_FOUND = -1
WLD_LOSS = 253                 # codes of slices stored without distances (odd: the side to move loses)
WLD_WIN = 254
KNOWN_WIN_MARGIN = 1500        # a win without a distance scores mate - this - ply (+ progress): below every mate
NOT_FOUND_SCORE = -(1 << 40)   # search_score: no verdict (beyond any search score)


def empty_table() -> np.ndarray:
    """A table with nothing loaded: every probe misses (the search skips probing)."""
    eg = np.zeros(DIR, dtype=np.int64)
    eg[0] = MAGIC
    return eg


def assemble_table(slices: dict[Slice, tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    """One probe table from ``{slice: (codes uint8, men_offsets int64)}``."""
    total = HEADER_WORDS
    for codes, offsets in slices.values():
        total += offsets.shape[0] + (codes.shape[0] + 7) // 8
    eg = np.zeros(total, dtype=np.int64)
    eg[0] = MAGIC
    eg[1] = max((s.pieces for s in slices), default=0)
    eg[2] = len(slices)
    at = HEADER_WORDS
    for s, (codes, offsets) in slices.items():
        d = DIR + 4 * s.key
        nbk, nwk = king_set_counts(s)
        eg[d] = 1
        eg[d + 2] = at
        eg[at:at + offsets.shape[0]] = offsets
        at += offsets.shape[0]
        eg[d + 1] = at
        words = (codes.shape[0] + 7) // 8
        padded = np.zeros(words * 8, dtype=np.uint8)
        padded[:codes.shape[0]] = codes
        eg[at:at + words] = padded.view("<i8")
        at += words
        eg[d + 3] = (nbk << 32) | nwk
    return eg


@kernel
def read_code(eg, base, index):
    """The one-byte value ``index`` of the slice whose values start at word ``base``."""
    return (eg[base + (index >> 3)] >> ((index & 7) << 3)) & 255


@kernel
def slice_index(eg, black, white, kings, stm):
    """``(values base, index)`` of a position, through its mirror if needed; base NOT_FOUND when not loaded."""
    nb = popcount(black)
    nw = popcount(white)
    if nb == 0 or nw == 0 or nb + nw > eg[1]:
        return NOT_FOUND, 0
    nbk = popcount(black & kings)
    nwk = popcount(white & kings)
    key = material_key(nb - nbk, nbk, nw - nwk, nwk)
    d = DIR + 4 * key
    if eg[d] == 0:
        key = material_key(nw - nwk, nwk, nb - nbk, nbk)
        d = DIR + 4 * key
        if eg[d] == 0:
            return NOT_FOUND, 0
        b2 = padded_board(flip_square_mask(square_mask(white)))
        w2 = padded_board(flip_square_mask(square_mask(black)))
        kings = padded_board(flip_square_mask(square_mask(kings)))
        black = b2
        white = w2
        stm = 1 - stm
    sets = eg[d + 3]
    off = eg[d + 2]
    index = rank_position(black, white, kings, stm, eg, off, sets >> 32, sets & 0xFFFFFFFF)
    return eg[d + 1], index


@kernel
def probe(eg, black, white, kings, stm):
    """The stored code of a position (0 draw, D + 1), or NOT_FOUND when its slice is not loaded."""
    base, index = slice_index(eg, black, white, kings, stm)
    if base == NOT_FOUND:
        return NOT_FOUND
    return read_code(eg, base, index)


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


def describe(code: int) -> str:
    """``win in 7 plies``, ``loss in 4 plies``, ``draw`` (from the side to move's view)."""
    if code == NOT_FOUND:
        return "not in the database"
    if code == 0:
        return "draw"
    if code >= WLD_LOSS:
        return f"{'win' if code == WLD_WIN else 'loss'} (distance not stored)"
    d = code - 1
    return f"{'win' if d % 2 else 'loss'} in {d} plies"


def probe_position(eg: np.ndarray, black: int, white: int, kings: int, stm: int) -> int:
    """Python entry: ``probe`` on plain ints."""
    return int(probe(eg, np.int64(black), np.int64(white), np.int64(kings), np.int64(stm)))


__all__ = ["MAGIC", "NOT_FOUND", "NOT_FOUND_SCORE", "empty_table", "assemble_table", "probe", "probe_position",
           "search_score", "root_choice", "describe", "code_to_distance", "read_code", "slice_index"]
