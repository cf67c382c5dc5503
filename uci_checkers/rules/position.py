"""The Python-level game: ``Move``, ``Position`` (an immutable value) and ``Game`` (history and result).

Everything here calls the numba kernels of :mod:`uci_checkers.rules.movegen` for the
rules, so the Python layer and the search can never disagree about legality.  The
kernels are loaded (compiled, on a first start: seconds) at the first rules call; while
a background thread loads them instead (see :mod:`uci_checkers.rules.backend`), calls
are answered by the pure-Python rules of :mod:`uci_checkers.rules.slowmoves`, which give
the same moves, positions and keys: the engine reads ``position`` and plays a move
while the kernels compile.

>>> pos = Position.start()
>>> [str(m) for m in pos.legal_moves()]
['9-13', '9-14', '10-14', '10-15', '11-15', '11-16', '12-16']
>>> pos.play(pos.parse_move("11-15")).fen()
'W:W21,22,23,24,25,26,27,28,29,30,31,32:B1,2,3,4,5,6,7,8,9,10,12,15'
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Iterable, Optional

import numpy as np

from . import backend, slowmoves
from .bitboard import (BIT_TO_SQUARE, BLACK, BLACK_START, CAPTURE_MASK, CAPTURE_SHIFT, PROMOTION_FLAG, SIDE_NAMES,
                       SQUARE_TO_BIT, WHITE, WHITE_START, bits_to_squares)
from .notation import AmbiguousMoveError, IllegalMoveError, format_fen, format_path, parse_fen, parse_move_text

DEFAULT_NO_PROGRESS_PLIES = 80


@dataclass(frozen=True, order=True)
class Move:
    """A legal move: the kernel's move word plus its landing path for text.

    ``squares`` is the start square followed by every landing square.
    """

    squares: tuple[int, ...]
    word: int = field(compare=False)
    is_capture: bool = field(compare=False)

    @classmethod
    def from_words(cls, word: int, path: int) -> "Move":
        captured = (word >> CAPTURE_SHIFT) & CAPTURE_MASK
        jumps = bin(captured).count("1")
        landings = max(jumps, 1)
        squares = [BIT_TO_SQUARE[word & 63]]
        for i in range(landings):
            squares.append(BIT_TO_SQUARE[(path >> (6 * i)) & 63])
        return cls(tuple(squares), int(word), jumps > 0)

    @property
    def from_square(self) -> int:
        return self.squares[0]

    @property
    def to_square(self) -> int:
        return self.squares[-1]

    @property
    def captured_squares(self) -> list[int]:
        return bits_to_squares((self.word >> CAPTURE_SHIFT) & CAPTURE_MASK)

    @property
    def promotes(self) -> bool:
        return bool(self.word & PROMOTION_FLAG)

    def text(self) -> str:
        return format_path(self.squares, self.is_capture)

    def __str__(self) -> str:
        return self.text()


@dataclass(frozen=True)
class Position:
    """An immutable position: bitboards in the padded layout and the side to move (0 Black, 1 White)."""

    black: int
    white: int
    kings: int
    turn: int

    @classmethod
    def start(cls) -> "Position":
        return cls(BLACK_START, WHITE_START, 0, BLACK)

    @classmethod
    def from_fen(cls, text: str) -> "Position":
        p = parse_fen(text)
        return cls(p.black, p.white, p.kings, p.turn)

    def fen(self) -> str:
        return format_fen(self.black, self.white, self.kings, self.turn)

    def __str__(self) -> str:
        return self.fen()

    # --- rules -------------------------------------------------------------
    def legal_moves(self) -> list[Move]:
        """Every legal move (captures only when any exists), sorted by their squares."""
        mg = backend.current()
        if mg is None:
            words = slowmoves.gen_moves(self.black, self.white, self.kings, self.turn)
            return sorted(Move.from_words(word, path) for word, path in words)
        moves = np.zeros(mg.MAX_MOVES, dtype=np.int64)
        paths = np.zeros(mg.MAX_MOVES, dtype=np.int64)
        n = mg.gen_moves(self.black, self.white, self.kings, self.turn, moves, paths, 0)
        return sorted(Move.from_words(int(moves[i]), int(paths[i])) for i in range(n))

    def play(self, move: Move) -> "Position":
        """The position after ``move`` (which must be legal here: use ``parse_move`` for text)."""
        mg = backend.current()
        rules = slowmoves if mg is None else mg
        b, w, k = rules.make_move(self.black, self.white, self.kings, self.turn, move.word)
        return Position(int(b), int(w), int(k), 1 - self.turn)

    def has_legal_move(self) -> bool:
        mg = backend.current()
        rules = slowmoves if mg is None else mg
        return rules.count_moves(self.black, self.white, self.kings, self.turn) > 0

    def is_capture_pending(self) -> bool:
        mg = backend.current()
        rules = slowmoves if mg is None else mg
        return bool(rules.has_capture(self.black, self.white, self.kings, self.turn))

    def zobrist(self) -> int:
        mg = backend.current()
        rules = slowmoves if mg is None else mg
        return int(rules.hash_position(self.black, self.white, self.kings, self.turn))

    def placement_key(self) -> tuple[int, int, int, int]:
        """What repetition compares: the placement of men and kings and the side to move."""
        return (self.black, self.white, self.kings, self.turn)

    def parse_move(self, text: str) -> Move:
        """The legal move that ``text`` names.

        Full paths (``15x24x31``) match exactly.  Shorter text (``15x31``, or a path
        with some landings left out) is accepted when every legal move it fits
        leads to the same position; a two-square text that is itself a legal
        single jump means that jump.  ``-`` and ``x`` are not told apart: the
        squares decide.
        """
        squares, _ = parse_move_text(text)
        legal = self.legal_moves()
        exact = [m for m in legal if m.squares == tuple(squares)]
        if exact:
            return exact[0]
        candidates = [m for m in legal if m.squares[0] == squares[0] and m.squares[-1] == squares[-1]
                      and _is_subsequence(squares[1:-1], m.squares[1:-1])]
        if not candidates:
            shown = " ".join(str(m) for m in legal) or "none"
            raise IllegalMoveError(f"illegal move {text.strip()!r} in {self.fen()}; legal moves: {shown}")
        results = {self.play(m) for m in candidates}
        if len(results) > 1:
            shown = " ".join(str(m) for m in candidates)
            raise AmbiguousMoveError(f"move {text.strip()!r} is ambiguous in {self.fen()}: "
                                     f"it could be {shown}; give the full path")
        return candidates[0]

    # --- queries -----------------------------------------------------------
    def piece_at(self, square: int) -> Optional[str]:
        """'b', 'w' (men), 'B', 'W' (kings) or None."""
        bit = 1 << SQUARE_TO_BIT[square - 1]
        king = bool(self.kings & bit)
        if self.black & bit:
            return "B" if king else "b"
        if self.white & bit:
            return "W" if king else "w"
        return None

    def piece_count(self, side: int) -> int:
        return bin(self.black if side == BLACK else self.white).count("1")

    def diagram(self) -> str:
        """An ASCII board, Black at the top, square numbers on the empty dark squares."""
        rows = []
        for r in range(8):
            cells = []
            for c in range(4):
                sq = r * 4 + c + 1
                p = self.piece_at(sq)
                cells.append(f"{p:>2}" if p else f"{'.':>2}")
            line = "   ".join(cells)
            rows.append(("     " if r % 2 == 0 else "  ") + line + f"      {r * 4 + 1:>2}-{r * 4 + 4:<2}")
        return "\n".join(rows)

    @property
    def side_name(self) -> str:
        return SIDE_NAMES[self.turn]


def _is_subsequence(needle: Iterable[int], hay: Iterable[int]) -> bool:
    it = iter(hay)
    return all(any(x == y for y in it) for x in needle)


class GameStatus(enum.Enum):
    ONGOING = "ongoing"
    BLACK_WINS = "black wins"          # White to move has no legal move
    WHITE_WINS = "white wins"          # Black to move has no legal move
    DRAW_REPETITION = "draw by repetition"
    DRAW_NO_PROGRESS = "draw by no progress"

    @property
    def is_over(self) -> bool:
        return self is not GameStatus.ONGOING

    @property
    def pdn_result(self) -> str:
        """PDN result text, first player (Black) first."""
        return {GameStatus.ONGOING: "*", GameStatus.BLACK_WINS: "1-0", GameStatus.WHITE_WINS: "0-1",
                GameStatus.DRAW_REPETITION: "1/2-1/2", GameStatus.DRAW_NO_PROGRESS: "1/2-1/2"}[self]


class Game:
    """A start position and the moves played from it, with the rules' end-of-game checks.

    ``no_progress_plies`` is N of the no-progress draw (a run of N plies without a
    capture or a man move); 0 switches the rule off.
    """

    def __init__(self, start: Optional[Position] = None,
                 no_progress_plies: int = DEFAULT_NO_PROGRESS_PLIES) -> None:
        self.start = start if start is not None else Position.start()
        self.no_progress_plies = no_progress_plies
        self.moves: list[Move] = []
        self.positions: list[Position] = [self.start]
        self._quiet_run: list[int] = [0]     # plies since the last capture or man move, per position
        self._counts: dict[tuple[int, int, int, int], int] = {self.start.placement_key(): 1}

    @classmethod
    def from_moves(cls, start: Optional[Position], moves: Iterable[str],
                   no_progress_plies: int = DEFAULT_NO_PROGRESS_PLIES) -> "Game":
        game = cls(start, no_progress_plies)
        for text in moves:
            game.push_text(text)
        return game

    @property
    def position(self) -> Position:
        return self.positions[-1]

    @property
    def quiet_plies(self) -> int:
        """Plies since the last capture or man move (the no-progress counter)."""
        return self._quiet_run[-1]

    def repetition_count(self) -> int:
        """How many times the current position has occurred (the start counts)."""
        return self._counts[self.position.placement_key()]

    def push(self, move: Move) -> None:
        pos = self.position
        man_move = not (pos.kings >> (move.word & 63)) & 1
        progress = move.is_capture or man_move
        new = pos.play(move)
        self.moves.append(move)
        self.positions.append(new)
        self._quiet_run.append(0 if progress else self._quiet_run[-1] + 1)
        key = new.placement_key()
        self._counts[key] = self._counts.get(key, 0) + 1

    def push_text(self, text: str) -> Move:
        move = self.position.parse_move(text)
        self.push(move)
        return move

    def pop(self) -> Move:
        if not self.moves:
            raise IndexError("no move to take back")
        key = self.positions[-1].placement_key()
        self._counts[key] -= 1
        if not self._counts[key]:
            del self._counts[key]
        self.positions.pop()
        self._quiet_run.pop()
        return self.moves.pop()

    def status(self) -> GameStatus:
        """The result as rules.md orders the checks: no legal move, repetition, no progress."""
        pos = self.position
        if not pos.has_legal_move():
            return GameStatus.WHITE_WINS if pos.turn == BLACK else GameStatus.BLACK_WINS
        if self.repetition_count() >= 3:
            return GameStatus.DRAW_REPETITION
        if self.no_progress_plies and self.quiet_plies >= self.no_progress_plies:
            return GameStatus.DRAW_NO_PROGRESS
        return GameStatus.ONGOING

    def history_keys(self) -> list[int]:
        """Zobrist keys of every position so far, oldest first (for the search's repetition check)."""
        return [p.zobrist() for p in self.positions]
