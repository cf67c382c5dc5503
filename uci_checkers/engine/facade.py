"""The engine facade: game, options, searcher, worker thread and time manager.

Protocol front ends (:mod:`uci_checkers.protocols.uci` for protocol.md, the Hub
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
import threading
import time
import traceback
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Optional

from . import warmup
from .options import OptionError, OptionSpec, build_option_specs
from .timeman import MAX_DEPTH, GoParams, LagTracker, TimeManager

if TYPE_CHECKING:  # pragma: no cover - typing only; the real imports are lazy
    from ..rules.position import Game, Move, Position
    from ..search.alphabeta import SearchInfo, SearchLimits, SearchResult, Searcher

STOP_WAIT_S = 10.0              # longest a go/isready waits for a stopped search to hand in its bestmove


class EngineBusyError(RuntimeError):
    """A request that needs an idle engine (``go`` while a search runs, ...)."""


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
        from .. import __version__

        self.version = __version__
        self._specs = build_option_specs()
        self._options: dict[str, Any] = {s.name: s.default for s in self._specs}
        self._lock = threading.RLock()
        self._game: Optional[Game] = None
        self._searcher: Optional[Searcher] = None
        self._stop_flag: Any = None                # int64 numpy array [1], created by the warm-up
        self._ready = threading.Event()
        self._warm_thread: Optional[threading.Thread] = None
        self._warm_error: Optional[BaseException] = None
        self._pending: dict[str, Any] = {}         # searcher changes not applied yet: hash, clear, threads, egdb
        self._load_messages: list[str] = []        # load reports (endgame databases, EvalFile), given to the next go
        self._weights: Any = None                  # EvalWeights from EvalFile (None: the shipped ones)
        self._search_params: dict[str, int] = {}   # SearchParams (empty: the search's defaults)
        self._egdb_reported: set[tuple[int, int]] = set()   # (material key, block) of undecodable blocks said
        self._job: Optional[_Job] = None
        self._game_seed: Optional[int] = None      # Seed 0: the fresh seed of this game, drawn at its first go
        self._book: Any = None                     # the opening book read for _book_source (None: none)
        self._book_source: Optional[str] = None    # the BookFile it was read for; None: not read yet
        self._book_messages: list[str] = []        # book load reports, given to the next go
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
        weights = self._read_eval_file(parsed) if spec.name == "EvalFile" else None
        search_params = _parse_search_params(parsed) if spec.name == "SearchParams" else None
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
            elif spec.name == "EvalFile":
                self._weights = weights
                self._pending["weights"] = weights
                self._load_messages.append(f"evaluation: {weights.describe()}")
            elif spec.name == "SearchParams":
                self._search_params = search_params
                self._pending["params"] = search_params
            elif spec.name == "BookFile":
                self._book, self._book_source = None, None     # read again when next needed
            elif spec.name == "NoProgressPlies" and self._game is not None:
                self._game.no_progress_plies = parsed
        self._apply_pending_if_idle()

    def get_option(self, name: str) -> Any:
        return self._options[self._spec(name).name]

    def _read_eval_file(self, value: str) -> Any:
        """The weights ``EvalFile`` names (empty: the shipped file), checked now, without numba (the kernels
        may still be compiling); :class:`OptionError` with the reason, and the evaluation kept, if unusable."""
        from ..search.weights import WeightsError, default_path, read_weights

        path = value.strip() or str(default_path())
        try:
            return read_weights(os.path.expanduser(path))
        except WeightsError as exc:
            kept = self._weights.path if self._weights is not None else str(default_path())
            raise OptionError(f"option EvalFile: {exc}; the evaluation stays {kept}") from None

    # --- readiness -----------------------------------------------------------------------------
    def start_warmup(self) -> None:
        """Load/compile the kernels and build the searcher in a background thread (non-blocking).

        From this call on, the rules never wait for their kernels: until the warm-up has loaded
        them, ``Position`` answers with the pure-Python rules (see ``rules.backend``).
        """
        warmup.start_kernel_warmup()
        with self._lock:
            if self._warm_thread is not None:
                return
            self._warm_thread = threading.Thread(target=self._warm, name="uci_checkers-engine-warmup",
                                                 daemon=True)
            self._warm_thread.start()

    def _warm(self) -> None:
        try:
            warmup.start_kernel_warmup()
            self.opening_book()                    # read while the kernels compile (needs no kernels)
            warmup.wait_until_warm()
            import numpy as np

            from ..search.alphabeta import Searcher

            # opened outside the lock (mapping the files takes milliseconds, a first run compiles the
            # decoder for seconds); an EGDB option set meanwhile
            # leaves "egdb" pending, so the databases are read again with it
            read_with = self._egdb_settings()
            table, messages = self._read_egdb()
            with self._lock:  # built under the lock: a Hash change now is either used here or pending
                searcher = Searcher(self._options["Hash"], self._weights)
                searcher.set_egdb(table)
                searcher.set_params(self._search_params)
                self._load_messages += messages
                if self._egdb_settings() == read_with:
                    self._pending.pop("egdb", None)
                self._searcher = searcher
                self._stop_flag = np.zeros(1, dtype=np.int64)
                self._pending.pop("hash", None)
                self._pending.pop("clear", None)
                self._pending.pop("newgame", None)
                self._pending.pop("weights", None)
                self._pending.pop("params", None)
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
        if "weights" in pending:
            searcher.set_weights(pending["weights"])
        if "params" in pending:
            searcher.set_params(pending["params"])
        if pending.get("clear") or pending.get("newgame"):
            searcher.clear()
        if pending.get("egdb"):
            searcher.set_egdb(None)                # the old table is freed before the new one is read
            table, messages = self._read_egdb()
            searcher.set_egdb(table)
            self._load_messages += messages

    # --- endgame databases ---------------------------------------------------------------------
    def _egdb_settings(self) -> tuple[str, int]:
        return str(self._options["EGDB Path"]).strip(), int(self._options["EGDB Pieces"])

    def _read_egdb(self) -> tuple[Any, list[str]]:
        """The probe table the EGDB options name (None: none) and the messages for the next go."""
        from pathlib import Path

        from ..egdb.store import default_directory, load_directory

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
        from ..egdb.probe import NOT_FOUND, describe, fork_table, probe_position

        pos = self.game.position
        # a fork: a search may be probing the searcher's own table (and its block cache) right now
        code = probe_position(fork_table(searcher.egdb), pos.black, pos.white, pos.kings, pos.turn)
        return None if code == NOT_FOUND else f"{describe(code)} for {pos.side_name} (database)"

    # --- opening book --------------------------------------------------------------------------
    def opening_book(self) -> Any:
        """The opening book ``BookFile`` names (read once; None when ``OwnBook`` is off or it cannot be
        read: the reason waits in the messages for the next go)."""
        with self._lock:
            if not self._options["OwnBook"]:
                return None
            source = str(self._options["BookFile"]).strip()
            if self._book_source == source:
                return self._book
            from pathlib import Path

            from ..book.store import BookError, default_path, load_book

            self._book, self._book_source = None, source
            try:
                self._book = load_book(Path(source) if source else default_path())
            except BookError as exc:
                self._book_messages.append(f"error: book: {exc}; playing without the book")
            except (OSError, MemoryError, ValueError) as exc:
                self._book_messages.append(f"error: book: cannot read {source or 'the packaged book'}: {exc}; "
                                           "playing without the book")
            return self._book

    def book_allowed(self, params: GoParams) -> bool:
        """Whether a ``go`` may be answered from the book: a game move on time (a clock or a move time) with
        ``OwnBook`` on; not analysis (``UCI_AnalyseMode``, MultiPV, ``infinite``, ``ponder``, ``searchmoves``)
        and not a fixed-effort search (``depth``, ``nodes``, ``mate``: bench, fixed-node matches between
        versions, search fingerprints), which always searches, with or without a clock beside it."""
        o = self._options
        if not o["OwnBook"] or o["UCI_AnalyseMode"] or o["MultiPV"] != 1:
            return False
        if params.depth is not None or params.nodes is not None or params.mate is not None or params.infinite \
                or params.ponder or params.searchmoves:
            return False
        return any(getattr(params, k) is not None for k in ("wtime", "btime", "movetime"))

    def _book_answer(self, job: _Job, game: Game, params: GoParams, legal: list, on_info: Callable,
                     on_message: Optional[Callable]) -> Any:
        """A result for a book move of ``game``'s position (reported as protocol.md says), or None."""
        book = self.opening_book() if self._options["OwnBook"] else None
        with self._lock:
            messages, self._book_messages = self._book_messages, []
        if on_message is not None:
            for text in messages:
                on_message(text)
        if book is None or not legal or not self.book_allowed(params):
            return None
        from types import SimpleNamespace

        from ..book.probe import book_choice

        def seed() -> int:
            value, drawn = self.skill_seed()
            if drawn and on_message is not None:
                on_message(f"book seed {value} (Seed 0: fresh per game; setoption name Seed value {value} replays it)")
            return value

        found = book_choice(book, game, int(self._options["BookVariety"]), seed)
        if found is None:
            return None
        move, choice = found
        pos = game.position
        child = pos.play(move)
        replies = {m.squares: m for m in child.legal_moves()}
        ponder = next((replies[m.squares] for m in book.probe(child) if m.squares in replies), None)
        pv = [move] + ([ponder] if ponder is not None else [])
        elapsed = int((time.monotonic() - job.tm.start) * 1000) if job.tm is not None else 0
        info = SimpleNamespace(depth=choice.depth, seldepth=choice.depth, multipv=1, score=choice.value,
                               mate=_mate_in_moves(choice.value), bound=None, nodes=0, time_ms=elapsed, nps=0,
                               hashfull=0, pv=pv, tbhits=0)
        if on_message is not None:
            on_message(f"book {move} {choice.value}")
        on_info(info)
        return SimpleNamespace(best=move, ponder=ponder, score=choice.value, depth=choice.depth, nodes=0,
                               infos=[info], pv=pv, seldepth=choice.depth, time_ms=elapsed)

    def _egdb_block_errors(self) -> list[str]:
        """A message for a block the probes could not decode (each such block said once)."""
        searcher = self._searcher
        if searcher is None:
            return []
        from ..egdb.index import Slice
        from ..egdb.probe import block_error

        out = []
        for table in searcher.egdb_tables():
            found = block_error(table)
            if found is None or found in self._egdb_reported:
                continue
            self._egdb_reported.add(found)
            key, block = found
            digits = [(key // 9 ** p) % 9 for p in (3, 2, 1, 0)]
            out.append(f"egdb: {Slice(*digits).name}: block {block} does not decode (corrupt file); the search "
                       f"goes on without its positions (egdb verify checks every file)")
        return out[:1]

    # --- game ----------------------------------------------------------------------------------
    @property
    def game(self) -> Game:
        """The current game (start position plus moves)."""
        with self._lock:
            if self._game is None:
                from ..rules.position import Game

                self._game = Game(None, self._options["NoProgressPlies"])
            return self._game

    @game.setter
    def game(self, value: Game) -> None:
        with self._lock:
            self._game = value

    def new_game(self) -> None:
        """Forget the game and everything learnt (new tables right after a running search reports)."""
        from ..rules.position import Game

        with self._lock:
            self._game = Game(None, self._options["NoProgressPlies"])
            self._pending["newgame"] = True
            self._game_seed = None
        self._apply_pending_if_idle()

    def set_position(self, start: Position, moves: list[str]) -> None:
        """Replace the game by ``start`` plus ``moves``; on any error the old game stays."""
        from ..rules.position import Game

        game = Game(start, self._options["NoProgressPlies"])
        for text in moves:
            game.push_text(text)
        with self._lock:
            self._game = game

    def evaluate_terms(self) -> dict[str, int]:
        """Static evaluation of the current position broken into terms (empty if unavailable)."""
        try:
            from ..search import evaluate, nnue
        except ImportError:
            return {}
        from ..search.weights import KIND_NETWORK, default_weights
        searcher = self._searcher
        if searcher is not None:
            weights = searcher.weights
        elif self._weights is not None:
            weights = self._weights
        else:
            weights = default_weights()
        if weights.kind == KIND_NETWORK:
            return nnue.evaluation_terms(self.game.position, weights.table)
        table = searcher.ev if searcher is not None else weights.table
        return dict(evaluate.evaluation_terms(self.game.position, table))

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
           on_message: Optional[Callable[[str], None]] = None,
           on_plan: Optional[Callable[[TimeManager], None]] = None) -> None:
        """Start a search of the current position in the worker thread (non-blocking).

        ``on_done`` is called exactly once, from the worker, after the last ``on_info``; in
        infinite/ponder mode only after ``stop``/``ponderhit``.  ``on_message`` receives
        diagnostics such as ``error: internal: ...`` (the search failed; ``on_done`` then
        still gets a legal move) and announcements (``skill seed N``, a missing clock).
        ``on_plan`` gets the move's :class:`TimeManager` before the search starts (for
        ``debug on``).  A job that was sent ``stop`` is waited for (its result is reported
        first); raises :class:`EngineBusyError` while another job runs and a ``NotationError``
        for a bad ``searchmoves`` entry (nothing is started then).
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
                         pieces=pieces, lag_ms=self.lag.lag_ms,
                         typical_lag_ms=self.lag.typical_ms)
        job = _Job("go", tm=tm, hold=bool(params.infinite or params.ponder), ponder=bool(params.ponder),
                   infinite=bool(params.infinite))
        if tm.missing_clock and on_message is not None and not self.searching:
            own, other = ("btime", "wtime") if pos.turn == 0 else ("wtime", "btime")
            on_message(f"warning: go gives no {own} ({pos.side_name} is to move; {other} is the other side's "
                       f"clock): it counts as 0 ms, so the move comes at once")
        if on_plan is not None and not self.searching:
            on_plan(tm)
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
            from ..rules.perft import perft

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
        from ..rules.position import Game

        src = self.game
        copy = Game(src.start, src.no_progress_plies)
        for move in src.moves:
            copy.push(move)
        return copy

    def _make_limits(self, params: GoParams, searchmoves: Optional[list[Move]],
                     seed: Optional[int]) -> SearchLimits:
        from ..search.alphabeta import SearchLimits

        limits = SearchLimits(depth=mate_depth_cap(params), nodes=params.nodes, mate=params.mate,
                              searchmoves=searchmoves, multipv=self._options["MultiPV"],
                              skill=self._options["Skill Level"],
                              seed=seed if seed is not None else self._options["Seed"],
                              infinite=bool(params.infinite or params.ponder),
                              contempt=self._contempt())
        return limits

    def _contempt(self) -> int:
        """The Contempt option in games; 0 while the host analyses (an analysis reports the position's
        value, not the engine's wish to avoid a draw)."""
        return 0 if self._options["UCI_AnalyseMode"] else self._options["Contempt"]

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
            # a book move needs no kernels: it answers at once
            result = self._book_answer(job, game, params, legal, on_info, on_message)
            if result is None:
                # wait for the kernels; the clock is already running (it started when go arrived)
                if not self._wait_for_kernels(job):
                    if on_message is not None:
                        on_message("the search kernels are still compiling (first start): "
                                   "playing a quick fallback move")
                    result = _fallback_result(candidates or legal, game.position)
                else:
                    result = self._search(job, game, params, searchmoves, legal, on_info, on_currmove,
                                          on_message, seed)
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
            self._load_messages += self._egdb_block_errors()
            load_messages, self._load_messages = self._load_messages, []
            flag = self._stop_flag
            limits = self._make_limits(params, searchmoves, seed)
            with job.deadline_cv:
                deadline = tm.deadline()
                expired = deadline is not None and time.monotonic() >= deadline
                flag[0] = 1 if (job.stop_requested or expired) else 0
                limits.infinite = bool(job.infinite or tm.pondering)
                job.limits = limits
        if on_message is not None:
            for text in load_messages:
                on_message(text)
        if not legal:
            from ..search.alphabeta import SearchResult

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


def mate_depth_cap(params: GoParams) -> Optional[int]:
    """The depth limit of a go: ``depth``, or for a ``go mate N`` with no other limit (no depth, nodes,
    time or clock, not infinite or ponder) 2N+1 plies, the depth at which the search proves a win in
    N moves (N winning moves and N-1 replies, plus the two plies of margin its proof needs)."""
    if params.depth is not None or params.mate is None:
        return params.depth
    others = (params.nodes, params.movetime, params.wtime, params.btime, params.winc, params.binc,
              params.movestogo)
    if params.infinite or params.ponder or any(v is not None for v in others):
        return None
    return min(2 * params.mate + 1, MAX_DEPTH)


_MATE = 30000          # search.alphabeta.MATE and MATE_BOUND (not imported: it loads numba)
_MATE_BOUND = _MATE - 1000


def _mate_in_moves(score: int) -> Optional[int]:
    """UCI ``mate n`` of a book value (as the search reports it), None for an ordinary value."""
    if score > _MATE_BOUND:
        return (_MATE - score + 1) // 2
    if score < -_MATE_BOUND:
        return -((_MATE + score) // 2)
    return None


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
    if warmup.kernels_ready() and not warmup.warm_up_failed():
        try:
            from ..search.alphabeta import SearchResult

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


def _parse_search_params(text: str) -> dict[str, int]:
    """The ``SearchParams`` option's text as values (:class:`OptionError` with the reason if malformed)."""
    from ..search.params import SearchParamsError, parse

    try:
        return parse(text)
    except SearchParamsError as exc:
        raise OptionError(f"option SearchParams: {exc}") from None
