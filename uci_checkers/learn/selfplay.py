"""``uci-checkers selfplay``: labelled positions from the engine's own fast games.

Each game is fixed by ``(seed, index)``: its opening, its random opening plies and
(with a cleared table and one thread) every search, so a shard can be rebuilt
bit for bit.  Games are cut into shards of ``--shard-size`` games written
atomically as ``shard-NNNNN.npz``; a shard that exists is never played again, so
an interrupted run continues where it stopped (Ctrl-C keeps the finished shards
and exits 130).

Openings (chosen per game by its own generator):

* an ACF three-move ballot, then 0-4 random plies;
* an eleven-man start (the package's own deck, made by :mod:`.elevenman`), then 0-4 random plies;
* the start position, then 4-10 uniformly random plies.

Only positions *after* the last random ply are recorded, so every recorded
position leads to its label by the engine's own play.  A position is recorded
when the side to move has no capture (the evaluation only ever sees such
positions).  Labels: the game result and the search score of the move played,
both from the side to move's point of view.

The engine plays with the shipped evaluation weights, or with ``--weights FILE``
(a file of ``uci-checkers train``); each shard records the file (in its config)
and its checksum (in the engine identity).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Optional, TextIO

import numpy as np

from ..util.exitcodes import EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE
from ..util.commandline import ToolParser
from ..util.raycluster import RayConnectError, connect_ray
from .elevenman import read_deck
from ..util.atomicfile import atomic_output
from ..util.progress import Progress
from ..util.workpool import check_parent, enter_worker, run_in_processes

SHARD_FORMAT = 1
RESULT_LOSS, RESULT_DRAW, RESULT_WIN = 0, 1, 2     # stored from Black's view; 2 = Black won
SCORE_CLAMP = 3000                                  # mate scores are stored as +-3000


@dataclass(frozen=True)
class SelfPlayConfig:
    """Everything that fixes the games, besides the game index."""

    seed: int = 1
    nodes: int = 3000                 # per move, full strength, one thread
    hash_mb: int = 8
    ply_cap: int = 400                # a game still going after this many plies is scored a draw
    no_progress_plies: int = 80
    weights: str = ""                 # evaluation weights file ("": the shipped one)


@dataclass
class GameRecord:
    """One game's recorded positions (arrays of equal length) and its result."""

    black: list[int]
    white: list[int]
    kings: list[int]
    stm: list[int]
    score: list[int]
    ply: list[int]
    result: int                       # RESULT_* from Black's view
    plies: int


_OPENING_CACHE: dict[str, list] = {}


def _openings() -> tuple[list[tuple[str, ...]], list[str]]:
    if not _OPENING_CACHE:
        from ..arena.openings import ballots
        _OPENING_CACHE["ballots"] = [op.moves for op in ballots()]
        _OPENING_CACHE["eleven"] = read_deck()
    return _OPENING_CACHE["ballots"], _OPENING_CACHE["eleven"]


def game_rng(seed: int, index: int) -> np.random.Generator:
    """The generator that fixes game ``index`` of a run with ``seed``."""
    return np.random.default_rng([int(seed) & 0xFFFFFFFF, int(index) & 0xFFFFFFFF, 0x5E1F])


def opening_for(seed: int, index: int, no_progress_plies: int = 80):
    """The game (position and history) game ``index`` starts from, after its random plies."""
    from ..rules.position import Game, Position
    rng = game_rng(seed, index)
    ballot_lines, eleven = _openings()
    kind = rng.random()
    if kind < 0.4:
        game = Game.from_moves(None, ballot_lines[int(rng.integers(len(ballot_lines)))], no_progress_plies)
        random_plies = int(rng.integers(0, 5))
    elif kind < 0.7:
        game = Game(Position.from_fen(eleven[int(rng.integers(len(eleven)))]), no_progress_plies)
        random_plies = int(rng.integers(0, 5))
    else:
        game = Game(None, no_progress_plies)
        random_plies = int(rng.integers(4, 11))
    for _ in range(random_plies):
        if game.status().is_over:
            break
        legal = game.position.legal_moves()
        game.push(legal[int(rng.integers(len(legal)))])
    return game


class _Player:
    """One process's searcher (kept between games: compiling and allocating once)."""

    def __init__(self, config: SelfPlayConfig) -> None:
        from ..search.alphabeta import Searcher
        from ..search.weights import load_weights
        self.config = config
        self.searcher = Searcher(config.hash_mb, load_weights(config.weights) if config.weights else None)
        # the code this process runs is the checkout as it was now: asked again at each shard, a checkout that
        # moves on while a long run plays would be recorded instead of the code that played
        self.identity = engine_identity(config.weights)
        self.stop = np.zeros(1, dtype=np.int64)

    def play(self, index: int) -> GameRecord:
        from ..rules.position import GameStatus
        from ..search.alphabeta import SearchLimits
        cfg = self.config
        game = opening_for(cfg.seed, index, cfg.no_progress_plies)
        self.searcher.clear()
        rec = GameRecord([], [], [], [], [], [], RESULT_DRAW, 0)
        # a per-game node budget within +-25% of the configured one: the same opening gives different games
        jitter = game_rng(cfg.seed, index ^ 0x7FFF0000).uniform(0.75, 1.25)
        limits = SearchLimits(nodes=max(100, int(cfg.nodes * jitter)))
        status = game.status()
        while not status.is_over and len(game.moves) < cfg.ply_cap:
            pos = game.position
            result = self.searcher.search(game, limits, None, self.stop)
            if result.best is None:
                break
            if not pos.is_capture_pending():
                score = clamp_score(int(result.score))
                rec.black.append(pos.black)
                rec.white.append(pos.white)
                rec.kings.append(pos.kings)
                rec.stm.append(pos.turn)
                rec.score.append(score)
                rec.ply.append(len(game.moves))
            game.push(result.best)
            status = game.status()
        if status == GameStatus.BLACK_WINS:
            rec.result = RESULT_WIN
        elif status == GameStatus.WHITE_WINS:
            rec.result = RESULT_LOSS
        else:
            rec.result = RESULT_DRAW
        rec.plies = len(game.moves)
        return rec


def clamp_score(score: int) -> int:
    """A search score as shards store it: mates as +-SCORE_CLAMP, everything within +-SCORE_CLAMP."""
    from ..search.alphabeta import MATE_BOUND
    if abs(score) > MATE_BOUND:
        return SCORE_CLAMP if score > 0 else -SCORE_CLAMP
    return max(-SCORE_CLAMP, min(SCORE_CLAMP, score))


_WORKER: Optional[_Player] = None


def _play_shard(config: SelfPlayConfig, shard: int, shard_size: int, out_dir: str,
                parent: Optional[int] = None) -> tuple[int, int, int]:
    """Play the games of one shard and write it; returns (shard, games, positions).

    ``parent``: the pid of the process that asked (a local worker checks it between games, so a
    killed ``selfplay`` does not leave its workers playing on)."""
    global _WORKER
    if _WORKER is None or _WORKER.config != config:
        _WORKER = _Player(config)
    enter_worker(parent)
    games = []
    for i in range(shard * shard_size, (shard + 1) * shard_size):
        check_parent(parent, "selfplay")
        games.append(_WORKER.play(i))
    positions = write_shard(Path(out_dir), shard, shard_size, config, games, _WORKER.identity)
    return shard, len(games), positions


def shard_path(out_dir: Path, shard: int) -> Path:
    return out_dir / f"shard-{shard:05d}.npz"


def write_shard(out_dir: Path, shard: int, shard_size: int, config: SelfPlayConfig,
                games: list[GameRecord], identity: dict[str, str]) -> int:
    """Write one shard atomically (temporary file, fsync, rename); returns its position count.
    ``identity``: the :func:`engine_identity` of the code that played, taken when that code was loaded."""
    cols: dict[str, list[int]] = {k: [] for k in ("black", "white", "kings", "stm", "score", "ply",
                                                  "result", "game")}
    for g, rec in enumerate(games):
        n = len(rec.black)
        for k in ("black", "white", "kings", "stm", "score", "ply"):
            cols[k] += getattr(rec, k)
        cols["result"] += [rec.result] * n
        cols["game"] += [shard * shard_size + g] * n
    arrays = {k: np.asarray(v, dtype=np.int64) for k, v in cols.items()}
    meta = {"format": SHARD_FORMAT, "shard": shard, "shard_size": shard_size, "config": asdict(config),
            "games": len(games), "positions": len(cols["black"]), "plies": [r.plies for r in games],
            "results": [r.result for r in games], "engine": identity}
    arrays["meta"] = np.frombuffer(json.dumps(meta, sort_keys=True).encode(), dtype=np.uint8)
    out_dir.mkdir(parents=True, exist_ok=True)
    with atomic_output(shard_path(out_dir, shard)) as f:
        np.savez_compressed(f, **arrays)
    return len(cols["black"])


def weights_argument(ap: ToolParser, value: Optional[str]) -> str:
    """A tool's ``--weights FILE`` checked and made absolute (the workers may start elsewhere); "" for none.
    An unusable file ends the tool with one line and exit 2."""
    if value is None:
        return ""
    from ..search.weights import WeightsError, read_weights

    try:
        return os.path.abspath(read_weights(value).path)
    except WeightsError as exc:
        ap.error(f"--weights: {exc}")


def engine_identity(weights_file: str = "") -> dict[str, str]:
    """The code and weights that played: the git commit (when in a checkout) and the checksum of the weights
    (``weights_file``, or the shipped ones)."""
    ident = {}
    root = Path(__file__).resolve().parents[2]
    try:
        out = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                             timeout=5)
        if out.returncode == 0:
            ident["commit"] = out.stdout.strip()
            dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                                   capture_output=True, text=True, timeout=5)
            ident["dirty"] = "yes" if dirty.stdout.strip() else "no"
    except (OSError, subprocess.TimeoutExpired):
        pass
    try:
        from ..search.weights import default_weights, read_weights
        ident["weights"] = (read_weights(weights_file) if weights_file else default_weights()).checksum
    except Exception as exc:      # noqa: BLE001 - identity is informative only
        ident["weights"] = f"unavailable: {exc}"
    from .. import __version__
    ident["version"] = __version__
    return ident


def _progress(done_games: int, total_games: int, positions: int, t0: float, bar: Progress) -> None:
    el = max(1e-9, time.monotonic() - t0)
    bar.update(f"{done_games}/{total_games} games {positions} positions {done_games / el:.2f} games/s",
               done_games / max(1, total_games))


def generate(out_dir: Path, games: int, config: SelfPlayConfig, jobs: int = 1, shard_size: int = 20,
             backend: str = "local", address: Optional[str] = None, progress: Optional[TextIO] = sys.stderr
             ) -> dict:
    """Play ``games`` games into ``out_dir`` (skipping finished shards); returns a summary dict.

    ``jobs`` processes play shards at once (``backend="ray"``: one Ray task per shard).  Progress goes to
    ``progress`` (None: none): a live bar on a terminal, a line every half minute otherwise.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    shards = (games + shard_size - 1) // shard_size
    todo = [s for s in range(shards) if not shard_path(out_dir, s).exists()]
    done_games = (shards - len(todo)) * shard_size
    positions = 0
    t0 = time.monotonic()
    bar = Progress(progress, "selfplay")
    _progress(done_games, shards * shard_size, positions, t0, bar)
    if backend == "ray":
        import ray

        connect_ray(address)
        task = ray.remote(_play_shard)
        pending = [task.remote(config, s, shard_size, str(out_dir)) for s in todo]
        while pending:
            ready, pending = ray.wait(pending, num_returns=1)
            _, g, p = ray.get(ready[0])
            done_games += g
            positions += p
            _progress(done_games, shards * shard_size, positions, t0, bar)
    elif jobs <= 1:
        for s in todo:
            _, g, p = _play_shard(config, s, shard_size, str(out_dir))
            done_games += g
            positions += p
            _progress(done_games, shards * shard_size, positions, t0, bar)
    else:
        def finished(outcome: tuple[int, int, int]) -> None:
            nonlocal done_games, positions
            done_games += outcome[1]
            positions += outcome[2]
            _progress(done_games, shards * shard_size, positions, t0, bar)

        run_in_processes(_play_shard, [(config, s, shard_size, str(out_dir)) for s in todo], jobs, finished,
                         in_flight=2 * jobs)
    bar.close()
    return {"games": shards * shard_size, "new_positions": positions, "seconds": time.monotonic() - t0,
            "out": str(out_dir)}


def main(argv: Optional[list[str]] = None) -> int:
    ap = ToolParser(prog="uci-checkers selfplay", description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="directory of shard-NNNNN.npz files (created; resumed)")
    ap.add_argument("--games", type=int, default=1000, help="games in the whole run (default 1000)")
    ap.add_argument("--nodes", type=int, default=3000, help="nodes per move (default 3000)")
    ap.add_argument("--seed", type=int, default=1, help="fixes every game of the run (default 1)")
    ap.add_argument("--shard-size", type=int, default=20, help="games per shard file (default 20)")
    ap.add_argument("--jobs", type=int, default=1, help="processes playing at once (default 1)")
    ap.add_argument("--backend", choices=("local", "ray"), default="local")
    ap.add_argument("--address", default=None, help="Ray cluster address (with --backend ray)")
    ap.add_argument("--weights", metavar="FILE", default=None,
                    help="evaluation weights file the engine plays with (default: the shipped one; with "
                         "--backend ray it must exist at the same path on every worker)")
    args = ap.parse_args(argv)
    for name in ("games", "nodes", "shard_size", "jobs"):
        value = getattr(args, name)
        if not 1 <= value <= 10**9:
            ap.error(f"--{name.replace('_', '-')} must be between 1 and 1000000000, not {value}")
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        ap.error(f"--out {out} exists and is not a directory")
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / ".write-test"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        ap.error(f"--out {out}: cannot write there ({exc.strerror})")
    if args.backend == "ray":
        try:
            import ray  # noqa: F401
        except ImportError:
            print("uci-checkers selfplay: --backend ray needs Ray (pip install 'uci_checkers[cluster]')",
                  file=sys.stderr)
            return EXIT_USAGE
    config = SelfPlayConfig(seed=args.seed, nodes=args.nodes, weights=weights_argument(ap, args.weights))
    try:
        summary = generate(out, args.games, config, args.jobs, args.shard_size, args.backend, args.address)
    except KeyboardInterrupt:
        print("\nuci-checkers selfplay: interrupted; finished shards are kept (run again to continue)",
              file=sys.stderr)
        return EXIT_INTERRUPTED
    except RayConnectError as exc:
        print(f"uci-checkers selfplay: {exc}", file=sys.stderr)
        return EXIT_USAGE
    print(json.dumps(summary))
    return EXIT_OK
