"""Text formats: PDN FEN positions and move text, and the errors they raise.

FEN (PDN form)::

    B:W21,22,23,24,25,26,27,28,29,30,31,32:B1,2,3,4,5,6,7,8,9,10,11,12
    ^ side to move      ^ White's squares      ^ Black's squares

``K`` before a square marks a king (``WK30``).  Readers also accept ranges
(``B1-12``, ``BK1-3``), either colour list first, an empty list (``W:W:B5``),
lower case, spaces after separators, the ``[FEN "..."]`` tag wrapper, a trailing
``.`` and PDN's optional extra fields such as ``:H0:F1``.

Only ASCII is accepted (apart from ``×`` as a capture mark): digits ``0-9``, and
plain spaces or tabs between items.
Other Unicode digits (``١١``, fullwidth ``１１``) and spaces (NBSP) are refused with
an error that names the character, so text that merely looks right never passes.

Move text: ``11-15`` for a plain move, ``15x24x31`` for a capture (start square,
then every landing square).  Matching text to a legal move lives in
:mod:`uci_checkers.rules.position` because it needs the move generator; this module
only tokenises.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from .bitboard import BLACK, BLACK_CROWN, SQUARE_TO_BIT, WHITE, WHITE_CROWN


class NotationError(ValueError):
    """Base class of every text-format error of this package."""


class InvalidFenError(NotationError):
    """A position text that cannot be read, or that describes an impossible position."""


class InvalidMoveError(NotationError):
    """Move text that is not well formed (not squares 1-32 joined by ``-`` or ``x``)."""


class IllegalMoveError(NotationError):
    """Well-formed move text that matches no legal move in the position."""


class AmbiguousMoveError(NotationError):
    """Short move text that matches legal moves leading to different positions."""


@dataclass(frozen=True)
class FenParts:
    """The content of a FEN: bitboards in the padded layout and the side to move."""

    black: int
    white: int
    kings: int
    turn: int


_WRAPPER = re.compile(r'^\[\s*FEN\s+"(.*)"\s*\]$', re.IGNORECASE | re.DOTALL | re.ASCII)
# Squares have at most two digits: longer numbers are refused before int() sees them.
_ITEM = re.compile(r"^(K?)([0-9]{1,3})(?:-(K?)([0-9]{1,3}))?$")


def _require_ascii(text: str, what: str, error: type, allowed: str = "") -> None:
    """Refuse any non-ASCII character but ``allowed`` (Unicode digits and spaces look right but are not the format)."""
    for ch in text:
        if ord(ch) > 127 and ch not in allowed:
            raise error(f"{what} contains the non-ASCII character U+{ord(ch):04X} {ch!r}: "
                        "use ASCII digits and spaces only")


def parse_fen(text: str) -> FenParts:
    """Read a PDN FEN; raise :class:`InvalidFenError` saying what is wrong."""
    if not isinstance(text, str):
        raise InvalidFenError("FEN must be text")
    _require_ascii(text, "FEN", InvalidFenError)
    s = text.strip()
    m = _WRAPPER.match(s)
    if m:
        s = m.group(1).strip()
    if s.endswith("."):
        s = s[:-1].rstrip()
    if not s:
        raise InvalidFenError("empty FEN")
    fields = [f.strip() for f in s.split(":")]
    side = fields[0].upper()
    if side not in ("B", "W"):
        raise InvalidFenError(f"FEN must start with the side to move 'B' or 'W', not {fields[0][:40]!r}")
    turn = BLACK if side == "B" else WHITE
    lists: dict[str, list[tuple[int, bool]]] = {}
    for field in fields[1:]:
        if not field:
            raise InvalidFenError(f"empty field in FEN {text.strip()[:80]!r}")
        colour = field[0].upper()
        if colour in ("H", "F") and re.fullmatch(r"[0-9]{1,6}", field[1:].strip()):
            continue  # PDN's optional half-move clock / move number fields
        if colour not in ("B", "W"):
            raise InvalidFenError(f"FEN field {field[:40]!r} must start with 'W' or 'B'")
        if colour in lists:
            raise InvalidFenError(f"FEN lists the {'Black' if colour == 'B' else 'White'} pieces twice")
        lists[colour] = _parse_piece_list(field[1:], colour)
    for colour, name in (("W", "White"), ("B", "Black")):
        if colour not in lists:
            raise InvalidFenError(f"FEN has no {name} piece list (write '{colour}' alone for none)")
    black = white = kings = 0
    seen: dict[int, str] = {}
    for colour in ("W", "B"):
        for square, king in lists[colour]:
            if square in seen:
                raise InvalidFenError(f"square {square} appears twice in the FEN")
            seen[square] = colour
            bit = 1 << SQUARE_TO_BIT[square - 1]
            if colour == "B":
                black |= bit
                if not king and bit & BLACK_CROWN:
                    raise InvalidFenError(f"a Black man cannot stand on square {square}, its crowning row")
            else:
                white |= bit
                if not king and bit & WHITE_CROWN:
                    raise InvalidFenError(f"a White man cannot stand on square {square}, its crowning row")
            if king:
                kings |= bit
    for colour, name in (("B", "Black"), ("W", "White")):
        if len(lists[colour]) > 12:
            raise InvalidFenError(f"{name} has {len(lists[colour])} pieces; at most 12 are possible")
    return FenParts(black, white, kings, turn)


def _parse_piece_list(body: str, colour: str) -> list[tuple[int, bool]]:
    out: list[tuple[int, bool]] = []
    body = body.strip()
    if not body:
        return out
    for raw in body.split(","):
        item = raw.strip().upper().replace(" ", "")
        m = _ITEM.match(item)
        if not m:
            raise InvalidFenError(f"cannot read {raw.strip()[:40]!r} in the {colour} piece list")
        king = m.group(1) == "K"
        first = int(m.group(2))
        last = int(m.group(4)) if m.group(4) is not None else first
        if m.group(3):
            king = True
        for sq in (first, last):
            if not 1 <= sq <= 32:
                raise InvalidFenError(f"square {sq} is outside 1-32")
        if last < first:
            raise InvalidFenError(f"range {raw.strip()!r} runs backwards")
        out.extend((sq, king) for sq in range(first, last + 1))
    return out


def format_fen(black: int, white: int, kings: int, turn: int) -> str:
    """The canonical FEN: side, White's list, Black's list, squares ascending, ``K`` for kings."""

    def piece_list(bb: int) -> str:
        items = []
        for sq in range(1, 33):
            bit = 1 << SQUARE_TO_BIT[sq - 1]
            if bb & bit:
                items.append(("K" if kings & bit else "") + str(sq))
        return ",".join(items)

    return f"{'B' if turn == BLACK else 'W'}:W{piece_list(white)}:B{piece_list(black)}"


_MOVE_TOKEN = re.compile(r"^[0-9]{1,3}([-xX:×][0-9]{1,3})+$")
_TOO_LONG = re.compile(r"[0-9]{4,}")
MAX_PATH_SQUARES = 13     # a start square and at most 12 landings (one per captured piece)


def parse_move_text(text: str) -> tuple[list[int], bool]:
    """Tokenise move text into its squares; also say whether it was written as a capture.

    Raises :class:`InvalidMoveError` for anything but squares 1-32 joined by
    ``-`` or ``x`` (``X``, ``:`` and ``×`` are accepted as capture marks too).
    """
    if not isinstance(text, str):
        raise InvalidMoveError("move must be text")
    _require_ascii(text, "move", InvalidMoveError, allowed="×")
    s = text.strip()
    if _TOO_LONG.search(s):
        raise InvalidMoveError(f"move {s[:40]!r} has a number of more than three digits: squares are 1-32")
    if not _MOVE_TOKEN.match(s):
        raise InvalidMoveError(f"cannot read move {text.strip()[:40]!r}: expected squares joined by '-' or 'x', "
                               "like 11-15 or 15x24x31")
    squares = [int(t) for t in re.split(r"[-xX:×]", s)]
    if len(squares) > MAX_PATH_SQUARES:
        raise InvalidMoveError(f"move {s[:40]!r}... names {len(squares)} squares; a capture takes at most "
                               f"12 pieces ({MAX_PATH_SQUARES} squares)")
    for sq in squares:
        if not 1 <= sq <= 32:
            raise InvalidMoveError(f"square {sq} in move {s[:40]!r} is outside 1-32")
    return squares, bool(re.search(r"[xX:×]", s))


def format_path(squares, capture: bool) -> str:
    """Move text from its squares: ``11-15`` or ``15x24x31``."""
    return ("x" if capture else "-").join(str(s) for s in squares)
