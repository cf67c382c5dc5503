"""``uci-checkers tune``: the search's tunable constants fitted by SPSA from game pairs at fixed nodes.

SPSA (simultaneous perturbation stochastic approximation), as fishtest runs it for Stockfish: at pair
``k`` every chosen constant ``i`` is moved by ``+-c_k[i]`` (the signs ``delta`` drawn at random); the
engine with the plus values plays the engine with the minus values twice from one ACF ballot, once
with each colour; the result ``r`` (plus's wins minus its losses, -2..2) moves the running values by
``a_k[i] / c_k[i] * r * delta[i]``.  The gains follow fishtest's schedule: ``c_k = c / k**0.101``,
``a_k = a / (A + k)**0.602``, ``A`` a tenth of the pairs, chosen so that the last pair perturbs by
the constant's ``step`` (:data:`uci_checkers.search.params.TUNABLES`) and moves by ``r_end * step**2``
per unit of result.

Both engines run in the worker process (no protocol between them): one thread each, a table cleared
before every game, the shipped evaluation (or ``--weights``), ``--nodes`` nodes a move.  Pairs are
played in batches of ``--batch`` from the values at the batch's start and applied in pair order, so
a run is fixed by its settings and seed whatever ``--jobs`` is.  After each batch the state
(settings, pairs done, values, the plus side's results and a history row) is rewritten atomically to
``OUT/tune.json``, with the identity of the code and weights that played; the same command continues
an interrupted run (Ctrl-C keeps the finished batches and exits 130).

The result is the text of the engine's ``SearchParams`` option: try it with a match
(``uci-checkers match ... option.SearchParams="..."``) before it becomes the defaults.
"""
from __future__ import annotations

import contextlib
import json
import math
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Optional, TextIO

import numpy as np

from ..search import params as sp
from ..util.atomicfile import write_text_atomic
from ..util.commandline import ToolParser, os_error_text
from ..util.exitcodes import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE
from ..util.progress import Progress
from ..util.workpool import WorkerPool, check_parent, enter_worker
from .selfplay import engine_identity, weights_argument

STATE_FORMAT = 1
STATE_NAME = "tune.json"
ALPHA, GAMMA, A_FRACTION = 0.602, 0.101, 0.1     # fishtest's SPSA schedule
PLY_CAP = 300                                    # a game still going after this many plies is a draw


class TuneStateError(RuntimeError):
    """The state file cannot be read, or belongs to a run with other settings."""


@dataclass(frozen=True)
class TuneConfig:
    """Everything that fixes a run."""

    names: tuple[str, ...]
    pairs: int
    nodes: int = 20000
    seed: int = 1
    batch: int = 8
    r_end: float = 0.002
    hash_mb: int = 8
    no_progress_plies: int = 80
    weights: str = ""


@dataclass
class TuneState:
    config: TuneConfig
    pairs_done: int = 0
    theta: list[float] = field(default_factory=list)
    plus_wins: int = 0
    draws: int = 0
    plus_losses: int = 0
    history: list[list] = field(default_factory=list)     # [pairs done, seconds, values rounded]
    engine: dict[str, str] = field(default_factory=dict)  # the code and weights that played (selfplay's identity)


# --- the schedule ----------------------------------------------------------------------------------
def gains(config: TuneConfig, k: int) -> tuple[np.ndarray, np.ndarray]:
    """``(c_k, a_k)`` per chosen constant at pair ``k`` (1-based)."""
    n = config.pairs
    c_end = np.array([sp.TUNABLES[sp.BY_NAME[name.lower()]].step for name in config.names])
    big_a = A_FRACTION * n
    c = c_end * n ** GAMMA
    a = config.r_end * c_end ** 2 * (big_a + n) ** ALPHA
    return c / k ** GAMMA, a / (big_a + k) ** ALPHA


def perturbation(config: TuneConfig, k: int) -> tuple[np.ndarray, int]:
    """The signs ``delta`` (+-1 per constant) and the ballot index of pair ``k``."""
    rng = np.random.default_rng([config.seed & 0xFFFFFFFF, k & 0xFFFFFFFF, 0x5B5A])
    delta = rng.integers(0, 2, size=len(config.names)) * 2 - 1
    return delta, int(rng.integers(1 << 30))


def bounds(config: TuneConfig) -> tuple[np.ndarray, np.ndarray]:
    ts = [sp.TUNABLES[sp.BY_NAME[name.lower()]] for name in config.names]
    return np.array([t.low for t in ts], dtype=float), np.array([t.high for t in ts], dtype=float)


def side_values(config: TuneConfig, theta: np.ndarray, k: int) -> tuple[dict[str, int], dict[str, int], np.ndarray]:
    """The plus and the minus engine's values at pair ``k`` from the running ``theta``, and the signs."""
    delta, _ = perturbation(config, k)
    c_k, _ = gains(config, k)
    low, high = bounds(config)
    plus = np.clip(np.rint(theta + c_k * delta), low, high).astype(int)
    minus = np.clip(np.rint(theta - c_k * delta), low, high).astype(int)
    return (dict(zip(config.names, map(int, plus))), dict(zip(config.names, map(int, minus))), delta)


def update(config: TuneConfig, theta: np.ndarray, k: int, result: int) -> np.ndarray:
    """``theta`` after pair ``k`` ended ``result`` (plus's wins minus losses), within the bounds."""
    delta, _ = perturbation(config, k)
    c_k, a_k = gains(config, k)
    low, high = bounds(config)
    return np.clip(theta + a_k / c_k * result * delta, low, high)


# --- the games (in a worker process) ---------------------------------------------------------------
class _Players:
    """Two searchers kept between pairs (compiled and allocated once per process)."""

    def __init__(self, config: TuneConfig) -> None:
        from ..arena.openings import ballots
        from ..search.alphabeta import Searcher
        from ..search.weights import load_weights

        weights = load_weights(config.weights) if config.weights else None
        self.config = config
        self.plus = Searcher(config.hash_mb, weights)
        self.minus = Searcher(config.hash_mb, weights)
        self.stop = np.zeros(1, dtype=np.int64)
        self.deck = ballots()

    def game(self, opening, black, white) -> int:
        """Black's result: 1 won, 0 drawn, -1 lost."""
        from ..rules.position import GameStatus
        from ..search.alphabeta import SearchLimits

        game = opening.game(self.config.no_progress_plies)
        for s in (black, white):
            s.clear()
        limits = SearchLimits(nodes=self.config.nodes)
        status = game.status()
        while not status.is_over and len(game.moves) < PLY_CAP:
            mover = black if game.position.turn == 0 else white
            result = mover.search(game, limits, None, self.stop)
            if result.best is None:
                break
            game.push(result.best)
            status = game.status()
        if status == GameStatus.BLACK_WINS:
            return 1
        if status == GameStatus.WHITE_WINS:
            return -1
        return 0


_WORKER: Optional[_Players] = None


def play_pair(config: TuneConfig, k: int, plus: dict[str, int], minus: dict[str, int],
              parent: Optional[int] = None) -> tuple[int, int, int]:
    """Pair ``k``: ``(k, game 1, game 2)``, each the plus side's result (1, 0, -1); plus is Black first."""
    global _WORKER
    if _WORKER is None or _WORKER.config != config:
        _WORKER = _Players(config)
    enter_worker(parent)
    p = _WORKER
    opening = p.deck[perturbation(config, k)[1] % len(p.deck)]
    p.plus.set_params(plus)
    p.minus.set_params(minus)
    first = p.game(opening, p.plus, p.minus)
    check_parent(parent, "tune")
    second = -p.game(opening, p.minus, p.plus)
    return k, first, second


# --- the run ---------------------------------------------------------------------------------------
def load_state(path: Path, config: TuneConfig) -> TuneState:
    """The state at ``path`` (a new one when missing); TuneStateError if it is another run's."""
    start = [float(sp.TUNABLES[sp.BY_NAME[n.lower()]].default) for n in config.names]
    if not path.exists():
        return TuneState(config, 0, start)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        saved = data["config"]
        saved["names"] = tuple(saved["names"])
        if data.get("format") != STATE_FORMAT:
            raise TuneStateError(f"{path}: state format {data.get('format')!r}, this version reads {STATE_FORMAT}")
        if TuneConfig(**saved) != config:
            diff = [k for k, v in asdict(config).items() if saved.get(k) != v]
            raise TuneStateError(f"{path} holds a run with other settings ({', '.join(diff)}); "
                                 f"use the same settings to continue it, or another --out")
        state = TuneState(config, int(data["pairs_done"]), [float(x) for x in data["theta"]],
                          int(data["plus_wins"]), int(data["draws"]), int(data["plus_losses"]),
                          list(data["history"]), dict(data.get("engine", {})))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise TuneStateError(f"{path}: cannot read the tuning state ({exc})") from None
    if len(state.theta) != len(config.names):
        raise TuneStateError(f"{path}: {len(state.theta)} values for {len(config.names)} constants")
    return state


def save_state(path: Path, state: TuneState) -> None:
    data = {"format": STATE_FORMAT, "config": asdict(state.config), "pairs_done": state.pairs_done,
            "theta": state.theta, "plus_wins": state.plus_wins, "draws": state.draws,
            "plus_losses": state.plus_losses, "values": rounded(state), "search_params": search_params_text(state),
            "engine": state.engine, "history": state.history}
    write_text_atomic(path, json.dumps(data, indent=1) + "\n")


def rounded(state: TuneState) -> dict[str, int]:
    return {name: int(round(v)) for name, v in zip(state.config.names, state.theta)}


def search_params_text(state: TuneState) -> str:
    """The ``SearchParams`` option text of the running values (only those that differ from the defaults)."""
    return sp.format_values(rounded(state))


def run(out_dir: Path, config: TuneConfig, jobs: int = 1, progress: Optional[TextIO] = sys.stderr) -> TuneState:
    """Play the pairs still to play (batch by batch, saving the state after each); returns the state."""
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / STATE_NAME
    state = load_state(path, config)
    if not state.engine:
        state.engine = engine_identity(config.weights)
    elif state.pairs_done < config.pairs and engine_identity(config.weights) != state.engine:
        print(f"uci-checkers tune: note: {path} was started by another checkout or weights "
              f"({state.engine}); going on with this one", file=progress or sys.stderr)
    bar = Progress(progress, "tune")
    with contextlib.ExitStack() as stack:
        pool = stack.enter_context(WorkerPool(jobs)) if jobs > 1 and state.pairs_done < config.pairs else None
        _play_batches(path, state, pool, bar)
    bar.close()
    return state


def _play_batches(path: Path, state: TuneState, pool: Optional[WorkerPool], bar: Progress) -> None:
    config = state.config
    t0 = time.monotonic()
    spent = state.history[-1][1] if state.history else 0.0
    while state.pairs_done < config.pairs:
        t_batch = time.monotonic()
        first = state.pairs_done + 1
        last = min(config.pairs, state.pairs_done + config.batch)
        theta = np.array(state.theta)
        work = []
        for k in range(first, last + 1):
            plus, minus, _ = side_values(config, theta, k)
            work.append((config, k, plus, minus))
        results: dict[int, tuple[int, int]] = {}

        def finished(outcome: tuple[int, int, int]) -> None:
            results[outcome[0]] = (outcome[1], outcome[2])

        if pool is None:
            for item in work:
                finished(play_pair(*item))
        else:
            pool.run(play_pair, work, finished)
        for k in range(first, last + 1):
            g1, g2 = results[k]
            theta = update(config, theta, k, g1 + g2)
            for g in (g1, g2):
                state.plus_wins += g > 0
                state.draws += g == 0
                state.plus_losses += g < 0
        state.theta = [float(x) for x in theta]
        state.pairs_done = last
        seconds = round(spent + time.monotonic() - t0, 1)
        state.history.append([last, seconds, list(rounded(state).values())])
        save_state(path, state)
        rate = 2 * (last - first + 1) / max(1e-9, time.monotonic() - t_batch)
        bar.update(f"{state.pairs_done}/{config.pairs} pairs {rate:.2f} games/s  "
                   f"{search_params_text(state) or '(the defaults)'}", state.pairs_done / config.pairs)


def describe_tunables() -> str:
    rows = [f"{'name':<16} {'default':>7} {'low':>5} {'high':>5} {'step':>5}  meaning"]
    rows += [f"{t.name:<16} {t.default:>7} {t.low:>5} {t.high:>5} {t.step:>5g}  {t.help}" for t in sp.TUNABLES]
    return "\n".join(rows)


def main(argv: Optional[list[str]] = None) -> int:
    ap = ToolParser(prog="uci-checkers tune", description=__doc__.split("\n\n")[0])
    ap.add_argument("--list", action="store_true", help="list the tunable constants and exit")
    ap.add_argument("--out", help="directory of the run's state file tune.json (created; resumed)")
    ap.add_argument("--games", type=int, default=4000, help="games in the whole run, two a pair (default 4000)")
    ap.add_argument("--nodes", type=int, default=20000, help="nodes per move (default 20000)")
    ap.add_argument("--params", default="", help="comma-separated names to tune (default: all; see --list)")
    ap.add_argument("--seed", type=int, default=1, help="fixes the perturbations and openings (default 1)")
    ap.add_argument("--batch", type=int, default=8, help="pairs played from the same values (default 8)")
    ap.add_argument("--r-end", type=float, default=0.002,
                    help="learning rate at the end of the run, fishtest's r_end (default 0.002)")
    ap.add_argument("--jobs", type=int, default=1, help="processes playing at once (default 1)")
    ap.add_argument("--weights", metavar="FILE", default=None, help="evaluation weights (default: the shipped ones)")
    args = ap.parse_or_status(argv)
    if isinstance(args, int):
        return args
    if args.list:
        print(describe_tunables())
        return EXIT_OK
    if not args.out:
        ap.error("--out DIR is needed (or --list)")
    for name in ("games", "nodes", "batch", "jobs"):
        value = getattr(args, name)
        if not 1 <= value <= 10**9:
            ap.error(f"--{name} must be between 1 and 1000000000, not {value}")
    if args.games < 2:
        ap.error("--games must be at least 2 (one pair)")
    if not (0.0 < args.r_end < 10.0) or math.isnan(args.r_end):
        ap.error(f"--r-end must be above 0 and below 10, not {args.r_end}")
    names = [n.strip() for n in args.params.split(",") if n.strip()] or [t.name for t in sp.TUNABLES]
    unknown = [n for n in names if n.lower() not in sp.BY_NAME]
    if unknown:
        ap.error(f"--params: unknown search parameter {unknown[0][:40]!r} (see --list)")
    names = [sp.TUNABLES[sp.BY_NAME[n.lower()]].name for n in names]
    if len(set(names)) != len(names):
        ap.error("--params names a constant twice")
    weights = weights_argument(ap, args.weights)
    out = Path(args.out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        ap.error(f"--out: {os_error_text(exc)}")
    config = TuneConfig(tuple(names), args.games // 2, args.nodes, args.seed, args.batch, args.r_end,
                        weights=weights)
    try:
        state = run(out, config, args.jobs)
    except TuneStateError as exc:
        print(f"uci-checkers tune: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except OSError as exc:
        print(f"uci-checkers tune: {os_error_text(exc)}", file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:
        print("\nuci-checkers tune: interrupted; the finished batches are kept (run again to continue)",
              file=sys.stderr)
        return EXIT_INTERRUPTED
    print(json.dumps({"pairs": state.pairs_done, "plus": [state.plus_wins, state.draws, state.plus_losses],
                      "values": rounded(state), "search_params": search_params_text(state)}))
    return EXIT_OK

