"""Growing an opening book with the engine's own search: best-first drop-out expansion (the command line is
:mod:`uci_checkers.tools.book_command`).

The book is a graph of positions (transpositions merge) grown from its roots: the start
position and the ballot positions.  Every position that is not forced is searched once
(fixed depth by default, MultiPV 2, from a cleared table, one thread: the same search
always gives the same values), which gives its best two moves with their values.  Those
searched but not yet played out are the position's *known* moves.

* **Values** are propagated by minimax: a position's value is the best of its expanded
  moves (the negated value of the position they lead to) and its best known move.  A
  position with one legal move is not searched: its move is expanded at once.
* **Expansion** follows Lincke's drop-out expansion (Lincke 2000, as in the book
  builders of Cake and KingsRow).  Each player P has a priority along every path from a
  root: each ply adds ``dropout`` (omega), and a move that is worse than the best move of
  its position by ``e`` centi-men adds ``e`` when P made it and ``reply_weight`` percent of
  ``e`` when the opponent did.  The next move played out is the best known move of the
  position with the lowest priority (the lower of the two players').  So the best line is
  extended first, and a move ``e`` worse than the best is played out once the best line
  has grown about ``e / omega`` plies further: the drop-out margin grows with depth.
  After a position's last known move is expanded, the rest of its moves are searched
  (MultiPV 2 over them) to find its next alternatives.
* **Rounds.** Each round expands the ``batch`` lowest-priority moves, searches the
  positions that needs (in parallel with ``jobs`` local processes or Ray tasks) and only
  then changes the book; so the result depends on the settings alone, never on ``jobs``
  or on where a build was interrupted.
* **State.** The whole graph is kept in a state file (JSON, zlib), written atomically
  every ``checkpoint`` new positions, at the end and on Ctrl-C (the round in progress is
  dropped), together with the book file: running the same command again resumes, and an
  interrupted build ends with the same file as an uninterrupted one.

The positions are searched without game history (no repetitions, no-progress counter 0),
which is what an opening position has.
"""
from __future__ import annotations

import contextlib
import heapq
import json
import multiprocessing
import os
import signal
import sys
import threading
import time
import zlib
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator, Optional, Sequence, TextIO

import numpy as np

from ..rules.position import Game, Position
from ..search.alphabeta import MATE, MATE_BOUND, Searcher, SearchLimits
from ..search.tt import MAX_MB
from ..util.atomicfile import write_bytes_atomic
from ..util.commandline import COMPILING_NOTICE, announce_if_slow
from ..util.interrupts import raise_if_interrupted
from ..util.progress import Progress as ProgressLine
from ..util.raycluster import RayConnectError, RayTasks
from .store import BookMove, position_key, write_book

STATE_FORMAT = 1
DEFAULT_DEPTH = 15
PRIORITY_SCALE = 100           # priorities are integers: centi-men times this (reply_weight is a percent)


class BookBuildError(Exception):
    """A build that cannot start or go on (settings that contradict the state file, a broken state, Ray)."""


@dataclass(frozen=True)
class BuildSettings:
    """What decides the book a build grows (recorded in the state file; a resume must match them)."""

    depth: Optional[int] = DEFAULT_DEPTH    # plies per search
    nodes: Optional[int] = None             # or nodes per search
    movetime_ms: Optional[int] = None       # or time per search (not reproducible)
    multipv: int = 2                        # moves valued by each search
    dropout: int = 15                       # omega: priority (centi-men) per ply
    reply_weight: int = 50                  # percent of the opponent's move errors counted in a player's priority
    batch: int = 4                          # moves expanded per round
    hash_mb: int = 64                       # transposition table of each search
    no_progress_plies: int = 80

    def check(self) -> None:
        if self.depth is None and self.nodes is None and self.movetime_ms is None:
            raise BookBuildError("give a search limit: --depth, --nodes or --movetime")
        for name, low in (("depth", 1), ("nodes", 1), ("movetime_ms", 1)):
            value = getattr(self, name)
            if value is not None and value < low:
                raise BookBuildError(f"--{name.split('_')[0]} must be >= {low}, not {value}")
        if self.depth is not None and self.depth > 64:
            raise BookBuildError(f"--depth must be <= 64, not {self.depth}")
        if not 1 <= self.multipv <= 8:
            raise BookBuildError(f"--multipv must be 1..8, not {self.multipv}")
        if not 1 <= self.dropout <= 10000:
            raise BookBuildError(f"--dropout must be 1..10000, not {self.dropout}")
        if not 0 <= self.reply_weight <= 100:
            raise BookBuildError(f"--reply-weight must be 0..100, not {self.reply_weight}")
        if not 1 <= self.batch <= 1024:
            raise BookBuildError(f"--batch must be 1..1024, not {self.batch}")
        if not 1 <= self.hash_mb <= MAX_MB:
            raise BookBuildError(f"--hash must be 1..{MAX_MB}, not {self.hash_mb}")


@dataclass
class Node:
    """One book position: its expanded moves (move text -> key of the position reached) and its known moves
    (searched, not expanded: ``[text, value, depth]``, best first)."""

    fen: str
    expanded: dict[str, str] = field(default_factory=dict)
    known: list[list] = field(default_factory=list)
    terminal: bool = False          # the side to move has no legal move


@dataclass(frozen=True)
class SearchRequest:
    """Search ``fen`` over ``moves`` (None: every legal move) and return its best ``multipv`` moves."""

    key: str
    fen: str
    moves: Optional[tuple[str, ...]]


Lines = list[list]                  # [[move text, value, depth], ...] best first


# --------------------------------------------------------------------------------------------------
# Searching one position
# --------------------------------------------------------------------------------------------------
def search_position(searcher: Searcher, request: SearchRequest, settings: BuildSettings) -> Lines:
    """The best ``settings.multipv`` moves of the request with their values and depths, from a cleared table."""
    pos = Position.from_fen(request.fen)
    legal = pos.legal_moves()
    moves = [pos.parse_move(t) for t in request.moves] if request.moves else legal
    limits = SearchLimits(depth=settings.depth, nodes=settings.nodes, multipv=min(settings.multipv, len(moves)),
                          searchmoves=moves if request.moves else None)
    stop = np.zeros(1, dtype=np.int64)
    timer = None
    if settings.movetime_ms is not None:
        timer = threading.Timer(settings.movetime_ms / 1000.0, stop.__setitem__, (0, 1))
        timer.daemon = True
    searcher.clear()
    infos: list = []
    if timer is not None:
        timer.start()
    try:
        result = searcher.search(Game(pos, settings.no_progress_plies), limits, infos.append, stop)
    finally:
        if timer is not None:
            timer.cancel()
    final: dict[int, Any] = {}
    for info in infos:
        if info.depth == result.depth and info.bound is None and info.pv:
            final[info.multipv] = info
    lines = [[final[k].pv[0].text(), int(final[k].score), int(final[k].depth)] for k in sorted(final)]
    if not lines:   # the first iteration did not finish (a tiny node or time limit): the move it had
        lines = [[result.best.text(), int(result.score), int(result.depth)]]
    return lines


def _new_searcher(settings: BuildSettings) -> Searcher:
    searcher = Searcher(settings.hash_mb)
    searcher.warm_up()
    searcher.prefault()       # later clears zero the table in place instead of mapping a new one
    return searcher


class LocalRunner:
    """Searches in this process."""

    def __init__(self, settings: BuildSettings) -> None:
        self.settings = settings
        self.searcher: Optional[Searcher] = None

    def run(self, requests: Sequence[SearchRequest]) -> list[Lines]:
        from ..util.interrupts import raise_if_interrupted

        if self.searcher is None:
            self.searcher = _new_searcher(self.settings)
        out = []
        for r in requests:
            raise_if_interrupted()      # one lost in a compile callback (see util.interrupts)
            out.append(search_position(self.searcher, r, self.settings))
        return out

    def close(self) -> None:
        self.searcher = None


_WORKER: dict[str, Any] = {}


def _start_worker(settings: BuildSettings) -> None:
    """A forked pool worker: its own process group (Ctrl-C at a terminal reaches the parent only, which
    ends the pool), the default SIGINT/SIGTERM (fork copied the parent's handlers), its own searcher."""
    os.setpgrp()
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    _WORKER["settings"] = settings
    _WORKER["searcher"] = _new_searcher(settings)


def _worker_search(request: SearchRequest) -> Lines:
    return search_position(_WORKER["searcher"], request, _WORKER["settings"])


class PoolRunner:
    """Searches in ``jobs`` forked local processes (results in request order)."""

    RESULT_TIMEOUT_S = 3600.0       # one search, however slow the machine: a worker that hangs longer has died

    def __init__(self, settings: BuildSettings, jobs: int) -> None:
        ctx = multiprocessing.get_context("fork")
        self.pool = ctx.Pool(jobs, initializer=_start_worker, initargs=(settings,))

    def run(self, requests: Sequence[SearchRequest]) -> list[Lines]:
        pending = [self.pool.apply_async(_worker_search, (r,)) for r in requests]
        try:
            return [p.get(self.RESULT_TIMEOUT_S) for p in pending]
        except multiprocessing.TimeoutError:
            raise BookBuildError(f"a search worker gave no result in {self.RESULT_TIMEOUT_S:.0f} s") from None

    def close(self) -> None:
        self.pool.terminate()
        self.pool.join()


def _ray_search(requests: list[SearchRequest], settings: BuildSettings) -> list[Lines]:
    """The Ray task: a searcher per worker process, kept between tasks."""
    searcher = _WORKER.get("ray_searcher")
    if searcher is None or _WORKER.get("ray_settings") != settings:
        searcher = _WORKER["ray_searcher"] = _new_searcher(settings)
        _WORKER["ray_settings"] = settings
    return [search_position(searcher, r, settings) for r in requests]


class RayRunner(RayTasks):
    """Searches as Ray tasks (a local instance, or the cluster at ``address``); the driver keeps the state."""

    WAIT_S = 1.0

    def __init__(self, settings: BuildSettings, address: Optional[str]) -> None:
        try:
            super().__init__(_ray_search, address)
        except RayConnectError as exc:
            raise BookBuildError(str(exc)) from None
        self.settings = settings

    def run(self, requests: Sequence[SearchRequest]) -> list[Lines]:
        refs = [self.remote.remote([r], self.settings) for r in requests]
        try:
            remaining = list(refs)
            while remaining:             # a bounded wait at a time, so Ctrl-C is seen
                raise_if_interrupted()
                _, remaining = self.ray.wait(remaining, num_returns=len(remaining), timeout=self.WAIT_S)
            return [self.ray.get(ref)[0] for ref in refs]
        except BaseException:
            self.cancel(refs)
            raise


# --------------------------------------------------------------------------------------------------
# The book graph
# --------------------------------------------------------------------------------------------------
def negate(value: int) -> int:
    """A child's value seen from its parent: negated, and a win or loss one ply further away."""
    if value > MATE_BOUND:
        return -(value - 1)
    if value < -MATE_BOUND:
        return -(value + 1)
    return -value


def key_text(pos: Position) -> str:
    return position_key(pos).hex()


@dataclass
class BookState:
    """The graph being grown, its roots and counters; saved and loaded as a whole."""

    settings: BuildSettings
    roots: list[list[str]]                               # [label, key]
    nodes: dict[str, Node] = field(default_factory=dict)  # insertion order = creation order
    rounds: int = 0
    searches: int = 0
    engines: list[dict] = field(default_factory=list)     # the engine identities that searched, in order

    # --- values ------------------------------------------------------------------------------
    def values(self) -> dict[str, tuple[int, int]]:
        """Every reachable position's minimax (value, depth); a move back into the path counts as a draw."""
        memo: dict[str, tuple[int, int]] = {}
        on_path: set[str] = set()

        def visit(key: str) -> tuple[int, int]:
            # an explicit stack: book lines may grow longer than Python's recursion limit allows
            stack = [(key, iter(self.nodes[key].expanded.values()))]
            on_path.add(key)
            while stack:
                k, children = stack[-1]
                descended = False
                for child in children:
                    if child not in memo and child not in on_path:
                        on_path.add(child)
                        stack.append((child, iter(self.nodes[child].expanded.values())))
                        descended = True
                        break
                if descended:
                    continue
                stack.pop()
                on_path.discard(k)
                memo[k] = self._value_of(k, memo)
            return memo[key]

        for _, root in self.roots:
            if root in self.nodes and root not in memo:     # (a root not searched yet is not in the book yet)
                visit(root)
        return memo

    def _value_of(self, key: str, memo: dict[str, tuple[int, int]]) -> tuple[int, int]:
        best = None
        for _, value, depth in self.candidates(key, memo):
            if best is None or value > best[0]:
                best = (value, depth)
        if best is None:
            return (-MATE, 0) if self.nodes[key].terminal else (0, 0)
        return best

    def candidates(self, key: str, memo: dict[str, tuple[int, int]]) -> list[tuple[str, int, int]]:
        """(move text, value, depth) of every move the book knows in ``key``: expanded ones, then known ones."""
        node = self.nodes[key]
        out = []
        for text, child in node.expanded.items():
            value, depth = memo.get(child, (0, 0))     # absent: a move back into the current path (a draw)
            out.append((text, negate(value), depth + 1))
        out += [(t, v, d) for t, v, d in node.known]
        return out

    # --- priorities --------------------------------------------------------------------------
    def priorities(self, values: dict[str, tuple[int, int]]) -> list[dict[str, int]]:
        """For each player (0 Black, 1 White), the lowest priority of every reachable position (Dijkstra)."""
        s = self.settings
        omega = s.dropout * PRIORITY_SCALE
        order = {k: i for i, k in enumerate(self.nodes)}
        out = []
        for player in (0, 1):
            dist: dict[str, int] = {}
            heap = [(0, order[root], root) for _, root in self.roots if root in order]
            heapq.heapify(heap)
            while heap:
                d, _, key = heapq.heappop(heap)
                if key in dist:
                    continue
                dist[key] = d
                node = self.nodes[key]
                if not node.expanded:
                    continue
                turn = 0 if node.fen.startswith("B") else 1
                weight = PRIORITY_SCALE if turn == player else s.reply_weight
                best = values[key][0]
                for text, child in node.expanded.items():
                    if child in dist:
                        continue
                    err = _error(best, negate(values.get(child, (0, 0))[0]))
                    heapq.heappush(heap, (d + omega + weight * err, order[child], child))
            out.append(dist)
        return out

    def frontier(self, values: dict[str, tuple[int, int]]) -> list[tuple[int, int, str, str]]:
        """(priority, creation index, position, move) for the best known move of every reachable position."""
        s = self.settings
        omega = s.dropout * PRIORITY_SCALE
        prio = self.priorities(values)
        out = []
        for index, (key, node) in enumerate(self.nodes.items()):
            if not node.known or key not in prio[0]:
                continue
            text, value, _ = node.known[0]
            err = _error(values[key][0], value)
            turn = 0 if node.fen.startswith("B") else 1
            p = min(prio[player][key] + omega + (PRIORITY_SCALE if turn == player else s.reply_weight) * err
                    for player in (0, 1))
            out.append((p, index, key, text))
        out.sort()
        return out

    # --- a round -----------------------------------------------------------------------------
    def plan(self, count: int) -> tuple[list[tuple[str, str, str]], dict[str, Node], list[SearchRequest]]:
        """The next round without changing anything: (expansions, new positions, searches)."""
        values = self.values()
        items = self.frontier(values)[:count]
        expansions: list[tuple[str, str, str]] = []
        new: dict[str, Node] = {}
        requests: list[SearchRequest] = []
        for _, _, key, text in items:
            node = self.nodes[key]
            pos = Position.from_fen(node.fen)
            child = pos.play(pos.parse_move(text))
            child_key = self._add_line(child, new, requests)
            expansions.append((key, text, child_key))
            if len(node.known) == 1:        # its last known move: search the rest for the next alternatives
                done = set(node.expanded) | {text}
                rest = tuple(m.text() for m in pos.legal_moves() if m.text() not in done)
                if rest:
                    requests.append(SearchRequest(key, node.fen, rest))
        return expansions, new, requests

    def _add_line(self, pos: Position, new: dict[str, Node], requests: list[SearchRequest]) -> str:
        """Add ``pos`` (and the forced positions after it) as new positions; a position with a choice gets a
        search request.  Returns ``pos``'s key."""
        first = key_text(pos)
        while True:
            key = key_text(pos)
            if key in self.nodes or key in new:
                return first
            legal = pos.legal_moves()
            node = Node(pos.fen())
            new[key] = node
            if not legal:
                node.terminal = True
                return first
            if len(legal) > 1:
                requests.append(SearchRequest(key, node.fen, None))
                return first
            nxt = pos.play(legal[0])
            node.expanded[legal[0].text()] = key_text(nxt)
            pos = nxt

    def commit(self, expansions: list[tuple[str, str, str]], new: dict[str, Node],
               requests: Sequence[SearchRequest], results: Sequence[Lines]) -> None:
        for key, node in new.items():
            self.nodes[key] = node
        for key, text, child in expansions:
            node = self.nodes[key]
            node.known = [k for k in node.known if k[0] != text]
            node.expanded[text] = child
        for request, lines in zip(requests, results):
            self.nodes[request.key].known = [list(line) for line in lines]
        self.searches += len(requests)
        self.rounds += 1

    def start(self, roots: Sequence[tuple[str, Position]]) -> tuple[dict[str, Node], list[SearchRequest]]:
        """The roots as new positions (not committed) and their searches."""
        new: dict[str, Node] = {}
        requests: list[SearchRequest] = []
        for _, pos in roots:
            self._add_line(pos, new, requests)
        return new, requests

    # --- output ------------------------------------------------------------------------------
    def book_entries(self) -> dict[bytes, list[BookMove]]:
        """Every position with its moves (expanded and known) and their values, best first."""
        values = self.values()
        out: dict[bytes, list[BookMove]] = {}
        for key in self.nodes:
            if key not in values:
                continue
            moves = [BookMove(_squares(text), value, depth) for text, value, depth in self.candidates(key, values)]
            if moves:
                moves.sort(key=lambda m: (-m.value, m.squares))
                out[bytes.fromhex(key)] = moves
        return out

    def provenance(self) -> dict[str, Any]:
        return {"builder": "uci-checkers book build (drop-out expansion)", "settings": asdict(self.settings),
                "roots": len(self.roots), "positions": len(self.nodes), "searches": self.searches,
                "rounds": self.rounds, "engines": self.engines}

    # --- files -------------------------------------------------------------------------------
    def to_bytes(self) -> bytes:
        doc = {"format": STATE_FORMAT, "settings": asdict(self.settings), "roots": self.roots,
               "rounds": self.rounds, "searches": self.searches, "engines": self.engines,
               "nodes": [[k, n.fen, n.expanded, n.known, n.terminal] for k, n in self.nodes.items()]}
        return zlib.compress(json.dumps(doc, separators=(",", ":")).encode("utf-8"), 6)

    @classmethod
    def from_bytes(cls, data: bytes, where: str) -> "BookState":
        try:
            doc = json.loads(zlib.decompress(data).decode("utf-8"))
            if doc.get("format") != STATE_FORMAT:
                raise BookBuildError(f"book state {where} has format {doc.get('format')!r}, "
                                     f"this version reads {STATE_FORMAT}")
            state = cls(BuildSettings(**doc["settings"]), [list(r) for r in doc["roots"]], {}, int(doc["rounds"]),
                        int(doc["searches"]), list(doc.get("engines", [])))
            for key, fen, expanded, known, terminal in doc["nodes"]:
                state.nodes[key] = Node(fen, dict(expanded), [list(k) for k in known], bool(terminal))
        except (zlib.error, UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
            if isinstance(exc, BookBuildError):
                raise
            raise BookBuildError(f"book state {where} is unreadable ({type(exc).__name__}); remove it to start "
                                 f"again") from None
        return state


def _error(best: int, value: int) -> int:
    """How much worse than the best a move is, in centi-men (bounded: mate scores are far apart)."""
    return max(0, min(10000, best - value))


def _squares(text: str) -> tuple[int, ...]:
    return tuple(int(s) for s in text.replace("x", "-").split("-"))


# --------------------------------------------------------------------------------------------------
# The resumable build
# --------------------------------------------------------------------------------------------------
class Progress:
    """The build's progress (:class:`~uci_checkers.util.progress.Progress`): on a terminal one live line with
    the share of the target reached, elsewhere a plain line every half minute; notes (the roots, a resume, the
    end) stay in both cases."""

    def __init__(self, stream: Optional[TextIO], target: int, quiet: bool = False) -> None:
        self.target = max(1, target)
        self.progress = ProgressLine(None if quiet else stream, "book build")
        self.t0 = time.monotonic()
        self.start_positions: Optional[int] = None

    def update(self, state: BookState, force: bool = False) -> None:
        now = time.monotonic()
        n = len(state.nodes)
        if self.start_positions is None:
            self.start_positions = n
        frac = min(1.0, n / self.target)
        rate = (n - self.start_positions) / max(1e-9, now - self.t0)
        eta = f", {(self.target - n) / rate / 60:.0f} min left" if rate > 0 and n < self.target else ""
        self.progress.update(f"{n:,}/{self.target:,} positions ({100 * frac:.0f}%), {state.searches:,} searches, "
                             f"round {state.rounds:,}, {now - self.t0:.0f} s{eta}", frac, force=force)

    def line(self, text: str) -> None:
        self.progress.note(text)

    def close(self) -> None:
        self.progress.close()


SIGNATURE_DEPTH = 9


def engine_identity() -> dict[str, Any]:
    """What decides a search's values besides the settings: the search's behaviour (the nodes of a
    depth-9 search of the start position from a cleared table, a fingerprint like ``bench``'s node total,
    unchanged by edits that do not change the search) and the evaluation weights (their checksum)."""
    from ..search.weights import default_weights

    searcher = Searcher(16)
    result = searcher.search(Game(), SearchLimits(depth=SIGNATURE_DEPTH), None, np.zeros(1, dtype=np.int64))
    return {"signature": f"start depth {SIGNATURE_DEPTH}: {result.nodes} nodes",
            "weights": default_weights().checksum[:16]}


def load_state(path: Path) -> Optional[BookState]:
    if not path.exists():
        return None
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise BookBuildError(f"cannot read book state {path}: {exc.strerror}") from None
    return BookState.from_bytes(data, str(path))


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """Ctrl-C and SIGTERM wait until the block is done (a commit or a save is never cut in half): they are
    recorded meanwhile and handed to the handlers in force afterwards."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    sigs = (signal.SIGINT, signal.SIGTERM)
    previous = {sig: signal.signal(sig, lambda signum, frame: caught.append(signum)) for sig in sigs}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if caught:
            handler = previous[caught[0]]
            if callable(handler):
                handler(caught[0], None)
            elif handler != signal.SIG_IGN:
                signal.raise_signal(caught[0])


def save(state: BookState, state_path: Path, book_path: Path) -> None:
    """The state and the book, each written atomically (the book last: it is made from the state)."""
    write_bytes_atomic(state_path, state.to_bytes())
    write_book(book_path, state.book_entries(), state.provenance())


def build(out: Path, state_path: Path, roots: Sequence[tuple[str, Position]], settings: BuildSettings,
          target: int, jobs: int = 1, backend: str = "local", address: Optional[str] = None,
          checkpoint: int = 25, stream: TextIO = sys.stderr, quiet: bool = False,
          explicit: Iterable[str] = (), runner: Any = None) -> BookState:
    """Grow the book in ``state_path`` (created, or resumed) until it holds ``target`` positions; write the
    book to ``out``.  ``explicit``: the settings the user gave (a resume refuses ones that differ from the
    state's; the others are taken from the state).  Ctrl-C (KeyboardInterrupt) saves the finished rounds and
    propagates.  ``runner``: what searches (default: by ``backend`` and ``jobs``): anything with
    ``run(requests) -> lines`` and ``close()``."""
    state = load_state(state_path)
    root_list = [[label, key_text(pos)] for label, pos in roots]
    if state is not None:
        recorded = asdict(state.settings)
        asked = asdict(settings)
        for name in explicit:
            if recorded[name] != asked[name]:
                raise BookBuildError(f"{state_path} was built with {name} {recorded[name]}, not {asked[name]}: "
                                     f"give the same settings (or none) to grow it, or another --state")
        if state.roots != root_list:
            raise BookBuildError(f"{state_path} was built from other roots ({len(state.roots)} positions): "
                                 f"give the same --roots, or another --state")
        settings = state.settings
    settings.check()
    progress = Progress(stream, target, quiet)
    identity = engine_identity() if quiet else announce_if_slow(engine_identity, f"book build: {COMPILING_NOTICE}")
    if runner is None and backend == "ray":
        runner = RayRunner(settings, address)
    elif runner is None and jobs > 1:
        runner = PoolRunner(settings, jobs)
    elif runner is None:
        runner = LocalRunner(settings)
    try:
        if state is None:
            state = BookState(settings, root_list)
            state.engines.append(dict(identity, from_round=0))
            progress.line(f"book build: {len(roots)} roots ({_describe(settings)})")
        else:
            progress.line(f"book build: resuming {state_path}: {len(state.nodes):,} positions, {state.searches:,} "
                          f"searches, {state.rounds:,} rounds ({_describe(settings)})")
            if {k: v for k, v in state.engines[-1].items() if k != "from_round"} != identity:
                progress.line("book build: note: this engine differs from the one that built the state so far "
                              "(recorded in the book's provenance)")
                state.engines.append(dict(identity, from_round=state.rounds))
        saved_at = len(state.nodes)
        while True:
            # the roots first, ``batch`` at a time, then drop-out expansion
            todo = [(label, pos) for label, pos in roots if key_text(pos) not in state.nodes][:settings.batch]
            if todo:
                expansions: list = []
                new, requests = state.start(todo)
            elif len(state.nodes) >= target:
                break
            else:
                expansions, new, requests = state.plan(settings.batch)
                if not expansions:
                    progress.line("book build: nothing left to expand")
                    break
            results = runner.run(requests)
            with _signals_held():
                state.commit(expansions, new, requests, results)
                if len(state.nodes) - saved_at >= checkpoint:
                    save(state, state_path, out)
                    saved_at = len(state.nodes)
            progress.update(state)
        with _signals_held():
            save(state, state_path, out)
        progress.update(state, force=True)
        progress.close()
        progress.line(f"book build: {len(state.nodes):,} positions, {state.searches:,} searches; wrote {out}")
        return state
    except KeyboardInterrupt:
        if state is not None and state.rounds:
            with _signals_held():
                save(state, state_path, out)   # the finished rounds (the one in progress changed nothing)
        raise
    finally:
        progress.close()
        runner.close()


def _describe(s: BuildSettings) -> str:
    limit = (f"depth {s.depth}" if s.depth is not None else "") + (f" nodes {s.nodes}" if s.nodes else "") + \
            (f" movetime {s.movetime_ms} ms" if s.movetime_ms else "")
    return (f"{limit.strip()}, multipv {s.multipv}, dropout {s.dropout}, reply weight {s.reply_weight}%, "
            f"batch {s.batch}")
