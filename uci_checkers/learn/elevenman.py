"""Eleven-man starts: the package's own deck of balanced openings with one man less on each side.

Self-play (:mod:`.selfplay`) and the bench start some games from these positions,
which the package makes itself by this rule (``seed`` 1 gives the shipped
``uci_checkers/data/elevenman.txt``):

1. **Removal.** From the start position take away one Black man (squares 1-12) and
   one White man (21-32): 144 positions, Black to move, in the order of the pairs.
2. **Play.** From each of them, ``LINES`` lines of ``PLIES`` plies of the engine's
   own play: at every ply each legal move is scored by a depth-``PLAY_DEPTH``
   search (MultiPV over all moves, cleared table, one thread, no endgame
   databases), and one move is drawn uniformly among those within ``MARGIN``
   centi-men of the best by ``numpy.random.default_rng([seed, black, white, line])``.
3. **Filter.** A line is kept when no piece was captured on the way (eleven men
   each), the side to move has no capture pending, and a depth-``BALANCE_DEPTH``
   search scores the position within ``BALANCE`` centi-men of even.  A position
   reached twice is kept once (the first time).

The searches are fixed-depth from cleared tables with the package's pattern tables
(w5, ``eval-w5.weights``: fast, and the deck stays put when the default network
changes), so the deck depends only on the seed, the search and those weights.  ``python -m
uci_checkers.learn.elevenman`` writes it (1,152 lines of play, 479 starts kept;
23 s of CPU); ``tests/test_elevenman.py`` makes the starts of the first four
removals again and compares them with the file's first lines, and compares the
header, which records the weights that made it: when the search or the weights
change, the test says the file is out of date.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Optional

import numpy as np

from ..util.exitcodes import EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE
from ..util.packagedata import data_path

FILE_NAME = "elevenman.txt"
SEED = 1
LINES = 8             # lines of play per removed pair
PLIES = 4             # plies of play after the removal (Black to move again at the end)
PLAY_DEPTH = 4        # search depth that scores every move of a ply
MARGIN = 20           # centi-men: a move this close to the best may be drawn
BALANCE_DEPTH = 8     # search depth of the balance filter
BALANCE = 30          # centi-men: the largest |score| of a kept start
HASH_MB = 8


def removals() -> list[tuple[int, int]]:
    """The (Black man, White man) pairs taken from the start, in the deck's order."""
    return [(b, w) for b in range(1, 13) for w in range(21, 33)]


def removal_fen(black_square: int, white_square: int) -> str:
    """The start position without the Black man on ``black_square`` and the White man on ``white_square``."""
    whites = ",".join(str(s) for s in range(21, 33) if s != white_square)
    blacks = ",".join(str(s) for s in range(1, 13) if s != black_square)
    return f"B:W{whites}:B{blacks}"


class _Generator:
    def __init__(self) -> None:
        from ..search.alphabeta import Searcher
        from ..search.weights import pattern_weights
        self.searcher = Searcher(HASH_MB, pattern_weights())
        self.stop = np.zeros(1, dtype=np.int64)

    def scored_moves(self, game) -> list[tuple[int, object]]:
        """(score, move) of every legal move by a depth-PLAY_DEPTH MultiPV search, best first."""
        from ..search.alphabeta import SearchLimits
        legal = game.position.legal_moves()
        if len(legal) == 1:
            return [(0, legal[0])]
        final: dict[int, tuple[int, object]] = {}

        def on_info(info) -> None:
            if info.depth == PLAY_DEPTH and info.pv:
                final[info.multipv] = (info.score, info.pv[0])

        self.searcher.clear()
        self.searcher.search(game, SearchLimits(depth=PLAY_DEPTH, multipv=len(legal)), on_info, self.stop)
        return sorted(final.values(), key=lambda sm: -sm[0])

    def balance(self, game) -> int:
        from ..search.alphabeta import SearchLimits
        self.searcher.clear()
        return int(self.searcher.search(game, SearchLimits(depth=BALANCE_DEPTH), None, self.stop).score)

    def line(self, seed: int, black_square: int, white_square: int, line: int) -> Optional[str]:
        """The start one line of play reaches, or None when the filter drops it."""
        from ..rules.position import Game, Position
        rng = np.random.default_rng([seed, black_square, white_square, line])
        game = Game(Position.from_fen(removal_fen(black_square, white_square)))
        for _ in range(PLIES):
            scored = self.scored_moves(game)
            if not scored:
                return None
            best = scored[0][0]
            near = [move for score, move in scored if score >= best - MARGIN]
            game.push(near[int(rng.integers(len(near)))])
        pos = game.position
        if pos.piece_count(0) != 11 or pos.piece_count(1) != 11 or pos.is_capture_pending():
            return None
        if abs(self.balance(game)) > BALANCE:
            return None
        return pos.fen()


def generate(seed: int = SEED, pairs: Optional[list[tuple[int, int]]] = None) -> list[str]:
    """The deck's FENs for ``seed`` (``pairs``: only these removals, for a quick check of a part)."""
    gen = _Generator()
    seen: set[str] = set()
    out = []
    for b, w in (removals() if pairs is None else pairs):
        for k in range(LINES):
            fen = gen.line(seed, b, w, k)
            if fen is not None and fen not in seen:
                seen.add(fen)
                out.append(fen)
    return out


def header(seed: int) -> list[str]:
    from ..search.weights import pattern_weights
    return [f"# Eleven-man starts made by uci_checkers.learn.elevenman (seed {seed}): one Black and one White man",
            f"# taken from the start, {PLIES} plies of the engine's play (a move within {MARGIN} centi-men of the best",
            f"# at depth {PLAY_DEPTH}, drawn from the seed), kept when 11 v 11, no capture pending and a depth-"
            f"{BALANCE_DEPTH} search",
            f"# scores it within {BALANCE} centi-men; evaluation weights {pattern_weights().checksum[:16]}.",
            "# Write it again: python -m uci_checkers.learn.elevenman"]


def deck_text(seed: int = SEED) -> str:
    return "\n".join(header(seed) + generate(seed)) + "\n"


def shipped_path() -> Path:
    return data_path(FILE_NAME)


def read_deck(path: Optional[Path] = None) -> list[str]:
    """The FENs of a deck file (comment lines skipped)."""
    text = (path or shipped_path()).read_text(encoding="utf-8")
    return [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.startswith("#")]


def main(argv: Optional[list[str]] = None) -> int:
    from ..util.atomicfile import write_text_atomic
    ap = argparse.ArgumentParser(prog="python -m uci_checkers.learn.elevenman",
                                 description="Write the eleven-man starts (see the module's docstring).")
    ap.add_argument("--seed", type=int, default=SEED, help=f"default {SEED} (the shipped file)")
    ap.add_argument("--out", default=None, help="file to write (default: the package's data/elevenman.txt)")
    args = ap.parse_args(argv)
    if not 0 <= args.seed < 2 ** 32:
        ap.error("--seed must be 0 .. 2^32-1")
    out = Path(args.out) if args.out else shipped_path()
    try:
        text = deck_text(args.seed)
        write_text_atomic(out, text)
    except KeyboardInterrupt:
        print("elevenman: interrupted; nothing written", file=sys.stderr)
        return EXIT_INTERRUPTED
    except OSError as exc:
        print(f"elevenman: cannot write {out}: {exc.strerror}", file=sys.stderr)
        return EXIT_USAGE
    print(f"{out}: {text.count(chr(10)) - len(header(args.seed))} starts")
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
