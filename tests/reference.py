"""A slow, obviously-correct English checkers move generator for cross-checking the kernels.

It shares nothing with the package: its own geometry from rules.md, squares
1-32 numbered four per row from Black's back row (1-4) to White's (29-32),
drawn with Black at the top::

    row 0:   .  1  .  2  .  3  .  4        (columns 1, 3, 5, 7)
    row 1:   5  .  6  .  7  .  8  .        (columns 0, 2, 4, 6)
    ...
    row 7:  29  . 30  . 31  . 32  .

A board is a dict ``square -> piece`` with pieces ``'b'``/``'w'`` (men) and
``'B'``/``'W'`` (kings); the side to move is ``'b'`` or ``'w'``.  Black moves
toward higher rows, White toward lower rows.

Rules implemented (rules.md): captures compulsory; any capture may be chosen;
a chain continues to its end; men forward only (moves and jumps); kings one
step in four directions; a man reaching the far row is crowned and the move
ends, also in the middle of a chain; no piece is jumped twice; jumped pieces
are removed when the move ends; the mover's start square is empty during its
own chain; every distinct landing path is its own move.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, FrozenSet, List, Optional, Tuple

Board = Dict[int, str]


def square_rc(square: int) -> Tuple[int, int]:
    """(row, column) of a dark square 1-32."""
    row = (square - 1) // 4
    col = 2 * ((square - 1) % 4) + (1 if row % 2 == 0 else 0)
    return row, col


def rc_square(row: int, col: int) -> Optional[int]:
    """The square number at (row, col), or None off the board or on a light square."""
    if not (0 <= row < 8 and 0 <= col < 8):
        return None
    if (row + col) % 2 == 0:
        return None  # light square
    return row * 4 + col // 2 + 1


def colour(piece: str) -> str:
    return piece.lower()


def is_king(piece: str) -> bool:
    return piece.isupper()


def forward_rows(piece: str) -> Tuple[int, ...]:
    """Row steps a piece may take: Black men +1, White men -1, kings both."""
    if is_king(piece):
        return (1, -1)
    return (1,) if colour(piece) == "b" else (-1,)


def crown_row(side: str) -> int:
    return 7 if side == "b" else 0


def opponent(side: str) -> str:
    return "w" if side == "b" else "b"


@dataclass(frozen=True)
class RefMove:
    path: Tuple[int, ...]          # start square then every landing square
    captured: FrozenSet[int]
    promotes: bool
    result: Tuple[Tuple[int, str], ...]   # the board after the move, as sorted items

    @property
    def is_capture(self) -> bool:
        return bool(self.captured)


def _result(board: Board, path, captured, promotes: bool) -> Tuple[Tuple[int, str], ...]:
    after = dict(board)
    piece = after.pop(path[0])
    for sq in captured:
        del after[sq]
    if promotes:
        piece = piece.upper()
    after[path[-1]] = piece
    return tuple(sorted(after.items()))


def legal_moves(board: Board, side: str) -> List[RefMove]:
    """Every legal move for ``side``: all capture paths if any capture exists, else the plain moves."""
    captures: List[RefMove] = []
    for start, piece in sorted(board.items()):
        if colour(piece) != side:
            continue
        _chains(board, side, piece, start, start, (start,), frozenset(), captures)
    if captures:
        return captures
    quiet: List[RefMove] = []
    for start, piece in sorted(board.items()):
        if colour(piece) != side:
            continue
        r, c = square_rc(start)
        for dr in forward_rows(piece):
            for dc in (-1, 1):
                to = rc_square(r + dr, c + dc)
                if to is None or to in board:
                    continue
                promotes = not is_king(piece) and r + dr == crown_row(side)
                quiet.append(RefMove((start, to), frozenset(), promotes,
                                     _result(board, (start, to), (), promotes)))
    return quiet


def _chains(board: Board, side: str, piece: str, start: int, at: int, path, captured, out) -> None:
    """Depth-first search of every maximal jump chain of ``piece`` (from ``start``) now on ``at``."""
    r, c = square_rc(at)
    extended = False
    for dr in forward_rows(piece):
        for dc in (-1, 1):
            over = rc_square(r + dr, c + dc)
            land = rc_square(r + 2 * dr, c + 2 * dc)
            if over is None or land is None:
                continue
            victim = board.get(over)
            if victim is None or colour(victim) == side or over in captured:
                continue
            # The landing square must be empty; the mover's own start square is empty now.
            if land in board and land != start:
                continue
            extended = True
            new_path = path + (land,)
            new_captured = captured | {over}
            if not is_king(piece) and r + 2 * dr == crown_row(side):
                out.append(RefMove(new_path, new_captured, True, _result(board, new_path, new_captured, True)))
                continue  # crowning ends the move
            _chains(board, side, piece, start, land, new_path, new_captured, out)
    if not extended and captured:
        out.append(RefMove(path, captured, False, _result(board, path, captured, False)))


def perft(board: Board, side: str, depth: int) -> int:
    """Leaf count of the legal-move tree (each landing path counted)."""
    if depth == 0:
        return 1
    moves = legal_moves(board, side)
    if depth == 1:
        return len(moves)
    return sum(perft(dict(m.result), opponent(side), depth - 1) for m in moves)


def board_from_fen(fen: str) -> Tuple[Board, str]:
    """A minimal independent FEN reader (no ranges): ``B:W21,K22:B1,2``."""
    fields = fen.strip().split(":")
    side = fields[0].strip().lower()
    board: Board = {}
    for field in fields[1:]:
        field = field.strip()
        col = field[0].lower()
        for item in filter(None, (t.strip() for t in field[1:].split(","))):
            king = item.upper().startswith("K")
            sq = int(item[1:] if king else item)
            board[sq] = col.upper() if king else col
    return board, side


def board_to_fen(board: Board, side: str) -> str:
    def lst(col: str) -> str:
        return ",".join(("K" if is_king(p) else "") + str(sq)
                        for sq, p in sorted(board.items()) if colour(p) == col)
    return f"{side.upper()}:W{lst('w')}:B{lst('b')}"
