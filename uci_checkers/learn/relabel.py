"""``uci-checkers relabel``: score recorded positions again by a deeper search that sees the endgame databases.

Self-play labels an ending by the engine's own play against itself: a level-looking
position that a stronger opponent wins stays labelled level, because the engine
never found the win against itself.  This tool takes the quiet positions of
existing shards within a piece-count range (``--pieces 6-12``), searches each one
again with ``--nodes`` nodes and the endgame databases (every slice found in
``--egdb-dir``, the engine's default place unless given), and writes them as new
shards that ``train``/``train-net`` read like self-play shards:

* ``score``: the new search score (side to move; database wins and mates as +-3000);
* ``result``: the database's verdict when the databases hold the position itself (draws
  included) or the search proved one (a score in the database-win or mate range),
  otherwise the recorded game's result.

The choice of positions is fixed by the inputs and ``--seed``: unique positions
(the first occurrence in the inputs' order) in a seeded random order, the first
``--positions`` of them, cut into chunks of ``--chunk``.  Each search starts from a
cleared table with one thread, so a chunk is the same every time it is made.
Chunks are written atomically as ``shard-NNNNN.npz``; a chunk that exists is never
searched again, so an interrupted run continues where it stopped (Ctrl-C keeps the
finished chunks and exits 130).
"""
from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Optional, TextIO

import numpy as np

from ..engine.options import MAX_HASH_MB
from ..util.atomicfile import atomic_output
from ..util.exitcodes import EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE
from ..util.commandline import ToolParser
from ..util.interrupts import raise_if_interrupted
from ..util.progress import Progress
from ..util.workpool import check_parent, enter_worker, run_in_processes
from .dataset import DataError, load_shards, piece_counts
from .selfplay import (RESULT_DRAW, RESULT_LOSS, RESULT_WIN, SCORE_CLAMP, clamp_score, engine_identity,
                       weights_argument)

RELABEL_FORMAT = 1
GAME_STRIDE = 10**7          # output game number = input source index * GAME_STRIDE + input game number
DECISIVE = 2000              # a search score beyond this (database win or mate: +-3000 after clamping) is proven


@dataclass(frozen=True)
class RelabelConfig:
    """Everything that fixes the new labels of a chosen position."""

    nodes: int = 30000
    hash_mb: int = 16
    egdb_dir: str = ""           # "" = the engine's default database directory
    egdb_pieces: int = 8         # load slices up to this many pieces (as far as they exist)
    weights: str = ""            # evaluation weights file ("": the shipped one)


def choose_positions(inputs: list[Path], lo: int, hi: int, count: int, seed: int
                     ) -> tuple[dict[str, np.ndarray], list[dict]]:
    """The positions a run relabels, in order (unique quiet positions with ``lo..hi`` pieces, seeded order),
    and the input shards they were chosen from (files and digests)."""
    data = load_shards(inputs)
    pieces = piece_counts(data.black, data.white)
    keep = np.where((pieces >= lo) & (pieces <= hi))[0]
    # first occurrence of each (placement, side to move)
    keys = np.stack([data.black[keep], data.white[keep], data.kings[keep], data.stm[keep]], axis=1)
    _, first = np.unique(keys, axis=0, return_index=True)
    keep = keep[np.sort(first)]
    order = np.random.default_rng([int(seed) & 0xFFFFFFFF, 0x4E1A]).permutation(keep.shape[0])
    rows = keep[order[:count]]
    source, game = np.divmod(data.game[rows], 10**9)
    # results in the data set are the side to move's; shards store Black's view
    result = np.where(data.stm[rows] == 0, data.result[rows], 2 - data.result[rows])
    return {"black": data.black[rows], "white": data.white[rows], "kings": data.kings[rows],
            "stm": data.stm[rows], "result": result, "game": source * GAME_STRIDE + game}, data.sources


class Labeller:
    """One process's searcher with the databases (kept between chunks)."""

    def __init__(self, config: RelabelConfig) -> None:
        from ..search.alphabeta import Searcher
        from ..search.weights import load_weights
        self.config = config
        self.searcher = Searcher(config.hash_mb, load_weights(config.weights) if config.weights else None)
        db = load_databases(config)
        self.egdb_pieces = db.pieces if db else 0
        if db:
            self.searcher.set_egdb(db.table)
        self.stop = np.zeros(1, dtype=np.int64)

    def exact(self, black: int, white: int, kings: int, stm: int) -> Optional[int]:
        """The databases' verdict on the position, side to move's view (1 win, 0 draw, -1 loss), or None."""
        from ..egdb.probe import outcome, probe_position
        if not self.egdb_pieces or (black | white).bit_count() > self.egdb_pieces:
            return None
        return outcome(probe_position(self.searcher.egdb, black, white, kings, stm))

    def label(self, black: int, white: int, kings: int, stm: int) -> int:
        """The new search score of one position (side to move, clamped to +-SCORE_CLAMP)."""
        from ..rules.position import Game, Position
        from ..search.alphabeta import SearchLimits
        self.searcher.clear()
        result = self.searcher.search(Game(Position(black, white, kings, stm)),
                                      SearchLimits(nodes=self.config.nodes), None, self.stop)
        if result.best is None:        # no legal move: lost
            return -SCORE_CLAMP
        return clamp_score(int(result.score))


def load_databases(config: RelabelConfig):
    """The configured databases (``egdb.store.LoadedDatabase``), or None when there are none."""
    from ..egdb.store import default_directory, load_directory
    directory = Path(config.egdb_dir) if config.egdb_dir else default_directory()
    if config.egdb_pieces <= 0 or not directory.is_dir():
        return None
    db = load_directory(directory, config.egdb_pieces)
    return db if db.pieces else None


def new_result(score: int, stm: int, recorded: int, exact: Optional[int] = None) -> int:
    """Black's-view result: the databases' ``exact`` verdict (side to move's view) when known, the proven one
    when ``score`` (side to move) is decisive, else ``recorded``."""
    if exact is not None:
        mover = RESULT_DRAW + exact
        return mover if stm == 0 else 2 - mover
    if abs(score) < DECISIVE:
        return recorded
    mover_wins = score > 0
    return RESULT_WIN if mover_wins == (stm == 0) else RESULT_LOSS


_WORKER: Optional[Labeller] = None


def worker_labeller(config: RelabelConfig) -> Labeller:
    """This process's searcher for ``config`` (made once, kept between work items of relabel and rescore)."""
    global _WORKER
    if _WORKER is None or _WORKER.config != config:
        _WORKER = Labeller(config)
    return _WORKER


def _label_chunk(config: RelabelConfig, chunk: int, arrays: dict[str, np.ndarray], out_dir: str,
                 meta: dict, parent: Optional[int] = None) -> tuple[int, int, int]:
    """Search every position of one chunk and write it; returns (chunk, positions, proven results)."""
    labeller = worker_labeller(config)
    enter_worker(parent)
    n = arrays["black"].shape[0]
    score = np.zeros(n, dtype=np.int64)
    result = np.array(arrays["result"], dtype=np.int64)
    proven = 0
    for i in range(n):
        if i % 64 == 0:
            check_parent(parent, "relabel")
        b, w, k, stm = (int(arrays[c][i]) for c in ("black", "white", "kings", "stm"))
        exact = labeller.exact(b, w, k, stm)
        # a position the databases hold needs no search: its score is the verdict's
        score[i] = SCORE_CLAMP * exact if exact is not None else labeller.label(b, w, k, stm)
        proven += exact is not None or abs(int(score[i])) >= DECISIVE
        result[i] = new_result(int(score[i]), stm, int(result[i]), exact)
    out = {k: np.asarray(arrays[k], dtype=np.int64) for k in ("black", "white", "kings", "stm", "game")}
    out.update(score=score, result=result, ply=np.zeros(n, dtype=np.int64))
    meta = dict(meta, chunk=chunk, positions=n, proven=proven, egdb_pieces=labeller.egdb_pieces,
                results=[int((result == r).sum()) for r in (RESULT_LOSS, RESULT_DRAW, RESULT_WIN)])
    out["meta"] = np.frombuffer(json.dumps(meta, sort_keys=True).encode(), dtype=np.uint8)
    with atomic_output(chunk_path(Path(out_dir), chunk)) as f:
        np.savez_compressed(f, **out)
    return chunk, n, proven


def chunk_path(out_dir: Path, chunk: int) -> Path:
    return out_dir / f"shard-{chunk:05d}.npz"


def relabel(inputs: list[Path], out_dir: Path, lo: int, hi: int, count: int, chunk: int, seed: int,
            config: RelabelConfig, jobs: int = 1, progress: Optional[TextIO] = sys.stderr) -> dict:
    """Relabel the chosen positions into ``out_dir`` (skipping finished chunks); returns a summary."""
    chosen, sources = choose_positions(inputs, lo, hi, count, seed)
    total = int(chosen["black"].shape[0])
    meta = {"format": RELABEL_FORMAT, "config": asdict(config), "pieces": [lo, hi], "seed": seed,
            "chunk_size": chunk, "inputs": sources,
            "engine": engine_identity(config.weights)}
    out_dir.mkdir(parents=True, exist_ok=True)
    chunks = (total + chunk - 1) // chunk
    todo = [c for c in range(chunks) if not chunk_path(out_dir, c).exists()]
    done = total - sum(min(chunk, total - c * chunk) for c in todo)
    new = proven = 0
    t0 = time.monotonic()
    bar = Progress(progress, "relabel")

    def report() -> None:
        rate = new / max(1e-9, time.monotonic() - t0)
        bar.update(f"{done}/{total} positions {rate:.1f} positions/s {proven} proven", done / max(1, total))

    def finished(outcome: tuple[int, int, int]) -> None:
        nonlocal done, new, proven
        done, new, proven = done + outcome[1], new + outcome[1], proven + outcome[2]
        report()

    def part(c: int) -> dict[str, np.ndarray]:
        return {k: v[c * chunk:(c + 1) * chunk] for k, v in chosen.items()}

    report()
    if jobs <= 1:
        for c in todo:
            finished(_label_chunk(config, c, part(c), str(out_dir), meta))
            raise_if_interrupted()
    else:
        run_in_processes(_label_chunk, [(config, c, part(c), str(out_dir), meta) for c in todo], jobs, finished)
    bar.close()
    return {"positions": total, "chunks": chunks, "new_positions": new, "new_proven": proven,
            "seconds": round(time.monotonic() - t0, 1), "out": str(out_dir)}


def _piece_range(text: str) -> tuple[int, int]:
    lo, _, hi = text.partition("-")
    a, b = int(lo), int(hi or lo)
    if not 2 <= a <= b <= 24:
        raise ValueError
    return a, b


def search_config(ap: ToolParser, args) -> RelabelConfig:
    """The searches' settings from the parsed ``--nodes``, ``--hash``, ``--egdb-dir``, ``--egdb-pieces`` and
    ``--weights`` of relabel or rescore (a bad value ends the tool with one line and exit 2)."""
    if not 1 <= args.hash <= MAX_HASH_MB:
        ap.error(f"--hash must be between 1 and {MAX_HASH_MB} MB, not {args.hash}")
    if args.egdb_dir and not Path(args.egdb_dir).is_dir():
        ap.error(f"--egdb-dir {args.egdb_dir}: no such directory")
    return RelabelConfig(nodes=args.nodes, hash_mb=args.hash,
                         egdb_dir=os.path.abspath(args.egdb_dir) if args.egdb_dir else "",
                         egdb_pieces=args.egdb_pieces, weights=weights_argument(ap, args.weights))


def main(argv: Optional[list[str]] = None) -> int:
    ap = ToolParser(prog="uci-checkers relabel", description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", action="append", required=True, metavar="DIR",
                    help="shards to take positions from (repeatable; the order fixes the choice)")
    ap.add_argument("--out", required=True, help="directory of shard-NNNNN.npz files (created; resumed)")
    ap.add_argument("--pieces", default="6-12", help="piece-count range of the positions, LO-HI (default 6-12)")
    ap.add_argument("--positions", type=int, default=100000, help="positions to relabel (default 100000)")
    ap.add_argument("--chunk", type=int, default=5000, help="positions per output shard (default 5000)")
    ap.add_argument("--nodes", type=int, default=30000, help="nodes per search (default 30000)")
    ap.add_argument("--seed", type=int, default=1, help="fixes the choice and order of positions (default 1)")
    ap.add_argument("--jobs", type=int, default=1, help="processes searching at once (default 1)")
    ap.add_argument("--hash", type=int, default=RelabelConfig.hash_mb, metavar="MB",
                    help=f"transposition table per process, cleared before every position (default "
                         f"{RelabelConfig.hash_mb}; at a few thousand nodes 1 MB is faster: clearing 16 MB "
                         f"costs more than the search)")
    ap.add_argument("--egdb-dir", default="", help="endgame database directory (default: the engine's own)")
    ap.add_argument("--egdb-pieces", type=int, default=8, help="use database slices up to this many pieces")
    ap.add_argument("--weights", metavar="FILE", default=None, help="evaluation weights the search uses")
    args = ap.parse_args(argv)
    try:
        lo, hi = _piece_range(args.pieces)
    except ValueError:
        ap.error(f"--pieces {args.pieces!r}: expected LO-HI with 2 <= LO <= HI <= 24")
    for name in ("positions", "chunk", "nodes", "jobs"):
        if not 1 <= getattr(args, name) <= 10**9:
            ap.error(f"--{name} must be between 1 and 1000000000, not {getattr(args, name)}")
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        ap.error(f"--out {out} exists and is not a directory")
    config = search_config(ap, args)
    db = load_databases(config)
    print("uci-checkers relabel: " + (f"endgame databases up to {db.pieces} pieces" if db else
          "no endgame databases found (uci-checkers egdb build --pieces 5): searching without them"),
          file=sys.stderr)
    try:
        summary = relabel([Path(d) for d in args.data], out, lo, hi, args.positions, args.chunk, args.seed,
                          config, args.jobs)
    except DataError as exc:
        print(f"uci-checkers relabel: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("\nuci-checkers relabel: interrupted; finished chunks are kept (run again to continue)",
              file=sys.stderr)
        return EXIT_INTERRUPTED
    print(json.dumps(summary))
    return EXIT_OK
