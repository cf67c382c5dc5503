"""The engine facade: game, options, searcher, worker thread and time manager.

Protocol front ends (:mod:`uci_checkers.protocol` for protocol.md, the Hub
front end) turn text into calls on :class:`Engine` and format what it reports;
the facade itself never prints.

Start-up latency
----------------
Importing this module imports neither numba nor numpy: the rules core and the
search are imported lazily, in a background warm-up thread
(:meth:`Engine.start_warmup`) or on first use.  A front end can therefore answer
``uci`` before any kernel is loaded or compiled.

Threads
-------
* the caller (the protocol's command thread) calls ``go``/``stop``/... and never
  blocks on a search;
* one worker thread per ``go`` (or ``go perft``/``bench``) runs the search; it
  first waits for the warm-up, so ``go`` may arrive before kernels are ready;
* a deadline thread per timed search raises the stop flag at the hard limit;
* the warm-up thread imports and compiles the kernels once per process.

The stop flag is an int64 numpy array shared with the search kernels (which are
``nogil`` and poll it), so ``stop`` takes effect within milliseconds.
"""
from __future__ import annotations

import inspect
import os
import re
import signal
import subprocess
import sys
import threading
import time
import traceback
from pathlib import Path
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Optional

if TYPE_CHECKING:  # pragma: no cover - typing only; the real imports are lazy
    from .position import Game, Move, Position
    from .search import SearchInfo, SearchLimits, SearchResult, Searcher

__all__ = ["Engine", "GoParams", "OptionSpec", "OptionError", "EngineBusyError", "TimeManager", "LagTracker",
           "DEFAULT_MOVE_OVERHEAD_MS", "GO_NUMBER_BOUNDS", "clamp_go_number", "warm_up_kernels",
           "kernels_ready", "kernels_compiling", "rules_ready", "add_warmup_listener",
           "stop_warmup_children"]

# What a local pipe needs: the deadline thread's wake-up, the kernel's stop poll, the bestmove line
# and the host reading it (measured; see DEFAULT_MOVE_OVERHEAD_MS in protocol.md).
DEFAULT_MOVE_OVERHEAD_MS = 10
DEFAULT_MOVES_TO_GO = 30        # horizon assumed for sudden-death clocks (no movestogo)
EGDB_MAX_PIECES = 8             # uci_checkers.egdb.build.MAX_BUILD_PIECES (not imported: it loads numpy)

# Every number of a go (protocol.md) or a Hub level is clamped into these bounds when it is parsed,
# so no later arithmetic (a deadline, a node limit in an int64 word) can overflow.
MAX_TIME_MS = 10 ** 9           # about 11.6 days: any longer clock means "no practical limit"
MAX_NODES = 10 ** 15
MAX_DEPTH = 1000
GO_NUMBER_BOUNDS: dict[str, tuple[int, int]] = {
    "wtime": (0, MAX_TIME_MS), "btime": (0, MAX_TIME_MS), "winc": (0, MAX_TIME_MS),
    "binc": (0, MAX_TIME_MS), "movetime": (0, MAX_TIME_MS), "movestogo": (1, 10_000),
    "depth": (1, MAX_DEPTH), "nodes": (1, MAX_NODES), "mate": (1, MAX_DEPTH),
}
STOP_WAIT_S = 10.0              # longest a go/isready waits for a stopped search to hand in its bestmove
_ASCII_INT = re.compile(r"[+-]?[0-9]+")


def clamp_go_number(key: str, value: float) -> int:
    """``value`` of the go parameter ``key`` as an int inside ``GO_NUMBER_BOUNDS[key]``."""
    low, high = GO_NUMBER_BOUNDS[key]
    if value != value:  # NaN
        return low
    if value >= high:
        return high
    if value <= low:
        return low
    return int(value)


class OptionError(ValueError):
    """An unknown option, or a value the option does not accept (the message says which and why)."""


class EngineBusyError(RuntimeError):
    """A request that needs an idle engine (``go`` while a search runs, ...)."""


# --------------------------------------------------------------------------------------------------
# Options
# --------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class OptionSpec:
    """One engine option as ``uci`` announces it."""

    name: str
    type: str                       # spin, check, combo, button, string
    default: Any = None
    min: Optional[int] = None
    max: Optional[int] = None
    vars: tuple[str, ...] = ()
    help: str = ""

    def parse(self, value: Optional[str]) -> Any:
        """The typed value for ``value`` text; raises :class:`OptionError`."""
        if self.type == "button":
            return None
        if value is None or (self.type != "string" and not value.strip()):
            raise OptionError(f"option {self.name} needs a value")
        text = value.strip()
        if self.type == "spin":
            if not _ASCII_INT.fullmatch(text):      # ASCII digits only: no '1_000', no Arabic-Indic digits
                raise OptionError(f"option {self.name} needs a whole number, not {text[:40]!r}")
            digits = text.lstrip("+-").lstrip("0")
            if len(digits) > 30:                     # far out of range (and int() of 4,300+ digits raises)
                raise OptionError(f"option {self.name} value {text[:40]}... is out of range {self.min}..{self.max}")
            number = int(text, 10)
            if not (self.min <= number <= self.max):
                raise OptionError(f"option {self.name} value {number} is out of range {self.min}..{self.max}")
            return number
        if self.type == "check":
            low = text.lower()
            if low not in ("true", "false"):
                raise OptionError(f"option {self.name} needs true or false, not {text[:40]!r}")
            return low == "true"
        if self.type == "combo":
            for var in self.vars:
                if var.lower() == text.lower():
                    return var
            raise OptionError(f"option {self.name} needs one of {', '.join(self.vars)}, not {text[:40]!r}")
        return value  # string: kept verbatim


# search.MAX_THREADS, repeated here because importing search loads numba, which must not
# happen before `uci` is answered.
_SEARCH_MAX_THREADS = 64


def _build_option_specs() -> list[OptionSpec]:
    specs = [
        OptionSpec("Hash", "spin", 16, 1, 4096, help="transposition table size in MB"),
        OptionSpec("Clear Hash", "button", help="forget everything the search has learnt"),
        OptionSpec("Ponder", "check", False, help="the host may send go ponder (informational)"),
        OptionSpec("MultiPV", "spin", 1, 1, 64, help="number of best lines reported"),
        OptionSpec("Skill Level", "spin", 20, 0, 20, help="0 = random legal move ... 20 = full strength"),
        OptionSpec("Seed", "spin", 0, 0, 2**31 - 1, help="makes skill-level choices reproducible"),
        OptionSpec("Move Overhead", "spin", DEFAULT_MOVE_OVERHEAD_MS, 0, 10000,
                   help="ms kept back from the clock per move for communication delays"),
        OptionSpec("NoProgressPlies", "spin", 80, 0, 1000,
                   help="plies without a capture or man move that draw the game; 0 = rule off"),
        OptionSpec("UCI_AnalyseMode", "check", False, help="the host is analysing, not playing"),
        OptionSpec("EGDB Path", "string", "", help="endgame database directory (uci-checkers egdb build); "
                   "empty: the standard cache directory, used when present"),
        OptionSpec("EGDB Pieces", "spin", EGDB_MAX_PIECES, 0, EGDB_MAX_PIECES,
                   help="probe endgame databases up to this many pieces; 0 = off"),
    ]
    specs.insert(1, OptionSpec("Threads", "spin", 1, 1, max(1, min(_SEARCH_MAX_THREADS, (os.cpu_count() or 1) * 2)),
                               help="search threads (lazy SMP); 1 keeps fixed-depth searches deterministic"))
    return specs


# --------------------------------------------------------------------------------------------------
# Kernel warm-up (once per process)
# --------------------------------------------------------------------------------------------------
_WARM_LOCK = threading.Lock()
_WARM_DONE = threading.Event()
_RULES_DONE = threading.Event()     # the Position layer's kernels are usable (set before the search's)
_COMPILING = threading.Event()      # the kernels were not in the compile cache: compiling (seconds)
_WARM_ERROR: list[BaseException] = []
_WARM_THREAD: Optional[threading.Thread] = None
_WARM_LISTENERS: list[Callable[[str], None]] = []
_LISTENER_LOCK = threading.Lock()   # not _WARM_LOCK: that one is held for the whole warm-up


def add_warmup_listener(callback: Callable[[str], None]) -> None:
    """``callback(stage)`` is called with ``"compiling"`` when the kernels are not in the compile
    cache and must be compiled (seconds), and with ``"ready"`` when the warm-up ends (at once if
    it already has; also when it failed: the engine then reports the error).

    A listener added while the compilation already runs is told ``"compiling"`` at once.
    One-shot tools use it to tell their user why nothing happens yet, e.g.
    ``add_warmup_listener(lambda stage: stage == "compiling" and print("compiling ...", file=sys.stderr))``.
    """
    with _LISTENER_LOCK:
        if not _WARM_DONE.is_set():
            _WARM_LISTENERS.append(callback)
            compiling = _COMPILING.is_set()
        else:
            compiling = None
    if compiling:
        callback("compiling")
    elif compiling is None:
        callback("ready")


def _enter_stage(stage: str) -> None:
    """Record the warm-up's new stage (``compiling``: _COMPILING, ``ready``: _WARM_DONE) and tell the
    listeners; under one lock with :func:`add_warmup_listener`, so each hears every stage once."""
    with _LISTENER_LOCK:
        (_COMPILING if stage == "compiling" else _WARM_DONE).set()
        listeners = list(_WARM_LISTENERS)
        if stage == "ready":
            _WARM_LISTENERS.clear()
    for callback in listeners:
        try:
            callback(stage)
        except Exception:  # a listener's fault must not stop the warm-up
            pass


def _kernels_cached() -> bool:
    """True when the search kernels will load from the compile cache (no compilation needed)."""
    import importlib

    try:
        # imported by name: the engine reads the cache's state but compiles nothing itself, so it
        # must not count as a kernel module (those key the cache: see _jit.kernel_sources)
        jit = importlib.import_module(f"{__package__}._jit")
        return bool(jit.has_cached_kernels("search"))
    except (ImportError, OSError):
        return False


# The search kernels are compiled in a child process while this one compiles the evaluation and the
# rules layer: two cores instead of one on a cold start.  The child only fills the shared compile
# cache.
CHILD_COMPILE_TIMEOUT_S = 600.0
_CHILD_CODE = f"from {__package__}.search import Searcher; Searcher(1).warm_up()"
_WARM_CHILDREN: list[subprocess.Popen] = []


def _start_search_compile_child() -> Optional[subprocess.Popen]:
    """A child process (own process group) compiling the search kernels into the compile cache."""
    package_root = str(Path(__file__).resolve().parent.parent)
    env = dict(os.environ)
    env["PYTHONPATH"] = package_root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    try:
        child = subprocess.Popen([sys.executable, "-c", _CHILD_CODE], cwd=package_root, env=env,
                                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL, start_new_session=True)
    except OSError:
        return None
    _WARM_CHILDREN.append(child)
    return child


def stop_warmup_children() -> None:
    """Kill a compile child still running (its process group); for the process's exit path."""
    for child in list(_WARM_CHILDREN):
        if child.poll() is None:
            try:
                os.killpg(child.pid, signal.SIGKILL)
            except OSError:
                pass
            try:
                child.wait(1.0)
            except subprocess.TimeoutExpired:
                pass
    _WARM_CHILDREN.clear()


def _wait_for_child(child: Optional[subprocess.Popen]) -> None:
    """Let the compile child finish (it fills the cache the search import then loads from)."""
    if child is None:
        return
    try:
        child.wait(CHILD_COMPILE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        pass
    stop_warmup_children()   # whatever it did not finish is compiled here


def warm_up_kernels() -> None:
    """Import the rules core and the search and compile (or load) their kernels; idempotent, blocking.

    The rules layer (``Position``, ``Game``) comes first and sets :func:`rules_ready`, so that
    ``position`` commands, legal-move lists and a fallback move are available while the
    search kernels are still compiling.  On a cold cache a child process compiles the search
    kernels meanwhile (see :func:`_start_search_compile_child`).
    """
    with _WARM_LOCK:
        if _WARM_DONE.is_set():
            return
        child = None
        try:
            if not _kernels_cached():
                _enter_stage("compiling")
                child = _start_search_compile_child()
            # The evaluation first: on a cold start the child compiles the endgame-table probe and
            # then the search, which links the evaluation this process has put in the cache by then.
            from . import evaluate  # noqa: F401  (compiles or loads its kernel on import)
            from .position import Game, Position

            # perft kernels are left out on purpose: they compile on the first go perft (in the worker)
            start = Position.start()
            first = start.legal_moves()[0]
            Position.from_fen(start.play(first).fen()).is_capture_pending()
            game = Game(start)
            game.push_text(str(first))
            game.status()
            game.history_keys()
            _RULES_DONE.set()
            _wait_for_child(child)
            from .search import Searcher

            Searcher(1).warm_up()
        except BaseException as exc:  # reported by ensure_ready / the worker, never raised here
            _WARM_ERROR.append(exc)
        finally:
            _RULES_DONE.set()
            _enter_stage("ready")


def start_kernel_warmup() -> None:
    """Start :func:`warm_up_kernels` in a daemon thread (once)."""
    global _WARM_THREAD
    with _WARM_LOCK:
        if _WARM_THREAD is not None or _WARM_DONE.is_set():
            return
        _WARM_THREAD = threading.Thread(target=warm_up_kernels, name="uci_checkers-warmup", daemon=True)
        _WARM_THREAD.start()


def kernels_compiling() -> bool:
    """The kernels are being compiled (not loaded from the cache) and are not ready yet."""
    return _COMPILING.is_set() and not _WARM_DONE.is_set()


def rules_ready() -> bool:
    """The Position layer's kernels are usable (the search's may still be compiling)."""
    return _RULES_DONE.is_set()


def kernels_ready() -> bool:
    return _WARM_DONE.is_set()


# --------------------------------------------------------------------------------------------------
# go parameters and the time manager
# --------------------------------------------------------------------------------------------------
@dataclass
class GoParams:
    """What ``go`` asked for; all optional; times in ms; ``b`` = Black = the first mover."""

    wtime: Optional[int] = None
    btime: Optional[int] = None
    winc: Optional[int] = None
    binc: Optional[int] = None
    movestogo: Optional[int] = None
    movetime: Optional[int] = None
    depth: Optional[int] = None
    nodes: Optional[int] = None
    mate: Optional[int] = None
    infinite: bool = False
    ponder: bool = False
    searchmoves: Optional[list[str]] = None
    start_time: Optional[float] = None   # time.monotonic() when the command arrived (default: go's call)


def phase_factor(pieces: int) -> float:
    """How much of the per-move share of the clock a position deserves, by the pieces on the board.

    The opening (22-24 pieces) is well trodden and cheap; the middle game (about 10-19 pieces)
    is where English checkers games are won and lost; simple endings need less again.
    """
    if pieces >= 22:
        return 0.7
    if pieces >= 20:
        return 1.0
    if pieces >= 10:
        return 1.3
    if pieces >= 6:
        return 1.1
    return 0.9


class TimeManager:
    """Optimum (soft) and maximum (hard) time for one move, and the decision to start another iteration.

    * ``movetime``: both limits are ``movetime - overhead``; iterations are never cut short, so
      the move comes about ``movetime`` after ``go`` arrived.
    * a clock (``wtime``/``btime`` for the side to move): ``optimum = left / movestogo + 3/4 inc``
      (``movestogo`` defaults to 30) scaled by the game phase (:func:`phase_factor`: more in the
      middle game, where games are decided, less in the opening), ``maximum = min(5 * optimum,
      80 % of what is left)`` (95 % with one move to the control), where *left* is the clock minus
      ``Move Overhead``: the hard limit never passes the clock minus the overhead.  After each
      iteration the soft target grows while the best move keeps changing and when the score
      falls (:meth:`iteration_done`).  One legal move: play at once.
    * no time given (depth, nodes, mate, infinite): no limit.

    ``lag_ms`` is how late the engine recently answered after a hard limit (see
    :class:`LagTracker`): on a loaded machine it is kept back as well, so that the move
    still arrives in time (for ``movetime`` at most half of the move's time is given up).

    The clock starts when ``go`` arrived (``start``), even when the kernels were still
    compiling then.  A ponder search has no limits until :meth:`ponderhit`, which restarts
    the clock at that moment.
    """

    def __init__(self, params: GoParams, turn: int, overhead_ms: int = DEFAULT_MOVE_OVERHEAD_MS,
                 legal_count: int = 2, start: Optional[float] = None, pieces: int = 24,
                 lag_ms: float = 0.0) -> None:
        self.start = start if start is not None else time.monotonic()
        self.overhead_ms = max(0, int(overhead_ms))
        self.lag_ms = max(0.0, float(lag_ms))
        self.pondering = bool(params.ponder)
        self.single_move = False
        self.optimum_ms: Optional[float] = None
        self.maximum_ms: Optional[float] = None
        self.fixed_time = False
        self._instability = 0.0
        self._last_score: Optional[int] = None
        self._iteration_ends: list[float] = []
        if params.infinite:
            return
        own_time = params.btime if turn == 0 else params.wtime
        own_inc = (params.binc if turn == 0 else params.winc) or 0
        if params.movetime is not None:
            self.fixed_time = True
            budget = float(max(0, params.movetime - self.overhead_ms))
            # a loaded machine answers late: keep the observed lag back too (at most half the move)
            self.optimum_ms = self.maximum_ms = budget - min(self.lag_ms, 0.5 * budget)
        elif own_time is not None:
            left = max(0.0, float(own_time - self.overhead_ms))
            mtg = max(1, params.movestogo) if params.movestogo else DEFAULT_MOVES_TO_GO
            optimum = (left / mtg + 0.75 * max(0, own_inc)) * phase_factor(pieces)
            cap = min(left * (0.95 if mtg == 1 else 0.8), max(0.0, left - self.lag_ms))
            maximum = min(cap, optimum * 5.0)
            self.optimum_ms = min(optimum, maximum)
            self.maximum_ms = maximum
            if legal_count == 1:
                self.single_move = True
                self.optimum_ms = 0.0
                self.maximum_ms = min(maximum, 100.0)

    @staticmethod
    def _proven_result(depth: int, score: int) -> bool:
        try:
            from .search import MATE, MATE_BOUND
        except ImportError:  # pragma: no cover
            return False
        return abs(score) > MATE_BOUND and depth >= MATE - abs(score) + 2

    # --- queries -----------------------------------------------------------------------------
    @property
    def limited(self) -> bool:
        return self.maximum_ms is not None

    def elapsed_ms(self) -> int:
        return int((time.monotonic() - self.start) * 1000)

    def deadline(self) -> Optional[float]:
        """The monotonic time of the hard limit, or None (no limit yet / none at all)."""
        if self.pondering or self.maximum_ms is None:
            return None
        return self.start + self.maximum_ms / 1000.0

    def ponderhit(self, now: Optional[float] = None) -> None:
        """The opponent played the expected move: the clock of this move starts now."""
        self.start = now if now is not None else time.monotonic()
        self.pondering = False
        self._iteration_ends = []

    def iteration_done(self, depth: int, best_changed: bool, score: int) -> bool:
        """Called by the search after each iteration; True = do not start another one."""
        now = (time.monotonic() - self.start) * 1000.0
        self._iteration_ends.append(now)
        score_drop = self._last_score is not None and score < self._last_score - 30
        self._last_score = score
        self._instability = self._instability * 0.5 + (1.0 if best_changed and depth > 1 else 0.0)
        if self.pondering or self.optimum_ms is None:
            return False
        if self.single_move:
            return True
        if self.fixed_time:
            return False  # movetime: search the time asked for; the deadline stops it
        if self._proven_result(depth, score):
            return True   # a forced win or loss is proven: more time changes nothing
        factor = (1.0 + 0.8 * self._instability) * (1.3 if score_drop else 1.0)
        target = min(self.optimum_ms * factor, self.maximum_ms)
        if now >= target:
            return True
        ends = self._iteration_ends
        last = ends[-1] - (ends[-2] if len(ends) > 1 else 0.0)
        before = (ends[-2] - ends[-3]) if len(ends) > 2 else (ends[-2] if len(ends) > 1 else 0.0)
        ratio = min(4.0, max(1.5, last / before)) if before > 0.5 else 2.0
        predicted = last * ratio
        # the next iteration could not finish before the hard limit, or would overshoot the target
        if now + predicted > self.maximum_ms:
            return True
        return now > 0.5 * target and now + predicted > 1.5 * target


class LagTracker:
    """How late, recently, the engine's moves came after their hard time limit.

    On an idle machine a stopped search answers within a few milliseconds; on a loaded one
    the search thread may wait for a core for tens or hundreds of milliseconds.  A peak
    follower (the new value if larger, else a slow decay) remembers such delays for the
    next moves, so that the time manager keeps them back instead of losing on time.
    """

    DECAY = 0.97         # per timed move: a spike is remembered at half its size 23 moves later
    CAP_MS = 1000.0

    def __init__(self) -> None:
        self.lag_ms = 0.0
        self._lock = threading.Lock()

    def record(self, late_ms: float) -> None:
        with self._lock:
            self.lag_ms = min(self.CAP_MS, max(max(0.0, late_ms), self.lag_ms * self.DECAY))


# --------------------------------------------------------------------------------------------------
# The facade
# --------------------------------------------------------------------------------------------------
@dataclass
class _Job:
    """One running go (or perft/bench task)."""

    kind: str
    thread: Optional[threading.Thread] = None
    tm: Optional[TimeManager] = None
    limits: Any = None
    hold: bool = False                       # infinite/ponder: keep the result until stop/ponderhit
    ponder: bool = False
    infinite: bool = False
    released: threading.Event = field(default_factory=threading.Event)
    stop_requested: bool = False
    deadline_cv: threading.Condition = field(default_factory=threading.Condition)
    finished: bool = False
    done: threading.Event = field(default_factory=threading.Event)   # set after the result was reported


class Engine:
    """The engine: one game, one set of options, one search at a time.  Never prints."""

    name = "uci_checkers"
    author = "uci_checkers developers"

    def __init__(self) -> None:
        from . import __version__

        self.version = __version__
        self._specs = _build_option_specs()
        self._options: dict[str, Any] = {s.name: s.default for s in self._specs}
        self._lock = threading.RLock()
        self._game: Optional[Game] = None
        self._searcher: Optional[Searcher] = None
        self._stop_flag: Any = None                # int64 numpy array [1], created by the warm-up
        self._ready = threading.Event()
        self._warm_thread: Optional[threading.Thread] = None
        self._warm_error: Optional[BaseException] = None
        self._pending: dict[str, Any] = {}         # searcher changes not applied yet: hash, clear, threads, egdb
        self._egdb_messages: list[str] = []        # endgame database load reports, given to the next go
        self._job: Optional[_Job] = None
        self._game_seed: Optional[int] = None      # Seed 0: the fresh seed of this game, drawn at its first go
        self.lag = LagTracker()

    # --- options -------------------------------------------------------------------------------
    def option_specs(self) -> list[OptionSpec]:
        return list(self._specs)

    def _spec(self, name: str) -> OptionSpec:
        key = " ".join(name.split()).lower()
        for spec in self._specs:
            if spec.name.lower() == key:
                return spec
        raise OptionError(f"unknown option {name.strip()[:60]!r}")

    def set_option(self, name: str, value: Optional[str]) -> None:
        """Set an option (name case-insensitive); raises :class:`OptionError` and then changes nothing.

        Changes that touch the search tables (Hash, Clear Hash, Threads) are applied when the
        engine is idle: at once, or right after the running search reported its move, always
        before the next search and before the next ``readyok`` (:meth:`ensure_ready`).
        """
        spec = self._spec(name)
        parsed = spec.parse(value)
        with self._lock:
            if spec.type != "button":
                self._options[spec.name] = parsed
            if spec.name == "Hash":
                self._pending["hash"] = parsed
            elif spec.name == "Clear Hash":
                self._pending["clear"] = True
            elif spec.name == "Threads":
                self._pending["threads"] = parsed
            elif spec.name == "Seed":
                self._game_seed = None
            elif spec.name in ("EGDB Path", "EGDB Pieces"):
                self._pending["egdb"] = True
            elif spec.name == "NoProgressPlies" and self._game is not None:
                self._game.no_progress_plies = parsed
        self._apply_pending_if_idle()

    def get_option(self, name: str) -> Any:
        return self._options[self._spec(name).name]

    # --- readiness -----------------------------------------------------------------------------
    def start_warmup(self) -> None:
        """Load/compile the kernels and build the searcher in a background thread (non-blocking)."""
        with self._lock:
            if self._warm_thread is not None:
                return
            self._warm_thread = threading.Thread(target=self._warm, name="uci_checkers-engine-warmup",
                                                 daemon=True)
            self._warm_thread.start()

    def _warm(self) -> None:
        try:
            start_kernel_warmup()
            _WARM_DONE.wait()
            if _WARM_ERROR:
                raise _WARM_ERROR[0]
            import numpy as np

            from .search import Searcher

            # read outside the lock (a large database takes seconds); an EGDB option set meanwhile
            # leaves "egdb" pending, so the databases are read again with it
            read_with = self._egdb_settings()
            table, messages = self._read_egdb()
            with self._lock:  # built under the lock: a Hash change now is either used here or pending
                searcher = Searcher(self._options["Hash"])
                searcher.set_egdb(table)
                self._egdb_messages += messages
                if self._egdb_settings() == read_with:
                    self._pending.pop("egdb", None)
                self._searcher = searcher
                self._stop_flag = np.zeros(1, dtype=np.int64)
                self._pending.pop("hash", None)
                self._pending.pop("clear", None)
                self._pending.pop("newgame", None)
            self._apply_pending_if_idle()
        except BaseException as exc:
            self._warm_error = exc
        finally:
            self._ready.set()

    @property
    def ready(self) -> bool:
        """Kernels compiled and the searcher built (pending option changes may remain)."""
        return self._ready.is_set()

    @property
    def warmup_error(self) -> Optional[BaseException]:
        return self._warm_error

    def ensure_ready(self, timeout: Optional[float] = None,
                     abort: Optional[threading.Event] = None) -> bool:
        """Block until the kernels are ready and pending changes applied (when idle).

        Also maps a newly allocated hash table into memory, so that its cost is paid here
        (``isready``) and not by the next search.  Returns False on timeout or when ``abort``
        is set while waiting.  During a search it returns at once: pending changes are
        applied right after that search reported its move.
        """
        self.start_warmup()
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self._ready.wait(0.02):
            if abort is not None and abort.is_set():
                return False
            if deadline is not None and time.monotonic() >= deadline:
                return False
        with self._lock:
            if self._searcher is None or self.searching:
                return True
            self._apply_pending_locked()
            self._searcher.prefault()
        return True

    def _apply_pending_if_idle(self) -> None:
        with self._lock:
            if self._searcher is None or self.searching:
                return
            self._apply_pending_locked()

    def _apply_pending_locked(self) -> None:
        """Apply option changes to the searcher; cheap: new tables are allocated, never zeroed."""
        searcher = self._searcher
        if searcher is None:
            return
        pending, self._pending = self._pending, {}
        if "threads" in pending:
            searcher.set_threads(pending["threads"])
        if "hash" in pending:
            searcher.set_hash(pending["hash"])
        if pending.get("clear") or pending.get("newgame"):
            searcher.clear()
        if pending.get("egdb"):
            searcher.set_egdb(None)                # the old table is freed before the new one is read
            table, messages = self._read_egdb()
            searcher.set_egdb(table)
            self._egdb_messages += messages

    # --- endgame databases ---------------------------------------------------------------------
    def _egdb_settings(self) -> tuple[str, int]:
        return str(self._options["EGDB Path"]).strip(), int(self._options["EGDB Pieces"])

    def _read_egdb(self) -> tuple[Any, list[str]]:
        """The probe table the EGDB options name (None: none) and the messages for the next go."""
        from pathlib import Path

        from .egdb.store import default_directory, load_directory

        pieces = int(self._options["EGDB Pieces"])
        explicit = str(self._options["EGDB Path"]).strip()
        if pieces == 0:
            return None, []
        directory = Path(explicit) if explicit else default_directory()
        if not explicit and not directory.is_dir():
            return None, []   # nothing built in the standard place: nothing to say
        try:
            db = load_directory(directory, pieces)
        except (OSError, MemoryError) as exc:
            return None, [f"egdb: cannot load {directory}: {exc}; playing without endgame databases"]
        if db.problems:
            more = f" (and {len(db.problems) - 1} more)" if len(db.problems) > 1 else ""
            using = (f"using the databases up to {db.pieces} pieces" if db.pieces
                     else "playing without endgame databases")
            messages = [f"egdb: {db.problems[0]}{more}; {using}"]
        elif db.pieces:
            messages = [f"egdb: {len(db.slices)} slices up to {db.pieces} pieces from {directory}"]
        else:
            messages = [f"egdb: no endgame database files in {directory}"] if explicit else []
        return (db.table if db.pieces else None), messages

    def egdb_verdict(self) -> Optional[str]:
        """The endgame databases' verdict on the current position (None when they do not hold it)."""
        searcher = self._searcher
        if searcher is None or not searcher.egdb[1]:
            return None
        from .egdb.probe import NOT_FOUND, describe, probe_position

        pos = self.game.position
        code = probe_position(searcher.egdb, pos.black, pos.white, pos.kings, pos.turn)
        return None if code == NOT_FOUND else f"{describe(code)} for {pos.side_name} (database)"

    # --- game ----------------------------------------------------------------------------------
    @property
    def game(self) -> Game:
        """The current game (start position plus moves)."""
        with self._lock:
            if self._game is None:
                from .position import Game

                self._game = Game(None, self._options["NoProgressPlies"])
            return self._game

    @game.setter
    def game(self, value: Game) -> None:
        with self._lock:
            self._game = value

    def new_game(self) -> None:
        """Forget the game and everything learnt (new tables right after a running search reports)."""
        from .position import Game

        with self._lock:
            self._game = Game(None, self._options["NoProgressPlies"])
            self._pending["newgame"] = True
            self._game_seed = None
        self._apply_pending_if_idle()

    def set_position(self, start: Position, moves: list[str]) -> None:
        """Replace the game by ``start`` plus ``moves``; on any error the old game stays."""
        from .position import Game

        game = Game(start, self._options["NoProgressPlies"])
        for text in moves:
            game.push_text(text)
        with self._lock:
            self._game = game

    def evaluate_terms(self) -> dict[str, int]:
        """Static evaluation of the current position broken into terms (empty if unavailable)."""
        try:
            from . import evaluate
        except ImportError:
            return {}
        terms = getattr(evaluate, "evaluation_terms", None)
        if terms is None:
            return {}
        return dict(terms(self.game.position))

    def skill_seed(self) -> tuple[int, bool]:
        """The seed of skill-level choices and whether it was just drawn for this game.

        A non-zero ``Seed`` option is used as it is; ``Seed`` 0 means a fresh random seed per
        game (drawn at the game's first search, kept until ``ucinewgame``), which the front end
        announces so the game can be replayed with ``setoption name Seed value N``.
        """
        with self._lock:
            fixed = int(self._options["Seed"])
            if fixed:
                return fixed, False
            if self._game_seed is None:
                self._game_seed = int.from_bytes(os.urandom(4), "little") % (2 ** 31 - 1) + 1
                return self._game_seed, True
            return self._game_seed, False

    # --- searching -----------------------------------------------------------------------------
    @property
    def searching(self) -> bool:
        """A go (or perft/bench task) is running, or holding its result for stop/ponderhit."""
        job = self._job
        return job is not None and not job.finished

    def wait_stopped(self, timeout: float = STOP_WAIT_S, abort: Optional[threading.Event] = None) -> bool:
        """After ``stop``: wait until the stopped job reported its result (as Stockfish's ``isready``
        and ``go`` do); a no-op for a job nobody stopped.  False on timeout or abort."""
        job = self._job
        if job is None or not job.stop_requested:
            return True
        deadline = time.monotonic() + max(0.0, timeout)
        while not job.done.wait(0.02):
            if (abort is not None and abort.is_set()) or time.monotonic() >= deadline:
                return False
        return True

    def go(self, params: GoParams, on_info: Callable[[SearchInfo], None],
           on_done: Callable[[SearchResult], None],
           on_currmove: Optional[Callable[[Move, int], None]] = None,
           on_message: Optional[Callable[[str], None]] = None) -> None:
        """Start a search of the current position in the worker thread (non-blocking).

        ``on_done`` is called exactly once, from the worker, after the last ``on_info``; in
        infinite/ponder mode only after ``stop``/``ponderhit``.  ``on_message`` receives
        diagnostics such as ``error: internal: ...`` (the search failed; ``on_done`` then
        still gets a legal move) and announcements (``skill seed N``).  A job that was sent
        ``stop`` is waited for (its result is reported first); raises :class:`EngineBusyError`
        while another job runs and a ``NotationError`` for a bad ``searchmoves`` entry
        (nothing is started then).
        """
        start_time = params.start_time if params.start_time is not None else time.monotonic()
        self.start_warmup()
        self.wait_stopped()
        game = self._snapshot_game()
        pos = game.position
        searchmoves = [pos.parse_move(text) for text in params.searchmoves] if params.searchmoves else None
        legal = pos.legal_moves()
        if searchmoves:
            allowed = {m.squares for m in searchmoves}
            candidates = [m for m in legal if m.squares in allowed]
        else:
            candidates = legal
        pieces = bin(pos.black | pos.white).count("1")
        tm = TimeManager(params, pos.turn, self._options["Move Overhead"], len(candidates), start=start_time,
                         pieces=pieces, lag_ms=self.lag.lag_ms)
        job = _Job("go", tm=tm, hold=bool(params.infinite or params.ponder), ponder=bool(params.ponder),
                   infinite=bool(params.infinite))
        seed: Optional[int] = None
        if self._options["Skill Level"] < 20 and legal:
            seed, drawn = self.skill_seed()
            if drawn and on_message is not None:
                on_message(f"skill seed {seed} (Seed 0: fresh per game; "
                           f"setoption name Seed value {seed} replays it)")
        with self._lock:
            if self.searching:
                raise EngineBusyError("a search is already running: send stop first")
            self._job = job
            job.thread = threading.Thread(
                target=self._run_search,
                args=(job, game, params, searchmoves, legal, candidates, on_info, on_done, on_currmove,
                      on_message, seed),
                name="uci_checkers-search", daemon=True)
            job.thread.start()

    def perft(self, depth: int, on_move: Callable[[Move, int], None],
              on_done: Callable[[Optional[int]], None],
              on_error: Optional[Callable[[BaseException], None]] = None) -> None:
        """Divide perft of the current position in the worker (non-blocking).

        ``on_move`` per legal move, then ``on_done(total)``; ``on_done(None)`` when stopped
        (checked between sub-trees two plies down); ``on_error(exc)`` if it fails.
        Raises :class:`EngineBusyError` while another job runs.
        """
        if depth < 0:
            raise ValueError("perft depth must be >= 0")
        position = self.game.position

        def task(job: _Job) -> Optional[int]:
            from .perft import perft

            if depth == 0:
                return 1
            total = 0
            for move in position.legal_moves():
                # two levels in Python so that stop is noticed between sub-trees
                child = position.play(move)
                if depth == 1:
                    count = 1
                else:
                    count = 0
                    for reply in child.legal_moves():
                        if job.stop_requested:
                            return None
                        count += perft(child.play(reply), depth - 2)
                if job.stop_requested:
                    return None
                total += count
                on_move(move, count)
            return total

        self.run_task("perft", task, on_error=on_error, on_finish=on_done)

    def run_task(self, kind: str, task: Callable[[_Job], Any],
                 on_error: Optional[Callable[[BaseException], None]] = None,
                 on_finish: Optional[Callable[[Any], None]] = None) -> None:
        """Run ``task(job)`` in the worker after the warm-up (perft, bench); busy rules as ``go``.

        ``on_finish(result)`` (or ``on_error(exc)``) is called once the job counts as finished, under
        the facade lock, so a ``go`` sent in reply to the final output is never refused as busy.
        """
        job = _Job(kind)
        self.start_warmup()
        self.wait_stopped()

        def body() -> None:
            result: Any = None
            error: Optional[BaseException] = None
            try:
                while not self._ready.wait(0.02):
                    if job.stop_requested:
                        break
                if job.stop_requested and not self._ready.is_set():
                    result = None
                else:
                    result = task(job)
            except BaseException as exc:
                error = exc
            with self._lock:
                job.finished = True
                try:
                    if error is not None:
                        if on_error is not None:
                            on_error(error)
                    elif on_finish is not None:
                        on_finish(result)
                finally:
                    job.done.set()
                try:
                    self._apply_pending_locked()
                except BaseException as exc:
                    if on_error is not None:
                        on_error(exc)

        with self._lock:
            if self.searching:
                raise EngineBusyError(f"a {self._job.kind if self._job else 'job'} is already running: "
                                      "send stop first")
            self._job = job
            job.thread = threading.Thread(target=body, name=f"uci_checkers-{kind}", daemon=True)
            job.thread.start()

    def stop(self) -> None:
        """Raise the stop flag and release a held result; a no-op when idle."""
        job = self._job
        if job is None or job.finished:
            return
        with job.deadline_cv:  # the worker resets the flag under this lock before searching
            job.stop_requested = True
            flag = self._stop_flag
            if flag is not None:
                flag[0] = 1
            job.deadline_cv.notify_all()
        job.released.set()

    def ponderhit(self) -> bool:
        """The ponder search becomes a normal timed search from now; False if not pondering."""
        job = self._job
        if job is None or job.finished or job.tm is None or not job.tm.pondering:
            return False
        now = time.monotonic()
        with job.deadline_cv:
            job.tm.ponderhit(now)
            if job.limits is not None and not job.infinite:
                job.limits.infinite = False
            job.hold = job.infinite
            job.deadline_cv.notify_all()
        if not job.hold:
            job.released.set()
        return True

    @property
    def pondering(self) -> bool:
        job = self._job
        return job is not None and not job.finished and job.tm is not None and job.tm.pondering

    def wait(self, timeout: Optional[float] = None) -> bool:
        """Join the worker; True when no job is running afterwards."""
        job = self._job
        if job is None or job.thread is None:
            return True
        job.thread.join(timeout)
        return not job.thread.is_alive()

    def quit(self, timeout: float = 2.0) -> None:
        """Stop any job and join the worker (for at most ``timeout`` seconds)."""
        self.stop()
        self.wait(timeout)

    # --- worker --------------------------------------------------------------------------------
    def _snapshot_game(self) -> Game:
        """A private copy of the game for the worker (the host may send position meanwhile)."""
        from .position import Game

        src = self.game
        copy = Game(src.start, src.no_progress_plies)
        for move in src.moves:
            copy.push(move)
        return copy

    def _make_limits(self, params: GoParams, searchmoves: Optional[list[Move]],
                     seed: Optional[int]) -> SearchLimits:
        from .search import SearchLimits

        limits = SearchLimits(depth=params.depth, nodes=params.nodes, mate=params.mate,
                              searchmoves=searchmoves, multipv=self._options["MultiPV"],
                              skill=self._options["Skill Level"],
                              seed=seed if seed is not None else self._options["Seed"],
                              infinite=bool(params.infinite or params.ponder))
        for attr in ("analyse_mode", "analyse"):
            if hasattr(limits, attr):
                setattr(limits, attr, bool(self._options["UCI_AnalyseMode"]))
                break
        return limits

    def _deadline_loop(self, job: _Job) -> None:
        """Raise the stop flag at the hard limit; re-reads the deadline after ponderhit."""
        with job.deadline_cv:
            while not job.finished and not job.stop_requested:
                deadline = job.tm.deadline() if job.tm is not None else None
                if deadline is None:
                    job.deadline_cv.wait(0.5)
                    continue
                left = deadline - time.monotonic()
                if left <= 0:
                    flag = self._stop_flag
                    if flag is not None:
                        flag[0] = 1
                    return
                job.deadline_cv.wait(min(left, 1.0))   # bounded: a clamped but long limit stays valid

    def _wait_for_kernels(self, job: _Job) -> bool:
        """Wait for the search kernels; False when the move is due first (stop, or the hard limit
        of a timed search passed while compiling): the caller then plays a fallback move."""
        tm = job.tm
        while not self._ready.wait(0.01):
            if job.stop_requested:
                return False
            deadline = tm.deadline() if tm is not None else None
            if deadline is not None and time.monotonic() >= deadline:
                return False
        return True

    def _run_search(self, job: _Job, game: Game, params: GoParams, searchmoves: Optional[list[Move]],
                    legal: list, candidates: list, on_info: Callable, on_done: Callable,
                    on_currmove: Optional[Callable], on_message: Optional[Callable],
                    seed: Optional[int]) -> None:
        result = None
        tm = job.tm
        deadline_thread = None
        try:
            if tm.limited or tm.pondering:
                deadline_thread = threading.Thread(target=self._deadline_loop, args=(job,),
                                                   name="uci_checkers-deadline", daemon=True)
                deadline_thread.start()
            # wait for the kernels; the clock is already running (it started when go arrived)
            if not self._wait_for_kernels(job):
                if on_message is not None:
                    on_message("the search kernels are still compiling (first start): "
                               "playing a quick fallback move")
                result = _fallback_result(candidates or legal, game.position)
            else:
                result = self._search(job, game, params, searchmoves, legal, on_info, on_currmove, on_message,
                                      seed)
        except BaseException as exc:  # never leave the host without a bestmove
            if on_message is not None:
                detail = "".join(traceback.format_exception_only(type(exc), exc)).strip().replace("\n", " ")
                on_message(f"error: internal: {detail[:300]}")
            result = _fallback_result(candidates or legal, None)
        finally:
            # infinite / ponder: the host gets bestmove only after stop or ponderhit
            while job.hold and not job.released.wait(0.05):
                pass
            # under the lock, so that a go racing with this bestmove starts only after it was reported;
            # the move first, then option changes (a new hash table) that arrived during the search
            with self._lock:
                with job.deadline_cv:
                    job.finished = True
                    job.deadline_cv.notify_all()
                try:
                    on_done(result)
                finally:
                    job.done.set()
                self._record_lag(job)
                try:
                    self._apply_pending_locked()
                except BaseException as exc:
                    if on_message is not None:
                        on_message(f"error: internal: applying options: {exc!r}"[:300])
            if deadline_thread is not None:
                deadline_thread.join(1.0)

    def _record_lag(self, job: _Job) -> None:
        """A move the hard limit stopped: remember how late after that limit it was written."""
        tm = job.tm
        if tm is None or tm.maximum_ms is None or tm.pondering or job.stop_requested or tm.single_move:
            return
        late = (time.monotonic() - tm.start) * 1000.0 - tm.maximum_ms
        if late > -1.0:    # it ran into the limit (an iteration ended earlier: nothing to learn)
            self.lag.record(late)

    def _search(self, job: _Job, game: Game, params: GoParams, searchmoves: Optional[list[Move]],
                legal: list, on_info: Callable, on_currmove: Optional[Callable],
                on_message: Optional[Callable], seed: Optional[int]) -> Any:
        tm = job.tm
        if self._warm_error is not None:
            raise RuntimeError(f"warm-up failed: {self._warm_error!r}")
        with self._lock:
            self._apply_pending_locked()
            egdb_messages, self._egdb_messages = self._egdb_messages, []
            flag = self._stop_flag
            limits = self._make_limits(params, searchmoves, seed)
            with job.deadline_cv:
                deadline = tm.deadline()
                expired = deadline is not None and time.monotonic() >= deadline
                flag[0] = 1 if (job.stop_requested or expired) else 0
                limits.infinite = bool(job.infinite or tm.pondering)
                job.limits = limits
        if on_message is not None:
            for text in egdb_messages:
                on_message(text)
        if not legal:
            from .search import SearchResult

            return SearchResult(None, None, 0, 0, 0)
        kwargs: dict[str, Any] = {}
        if on_currmove is not None and self._search_accepts("on_currmove"):
            kwargs["on_currmove"] = _throttled_currmove(on_currmove, tm)
        # no time control for depth/nodes/mate/infinite searches: the search then treats a single
        # legal move or a found mate as it does in analysis (searches on to its limit)
        control = tm if (tm.limited or tm.pondering) else None
        result = self._searcher.search(game, limits, on_info, flag, control, **kwargs)
        if result is None or result.best is None or result.best.squares not in {m.squares for m in legal}:
            raise RuntimeError(f"search returned no legal move ({getattr(result, 'best', None)})")
        return result

    def _search_accepts(self, name: str) -> bool:
        try:
            return name in inspect.signature(self._searcher.search).parameters
        except (TypeError, ValueError):
            return False


def _fallback_choice(moves: list, position: Optional[Position]) -> Any:
    """A cheap move without the search: the first that leaves the opponent no capture, if any
    (the rules layer only: usable while the search kernels compile)."""
    if position is not None:
        try:
            for move in moves:
                if not position.play(move).is_capture_pending():
                    return move
        except Exception:  # the rules layer itself failed: any legal move will do
            pass
    return moves[0] if moves else None


def _fallback_result(moves: list, position: Optional[Position] = None) -> Any:
    """A result playing a cheap legal move of ``moves`` (None when empty), when the search cannot.

    While the kernels compile, importing the search would block on its import: a stand-in
    with the same fields is used then.
    """
    best = _fallback_choice(moves, position)
    if kernels_ready() and not _WARM_ERROR:
        try:
            from .search import SearchResult

            return SearchResult(best, None, 0, 0, 0)
        except BaseException:  # the search module itself is broken
            pass
    from types import SimpleNamespace

    return SimpleNamespace(best=best, ponder=None, score=0, depth=0, nodes=0, infos=[], pv=[])


def _throttled_currmove(callback: Callable[[Any, int], None], tm: TimeManager) -> Callable[[Any, int], None]:
    """currmove reports: none in the first second, then at most four per second."""
    last = [0.0]

    def report(move: Any, number: int) -> None:
        now = time.monotonic()
        if now - tm.start < 1.0 or now - last[0] < 0.25:
            return
        last[0] = now
        callback(move, number)

    return report
