"""Opening books for matches: the ACF three-move ballots and the eleven-man starts (package data), PDN
files, FEN/move lists.

An :class:`Opening` is a start position plus moves already played from it; both
are checked with the rules core when loaded, so a broken book fails at once and
not in game 200.
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from ..rules.notation import NotationError
from ..rules.pdn import decode_pdn_bytes, parse_pdn
from ..rules.position import Game, Position
from ..util.packagedata import data_path

BALLOTS = "ballots3"
ELEVEN_MAN = "elevenman"       # the package's 479 eleven-man starts (uci_checkers.learn.elevenman made them)
START_FEN = Position.start().fen()


class OpeningError(ValueError):
    """An opening book that cannot be read or holds an illegal line."""


@dataclass(frozen=True)
class Opening:
    """A start position (FEN) and the opening moves played from it."""

    label: str
    fen: str = START_FEN
    moves: tuple[str, ...] = ()

    @property
    def from_start(self) -> bool:
        return self.fen == START_FEN

    def start_position(self) -> Position:
        return Position.from_fen(self.fen)

    def game(self, no_progress_plies: int) -> Game:
        return Game.from_moves(self.start_position(), self.moves, no_progress_plies)


def ballots(include_barred: bool = False) -> list[Opening]:
    """The ACF three-move ballots in ACF order: the 156-opening deck (crossboard + mailplay)."""
    text = data_path("ballots3.tsv").read_text(encoding="utf-8")
    rows = [line.split("\t") for line in text.splitlines() if line.strip()]
    header = rows[0]
    col = {name: i for i, name in enumerate(header)}
    out = []
    for row in rows[1:]:
        deck = row[col["deck"]]
        if deck == "barred" and not include_barred:
            continue
        moves = tuple(row[col["moves"]].split())
        number = row[col["acf_no"]]
        name = row[col["name"]].strip() if len(row) > col["name"] else ""
        label = f"ACF {number}: {' '.join(moves)}" + (f" ({name})" if name else "")
        out.append(Opening(label, START_FEN, moves))
    return out


def eleven_man() -> list[Opening]:
    """The package's eleven-man starts (``data/elevenman.txt``), labelled by their number in the deck.

    More openings than the ballots for matches at fixed nodes, whose games repeat exactly: the ballots
    give 312 different games, the two decks together 1,270."""
    deck = _from_lines(data_path("elevenman.txt").read_text(encoding="utf-8"), "elevenman.txt")
    return [Opening(f"eleven-man {n}", op.fen, op.moves) for n, op in enumerate(deck, 1)]


def load(spec: Optional[str]) -> list[Opening]:
    """Openings named by ``--openings``: ``ballots3`` (default), ``elevenman``, a ``.pdn`` file, or a
    text file.

    A text file holds one opening a line: a FEN (optionally followed by ``moves ...``)
    or a move sequence from the start position; ``#`` starts a comment line.
    """
    if not spec or spec == BALLOTS:
        openings = ballots()
    elif spec == ELEVEN_MAN:
        openings = eleven_man()
    else:
        path = Path(spec)
        if not path.is_file():
            raise OpeningError(f"opening book {spec!r} not found (use 'ballots3', 'elevenman', a .pdn file or a "
                               "FEN file)")
        try:
            text = decode_pdn_bytes(path.read_bytes())
        except OSError as exc:
            raise OpeningError(f"cannot read opening book {spec!r}: {exc}") from None
        if path.suffix.lower() == ".pdn" or text.lstrip().startswith("["):
            openings = _from_pdn(text, path.name)
        else:
            openings = _from_lines(text, path.name)
    if not openings:
        raise OpeningError(f"no openings found in {spec!r}")
    for op in openings:
        check(op)
    return openings


def _from_pdn(text: str, source: str) -> list[Opening]:
    """Each game of the PDN text (its FEN and moves, checked by the reader) as an opening."""
    doc = parse_pdn(text)
    if doc.errors:                      # a broken book fails at once, naming the game
        raise OpeningError(f"{source}: {doc.errors[0]}")
    out = []
    for g in doc.games:
        label = g.tag("Opening") or g.tag("Event")
        if label in ("?", ""):
            label = f"{source} #{g.index + 1}"
        out.append(Opening(label, g.start.fen(), tuple(str(m) for m in g.moves)))
    return out


def _from_lines(text: str, source: str) -> list[Opening]:
    out = []
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        head, sep, tail = line.partition(" moves ")
        try:
            if ":" in head:
                fen = Position.from_fen(head).fen()
                moves = tuple(tail.split()) if sep else ()
            else:
                fen, moves = START_FEN, tuple(line.split())
        except NotationError as exc:
            raise OpeningError(f"{source} line {n}: {exc}") from exc
        out.append(Opening(f"{source}:{n}", fen, moves))
    return out


def check(op: Opening) -> None:
    """Replay the opening; it must be legal and leave a game in progress."""
    try:
        game = op.game(0)
    except NotationError as exc:
        raise OpeningError(f"opening {op.label!r}: {exc}") from exc
    if game.status().is_over:
        raise OpeningError(f"opening {op.label!r} leaves a finished game")


def ordered(openings: list[Opening], seed: Optional[int], shuffle: bool = True) -> list[Opening]:
    """The book in play order: shuffled with ``seed`` (reproducible) unless ``shuffle`` is off."""
    out = list(openings)
    if shuffle:
        random.Random(seed).shuffle(out)
    return out
