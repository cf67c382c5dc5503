"""``uci-checkers validate``: measure an evaluation against games and positions it was not fitted to.

* ``--pdn FILE`` (default: the repository's ``training-data/validation.pdn``, games the
  engine played against itself at 50,000 and 80,000 nodes a move, never used for
  training; ``training-data/README.md`` says how they were made).  Reports the
  log-loss of the static evaluation against the game results (each evaluation
  with its own best logistic scale, fitted on the same positions, so evaluations
  of different scales compare fairly; a constant 1/2 scores log 2 = 0.693) and,
  with ``--depth``, how often a search of that depth plays the move played in
  the game.  Any PDN file works, e.g. games of stronger engines if you have them.
* ``--puzzles FILE``, if you have a puzzle file (tab-separated, a header line,
  the FEN in the third column and ``black_wins``/``white_wins``/``draw`` in the
  last): a search of ``--depth`` plies per position; a puzzle counts as solved
  when the score says the known result (a win: more than ``--threshold``
  centi-men for the winner; a draw: within it).  The repository ships none.

Everything is in-process and deterministic (fixed depth, cleared table).  ``--weights FILE``
measures another weights file (``uci-checkers train --out``) instead of the shipped one; the
report names the file and its checksum.
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any, Optional

import numpy as np

from ..util.exitcodes import EXIT_INTERRUPTED, EXIT_OK
from ..util.commandline import ToolParser


def _fit_scale(scores: np.ndarray, targets: np.ndarray) -> tuple[float, float]:
    from .metrics import fit_scale, log_loss
    k = fit_scale(scores.astype(np.float64), targets)
    return k, log_loss(scores / k, targets)


DEFAULT_PDN = Path(__file__).resolve().parents[2] / "training-data" / "validation.pdn"


def games(path: Path, depth: int, sample: int, seed: int = 1, weights: Any = None) -> dict:
    """Static log-loss on every quiet position, and move agreement on a seeded sample (``weights``: an
    :class:`~uci_checkers.search.weights.EvalWeights`, default the shipped ones)."""
    from ..rules.pdn import normalize_result, read_pdn_file
    from ..search import nnue
    from ..search.evaluate import evaluation_terms
    from ..search.weights import KIND_NETWORK, default_weights
    from ..rules.position import Game
    from ..search.alphabeta import SearchLimits, Searcher
    doc = read_pdn_file(str(path))
    weights = weights if weights is not None else default_weights()
    if weights.kind == KIND_NETWORK:
        terms, table = nnue.evaluation_terms, nnue.kernel_net(weights.table)
    else:
        terms, table = evaluation_terms, weights.table
    scores, targets, probes = [], [], []
    for pg in doc.games:
        result = {"1-0": 1.0, "0-1": 0.0, "1/2-1/2": 0.5}.get(normalize_result(pg.result) or "")
        if result is None:
            continue
        game = Game(pg.start)
        for move in pg.moves:
            pos = game.position
            if not pos.is_capture_pending():
                scores.append(terms(pos, table)["total_stm"])
                targets.append(result if pos.turn == 0 else 1.0 - result)
                if len(pos.legal_moves()) > 1:
                    probes.append((pg, len(game.moves)))    # the game is replayed only if sampled
            game.push(move)
    k, loss = _fit_scale(np.asarray(scores, dtype=np.float64), np.asarray(targets))
    out = {"positions": len(scores), "static_log_loss": round(loss, 5), "fitted_scale": round(k, 1)}
    if depth > 0 and probes:
        rng = np.random.default_rng(seed)
        pick = rng.choice(len(probes), size=min(sample, len(probes)), replace=False)
        searcher = Searcher(16, weights)
        stop = np.zeros(1, dtype=np.int64)
        agree = 0
        for i in pick:
            pg, ply = probes[int(i)]
            game = Game(pg.start)
            for move in pg.moves[:ply]:
                game.push(move)
            played = pg.moves[ply]
            searcher.clear()
            best = searcher.search(game, SearchLimits(depth=depth), None, stop).best
            agree += int(best is not None and best.squares == played.squares)
        out.update({"move_sample": len(pick), "move_depth": depth, "move_agreement": round(agree / len(pick), 4)})
    return out


def puzzles(path: Path, depth: int, threshold: int, limit: Optional[int] = None, weights: Any = None) -> dict:
    """Solved puzzles by known result (see the module docstring)."""
    from ..rules.position import Game, Position
    from ..search.alphabeta import MATE_BOUND, SearchLimits, Searcher
    rows = [ln.split("\t") for ln in path.read_text(encoding="utf-8").splitlines()[1:] if ln.strip()]
    if limit:
        rows = rows[:limit]
    searcher = Searcher(16, weights)
    stop = np.zeros(1, dtype=np.int64)
    solved: dict[str, list[int]] = {}
    skipped = 0
    for row in rows:
        fen, expected = row[2], row[-1].strip()
        try:
            pos = Position.from_fen(fen)
        except ValueError:
            skipped += 1            # the collection has a few impossible set-ups (a man on its crowning row)
            continue
        searcher.clear()
        res = searcher.search(Game(pos), SearchLimits(depth=depth), None, stop)
        black = res.score if pos.turn == 0 else -res.score
        ok = {"black_wins": black > threshold, "white_wins": black < -threshold,
              "draw": abs(black) <= threshold and abs(black) < MATE_BOUND}.get(expected, False)
        s = solved.setdefault(expected, [0, 0])
        s[0] += int(ok)
        s[1] += 1
    total = sum(v[0] for v in solved.values())
    n = sum(v[1] for v in solved.values())
    return {"puzzles": n, "skipped_invalid": skipped, "solved": total, "score": round(total / max(1, n), 4), "depth": depth,
            "threshold": threshold, "by_result": {k: f"{v[0]}/{v[1]}" for k, v in sorted(solved.items())}}


def main(argv: Optional[list[str]] = None) -> int:
    ap = ToolParser(prog="uci-checkers validate", description=__doc__.split("\n\n")[0])
    ap.add_argument("--pdn", default=str(DEFAULT_PDN),
                    help="finished games (log-loss, move agreement); default: training-data/validation.pdn")
    ap.add_argument("--puzzles", help="if you have a puzzle file: positions with known results (optional)")
    ap.add_argument("--depth", type=int, default=8, help="search depth for moves and puzzles (default 8)")
    ap.add_argument("--sample", type=int, default=1000, help="positions for the move agreement (default 1000)")
    ap.add_argument("--threshold", type=int, default=50, help="centi-men that count as a win (default 50)")
    ap.add_argument("--limit", type=int, default=None, help="first N puzzles only")
    ap.add_argument("--weights", metavar="FILE", default=None,
                    help="evaluation weights file to measure (default: the shipped one)")
    args = ap.parse_args(argv)
    if not (0 <= args.depth <= 64 and 1 <= args.sample <= 10**6 and 0 <= args.threshold <= 10000):
        ap.error("a numeric flag is out of range")
    if not Path(args.pdn).is_file():
        if args.pdn == str(DEFAULT_PDN):
            ap.error(f"{args.pdn}: no such file (the default is the repository's training-data/validation.pdn: "
                     "run from a checkout or give --pdn FILE)")
        ap.error(f"{args.pdn}: no such file")
    if args.puzzles and not Path(args.puzzles).is_file():
        ap.error(f"{args.puzzles}: no such file")
    from ..search.weights import WeightsError, default_path, load_weights

    try:
        weights = load_weights(args.weights if args.weights is not None else default_path())
    except WeightsError as exc:
        ap.error(f"--weights: {exc}")
    report: dict = {"weights": {"file": weights.path, "kind": weights.kind, "checksum": weights.checksum}}
    t0 = time.monotonic()
    try:
        report["games"] = games(Path(args.pdn), args.depth, args.sample, weights=weights)
        if args.puzzles:
            report["puzzles"] = puzzles(Path(args.puzzles), args.depth, args.threshold, args.limit, weights)
    except KeyboardInterrupt:
        print("uci-checkers validate: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    report["seconds"] = round(time.monotonic() - t0, 1)
    print(json.dumps(report))
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
