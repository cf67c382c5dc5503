"""An engine process for the page, driven through :mod:`uci_checkers.client` on one worker thread.

The server hands jobs (a computer reply, a live analysis) to :class:`EngineHost`
and never waits on the engine itself: a job runs on the host's own thread and
reports through callbacks.  The process is started on first use; when it dies or
misbehaves the job fails with :class:`EngineFailure` (a sentence for the page), the
process is dropped, and the next job starts a fresh one (the page's "Restart
engine").

Levels: Easy, Normal and Hard set the engine's ``Skill Level`` and a node budget
(``ucinewgame`` before every reply, so the same position, seed and level give the
same move: undo and replay reproduce the computer's replies).  An engine without a
``Skill Level`` option gets a move time instead.  A ``go nodes`` always searches
(protocol.md section 4a), so with this package's engine the host plays from the
engine's opening book itself, as a GUI does with its own book: in a book position the
reply is the book's move (the package's book, or the ``BookFile`` given with
``--engine option.BookFile=...``; none with ``option.OwnBook=false``), at most the
level's ``book_variety`` centi-men below the best, drawn with the replay seed exactly
as the engine draws with ``BookVariety`` and ``Seed``.
"""
from __future__ import annotations

import shlex
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Optional, Sequence

from ..client import Engine, EngineError, EngineTimeoutError, Info, Limit
from ..rules.position import Game, Move


class EngineFailure(RuntimeError):
    """The engine could not do the job; the message is meant for the page."""


@dataclass(frozen=True)
class Level:
    skill: int
    nodes: int
    movetime_ms: int          # for engines without a Skill Level option
    book_variety: int = 0     # centi-men below the book's best move a book reply may be (this package's engine)


LEVELS = {
    "easy": Level(skill=3, nodes=5_000, movetime_ms=100, book_variety=60),
    "normal": Level(skill=11, nodes=50_000, movetime_ms=500, book_variety=20),
    "hard": Level(skill=20, nodes=1_000_000, movetime_ms=2000, book_variety=0),
}
REPLY_TIMEOUT = 60.0           # seconds beyond the level's budget before a reply counts as hung
ANALYSIS_TIMEOUT = 1800.0      # one position is analysed for at most this long


@dataclass(frozen=True)
class EngineCommand:
    """How to start the engine: a command (None: this package's engine), its directory and options."""

    argv: Optional[Sequence[str]] = None
    cwd: Optional[str] = None
    options: Mapping[str, str] = None  # type: ignore[assignment]

    @classmethod
    def parse(cls, tokens: Sequence[str]) -> "EngineCommand":
        """``cmd="..." dir=... option.Hash=32`` as on ``uci-checkers match --engine``."""
        argv = None
        cwd = None
        options: dict[str, str] = {}
        for token in tokens:
            key, sep, value = token.partition("=")
            if not sep:
                raise ValueError(f"--engine takes KEY=VALUE words (cmd=, dir=, option.NAME=), not {token!r}")
            if key == "cmd":
                argv = shlex.split(value)
                if not argv:
                    raise ValueError("--engine cmd= needs a command")
            elif key == "dir":
                cwd = value
            elif key.startswith("option.") and len(key) > len("option."):
                options[key[len("option."):]] = value
            else:
                raise ValueError(f"--engine: unknown key {key!r} (use cmd=, dir= or option.NAME=)")
        return cls(argv, cwd, options)

    def describe(self) -> str:
        return "uci_checkers (this package)" if self.argv is None else " ".join(self.argv)


class EngineHost:
    """One engine process and the thread that talks to it; jobs run one at a time, in order."""

    def __init__(self, command: EngineCommand) -> None:
        self.command = command
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="gui-engine")
        self._engine: Optional[Engine] = None
        self._lock = threading.Lock()               # guards _engine and _jobs (stop() comes from other threads)
        self._jobs: set[_AnalysisJob] = set()
        self.name = command.describe()
        self._book: Any = None                       # the opening book (this package's engine), read on first use
        self._book_read = False

    # --- process -------------------------------------------------------------------------------
    def _ensure_engine(self) -> Engine:
        if self._engine is not None and self._engine.process.poll() is None:
            return self._engine
        self._drop_engine()
        try:
            engine = Engine.popen(self.command.argv, cwd=self.command.cwd, options=self.command.options or None)
        except EngineError as exc:
            raise EngineFailure(f"The engine ({self.name}) could not be started: {_first_line(exc)}") from None
        with self._lock:
            self._engine = engine
        self.name = engine.id.get("name", self.name)
        return engine

    def _drop_engine(self) -> None:
        with self._lock:
            engine, self._engine = self._engine, None
        if engine is not None:
            try:
                engine.close(timeout=2.0, kill=True)
            except (OSError, EngineError):
                pass

    def warm_up(self) -> Future:
        """Start the process now (in the background) so that the first reply is quick."""
        return self._pool.submit(self._ensure_engine)

    def close(self) -> None:
        self.stop_analysis()
        self._pool.shutdown(wait=False, cancel_futures=True)
        with self._lock:
            engine, self._engine = self._engine, None
        if engine is not None:
            try:
                engine.quit(timeout=2.0)
            except (OSError, EngineError):
                pass

    # --- jobs ------------------------------------------------------------------------------------
    def play(self, game: Game, level: str, seed: int) -> "Future[Move]":
        """The engine's move in ``game`` at ``level``; the future fails with :class:`EngineFailure`."""
        snapshot = Game(game.start, game.no_progress_plies)
        for move in game.moves:
            snapshot.push(move)
        return self._pool.submit(self._play, snapshot, LEVELS[level], seed)

    def opening_book(self) -> Any:
        """The book this package's engine would play from (None: another engine, ``OwnBook`` false, or a book
        that cannot be read: the engine then searches every reply)."""
        if self._book_read:
            return self._book
        self._book_read = True
        if self.command.argv is not None:
            return None
        options = {" ".join(k.split()).lower(): str(v).strip() for k, v in (self.command.options or {}).items()}
        if options.get("ownbook", "true").lower() == "false":
            return None
        from pathlib import Path

        from ..book.store import BookError, default_path, load_book

        source = options.get("bookfile", "")
        try:
            self._book = load_book(Path(source) if source else default_path())
        except (BookError, OSError, MemoryError):
            self._book = None          # the engine's own first go says what is wrong with it (OwnBook)
        return self._book

    def book_move(self, game: Game, level: Level, seed: int) -> Optional[Move]:
        """The reply from the opening book at ``level`` (None: not a book position, or no book)."""
        book = self.opening_book()
        if book is None:
            return None
        from ..book.probe import book_choice

        found = book_choice(book, game, level.book_variety, lambda: seed)
        return None if found is None else found[0]

    def _play(self, game: Game, level: Level, seed: int) -> Move:
        move = self.book_move(game, level, seed)
        if move is not None:
            return move
        engine = self._ensure_engine()
        try:
            if "skill level" in engine.options:
                options = {"Skill Level": level.skill}
                if "seed" in engine.options:
                    options["Seed"] = seed
                engine.configure(options)
                limit = Limit(nodes=level.nodes)
                timeout = REPLY_TIMEOUT
            else:
                limit = Limit(movetime=level.movetime_ms)
                timeout = level.movetime_ms / 1000 + REPLY_TIMEOUT
            engine.new_game()                      # nothing learnt earlier changes this reply
            result = engine.play(game, limit, timeout=timeout)
        except EngineError as exc:
            self._drop_engine()
            raise EngineFailure(f"The engine ({self.name}) stopped working: {_first_line(exc)}") from None
        if result.move is None:
            self._drop_engine()
            raise EngineFailure(f"The engine ({self.name}) gave no move in a position that has one.")
        return result.move

    def analyse(self, game: Game, multipv: int, on_info: Callable[[Info], None]) -> Future:
        """Analyse ``game``'s position until :meth:`stop_analysis`; every report goes to ``on_info``."""
        snapshot = Game(game.start, game.no_progress_plies)
        for move in game.moves:
            snapshot.push(move)
        job = _AnalysisJob()
        with self._lock:
            self._jobs.add(job)
        return self._pool.submit(self._analyse, job, snapshot, multipv, on_info)

    def _analyse(self, job: "_AnalysisJob", game: Game, multipv: int, on_info: Callable[[Info], None]) -> None:
        try:
            if job.stopped.is_set():
                return
            engine = self._ensure_engine()
            if "skill level" in engine.options:
                engine.configure({"Skill Level": 20})
            if "multipv" not in engine.options:
                multipv = 1
            analysis = engine.analysis(game, None, multipv=multipv, timeout=ANALYSIS_TIMEOUT)
            with self._lock:
                job.analysis = analysis
            if job.stopped.is_set():
                analysis.stop()
            for info in analysis:
                on_info(info)
        except EngineTimeoutError:
            pass                                     # the time allowed for one position ran out: just end
        except EngineError as exc:
            self._drop_engine()
            raise EngineFailure(f"The engine ({self.name}) stopped working: {_first_line(exc)}") from None
        finally:
            with self._lock:
                self._jobs.discard(job)

    def stop_analysis(self) -> None:
        """Ask every running or queued analysis to end (their futures complete shortly after)."""
        with self._lock:
            jobs = list(self._jobs)
        for job in jobs:
            job.stopped.set()
            with self._lock:
                analysis = job.analysis
            if analysis is not None:
                try:
                    analysis.stop()
                except EngineError:
                    pass


class _AnalysisJob:
    def __init__(self) -> None:
        self.stopped = threading.Event()
        self.analysis = None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
