"""Writes ``tests/data/cb_bridge_positions.txt``: positions for the CheckerBoard bridge tests, all made here.

``python tests/make_cb_bridge_positions.py`` (from the repository root) writes the file again; the
same code and package data give the same file.  The positions, in this order:

* 60 of the package's eleven-man starts (``uci_checkers/data/elevenman.txt``, evenly spaced);
* 250 ends of random playouts (``numpy.random.default_rng(12)``) from the ACF three-move ballots:
  4 to 160 uniformly random plies, stopped early where the game ends (its last position with a
  move is kept), then on to the first position without a capture pending (again: the last with a
  move where the game ends first): openings, middlegames and king endings;
* the distinct positions of ``tests/data/perft.tsv``;
* 100 playout positions with a capture pending (``default_rng(13)``, 2 to 80 plies, the first
  position of the playout with a capture pending after the drawn number of plies).

Each position once, in canonical PDN FEN.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

TESTS = Path(__file__).resolve().parent
sys.path.insert(0, str(TESTS.parent))

from uci_checkers.arena.openings import ballots  # noqa: E402
from uci_checkers.learn.elevenman import read_deck  # noqa: E402
from uci_checkers.rules.position import Game  # noqa: E402
from uci_checkers.util.atomicfile import write_text_atomic  # noqa: E402

OUT = TESTS / "data" / "cb_bridge_positions.txt"


def playout(moves: tuple[str, ...], plies: int, rng: np.random.Generator) -> Game:
    game = Game.from_moves(None, list(moves))
    for _ in range(plies):
        legal = game.position.legal_moves()
        if not legal or game.status().is_over:
            break
        game.push(legal[int(rng.integers(len(legal)))])
    while not game.position.legal_moves():        # a finished game: its last position with a move
        game.pop()
    return game


def positions() -> list[str]:
    out: list[str] = []
    deck = read_deck()
    out += [deck[i * len(deck) // 60] for i in range(60)]
    openings = [op.moves for op in ballots()]
    rng = np.random.default_rng(12)
    for _ in range(250):
        moves = openings[int(rng.integers(len(openings)))]
        game = playout(moves, int(rng.integers(4, 161)), rng)
        while game.position.is_capture_pending() and not game.status().is_over:
            legal = game.position.legal_moves()
            game.push(legal[int(rng.integers(len(legal)))])
        while not game.position.legal_moves():
            game.pop()
        out.append(game.position.fen())
    rows = (TESTS / "data" / "perft.tsv").read_text(encoding="utf-8").splitlines()
    out += [row.split("\t")[1] for row in rows if row and not row.startswith("#") and not row.startswith("name\t")]
    rng = np.random.default_rng(13)
    captures = 0
    while captures < 100:
        moves = openings[int(rng.integers(len(openings)))]
        game = playout(moves, int(rng.integers(2, 81)), rng)
        while not game.position.is_capture_pending() and game.position.legal_moves() and not game.status().is_over:
            legal = game.position.legal_moves()
            game.push(legal[int(rng.integers(len(legal)))])
        if game.position.is_capture_pending():
            out.append(game.position.fen())
            captures += 1
    seen: set[str] = set()
    return [fen for fen in out if not (fen in seen or seen.add(fen))]


def main() -> int:
    header = [f"# {line}" if line else "#" for line in (__doc__ or "").strip().splitlines()]
    write_text_atomic(OUT, "\n".join(header + positions()) + "\n")
    print(f"{OUT}: written")
    return 0


if __name__ == "__main__":
    sys.exit(main())
