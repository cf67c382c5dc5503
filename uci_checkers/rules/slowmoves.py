"""The rules in plain Python over the kernels' bitboards: legal moves, make, capture test and Zobrist key.

:mod:`uci_checkers.rules.movegen` compiles for seconds on a first start; this module needs
no compilation, so :class:`~uci_checkers.rules.position.Position` uses it while those
kernels are still being compiled or loaded in another thread (see
``position.load_kernels``): the engine can read ``position`` commands and play a move at
once.  It is written for clarity, not speed (about a thousand times slower than the
kernels), and gives exactly what the kernels give, to the bit: the same move words and
landing paths (see the move encoding in :mod:`uci_checkers.rules.movegen`), the same
positions and the same keys (``tests/test_slowmoves.py`` checks this against the
kernels on many thousands of positions).

Geometry is that of :mod:`uci_checkers.rules.bitboard`: a step is a shift by 4 or 5
bits (toward White's side for ``+``), a jump two equal steps, and a square is on the
board when its bit is in ``SQUARES``.
"""
from __future__ import annotations

from .bitboard import (BLACK_CROWN, CAPTURE_MASK, CAPTURE_SHIFT, PROMOTION_FLAG, SQUARES, WHITE_CROWN,
                       ZOBRIST_PIECE, ZOBRIST_SIDE)

__all__ = ["gen_moves", "make_move", "has_capture", "count_moves", "hash_position"]

_SHIFTS = (4, 5, -4, -5)            # direction d: 0-1 toward White's side (Black's forward), 2-3 back
_BLACK_MAN_DIRECTIONS = (0, 1)
_WHITE_MAN_DIRECTIONS = (2, 3)
_KING_DIRECTIONS = (0, 1, 2, 3)
_ZOBRIST = tuple(tuple(int(v) for v in row) for row in ZOBRIST_PIECE)   # plain ints: no numpy per call


def _step(bit: int, d: int, times: int = 1) -> int:
    """``bit`` moved ``times`` steps in direction ``d`` (off the board unless the result is in ``SQUARES``)."""
    shift = _SHIFTS[d] * times
    return bit << shift if shift > 0 else bit >> -shift


def _bits(bb: int) -> list[int]:
    """The set bits of ``bb``, lowest first, each as a single-bit int."""
    out = []
    while bb:
        low = bb & -bb
        out.append(low)
        bb ^= low
    return out


def _directions(is_king: bool, stm: int) -> tuple[int, ...]:
    if is_king:
        return _KING_DIRECTIONS
    return _BLACK_MAN_DIRECTIONS if stm == 0 else _WHITE_MAN_DIRECTIONS


def _sides(black: int, white: int, stm: int) -> tuple[int, int, int]:
    """(our pieces, their pieces, the row our men crown on)."""
    return (black, white, BLACK_CROWN) if stm == 0 else (white, black, WHITE_CROWN)


def _index(bit: int) -> int:
    return bit.bit_length() - 1


def _can_jump(bit: int, is_king: bool, them: int, empty: int, stm: int) -> bool:
    """Whether the piece on ``bit`` has a jump."""
    return any(_step(bit, d) & them and _step(bit, d, 2) & empty for d in _directions(is_king, stm))


def has_capture(black: int, white: int, kings: int, stm: int) -> bool:
    """Whether the side to move has a jump (captures are compulsory)."""
    us, them, _ = _sides(black, white, stm)
    empty = SQUARES & ~(black | white)
    return any(_can_jump(bit, bool(kings & bit), them, empty, stm) for bit in _bits(us))


def _chains(frm: int, at: int, them: int, captured: int, empty: int, crown: int, is_king: bool, stm: int,
            path: int, jumps: int, out: list[tuple[int, int]]) -> None:
    """Every maximal jump chain of the piece that started on bit index ``frm`` and is now on ``at``.

    A piece is never jumped twice, jumped pieces stay on the board until the move ends (so
    ``empty`` does not change), and a man that reaches its crowning row ends the move there.
    """
    extended = False
    for d in _directions(is_king, stm):
        over, land = _step(at, d), _step(at, d, 2)
        if not (over & them & ~captured) or not (land & empty):
            continue
        extended = True
        new_path = path | (_index(land) << (6 * jumps))
        if not is_king and land & crown:
            out.append((frm | (_index(land) << 6) | ((captured | over) << CAPTURE_SHIFT) | PROMOTION_FLAG,
                        new_path))
        else:
            _chains(frm, land, them, captured | over, empty, crown, is_king, stm, new_path, jumps + 1, out)
    if not extended:
        out.append((frm | (_index(at) << 6) | (captured << CAPTURE_SHIFT), path))


def gen_moves(black: int, white: int, kings: int, stm: int) -> list[tuple[int, int]]:
    """Every legal move as ``(move word, landing path)``: all capture chains if there is a capture,
    else every step (each distinct landing path its own move, as ``movegen.gen_moves``)."""
    us, them, crown = _sides(black, white, stm)
    empty = SQUARES & ~(black | white)
    out: list[tuple[int, int]] = []
    jumpers = [bit for bit in _bits(us) if _can_jump(bit, bool(kings & bit), them, empty, stm)]
    if jumpers:
        for bit in jumpers:
            # the mover's own square is empty once it has left: a king may pass over or end on it
            _chains(_index(bit), bit, them, 0, empty | bit, crown, bool(kings & bit), stm, 0, 0, out)
        return out
    for bit in _bits(us):
        is_king = bool(kings & bit)
        for d in _directions(is_king, stm):
            to = _step(bit, d)
            if to & empty:
                word = _index(bit) | (_index(to) << 6)
                if not is_king and to & crown:
                    word |= PROMOTION_FLAG
                out.append((word, _index(to)))
    return out


def make_move(black: int, white: int, kings: int, stm: int, word: int) -> tuple[int, int, int]:
    """The position after the move ``word`` (the side to move is not flipped): ``(black, white, kings)``."""
    frm = 1 << (word & 63)
    to = 1 << ((word >> 6) & 63)
    captured = (word >> CAPTURE_SHIFT) & CAPTURE_MASK
    if kings & frm:
        kings = (kings & ~frm) | to
    elif word & PROMOTION_FLAG:
        kings |= to
    kings &= ~captured
    if stm == 0:
        return (black & ~frm) | to, white & ~captured, kings
    return black & ~captured, (white & ~frm) | to, kings


def count_moves(black: int, white: int, kings: int, stm: int) -> int:
    """The number of legal moves (each landing path counted)."""
    return len(gen_moves(black, white, kings, stm))


def hash_position(black: int, white: int, kings: int, stm: int) -> int:
    """The Zobrist key of a position (``movegen.hash_position``)."""
    key = 0
    for bit in _bits(black | white):
        b = _index(bit)
        kind = (0 if black & bit else 1) + (2 if kings & bit else 0)
        key ^= _ZOBRIST[kind][b]
    return key ^ ZOBRIST_SIDE if stm == 1 else key
