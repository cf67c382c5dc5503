"""The generator: solve, verify and store slice by slice, resumable (the command line is
:mod:`uci_checkers.tools.egdb_command`).

``uci-checkers egdb build --pieces N [--dir D] [--jobs J]`` builds every slice with
up to N pieces in dependency order (:func:`uci_checkers.egdb.index.slices_up_to`).
A slice whose file is already present and valid is loaded, never redone, so an
interrupted build (Ctrl-C exits 130) resumes where it stopped.  Every slice is
verified against its successors before it is written.  Slices of one group (same
piece and men counts) do not depend on each other; ``--jobs`` spreads them over
local worker processes (forked, each in its own process group), ``--backend ray``
over Ray tasks (the driver writes every file).

Other subcommands: ``verify`` (re-check stored files), ``info`` (sizes, times,
results per slice), ``probe --fen FEN`` (the stored verdict of one position),
``bench`` (search speed on the bench positions without and with probing).
"""
from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional, TextIO

import numpy as np

from ..util.progress import Progress as ProgressLine
from . import solve as sv
from .index import Slice, build_levels, king_set_counts, men_offsets, slice_size, slices_up_to
from .probe import WLD_LOSS, WLD_WIN, assemble_table, empty_table
from .store import EgdbFileError, read_info, read_slice, slice_path, write_slice

INIT_CHUNK = 1 << 17
MAX_BUILD_PIECES = 8
DEFAULT_DISTANCE_PIECES = 4


def stores_distances(s: Slice, distance_pieces: int) -> bool:
    """Whether slice ``s`` keeps its distances: up to ``distance_pieces`` pieces, and wherever a side has no man.

    Distances cost about three bits a position at five pieces against well under one
    for win/loss/draw alone.  When both sides have men, whoever wins has a man to
    advance, and the search does (promotions lead into slices with distances); a
    side with kings only could win without ever showing progress, so there only
    the distance tells how (measured: without distances there, the engine drew won
    five-piece endings by repetition).
    """
    return s.pieces <= distance_pieces or s.bm == 0 or s.wm == 0


def to_win_loss_draw(codes: np.ndarray) -> np.ndarray:
    """Distances dropped: 0 stays a draw, odd codes (side to move loses) become WLD_LOSS, even ones WLD_WIN."""
    return np.where(codes == 0, 0, np.where(codes & 1, WLD_LOSS, WLD_WIN)).astype(np.uint8)


class EgdbBuildError(Exception):
    """A slice could not be solved (missing dependency, distance overflow) or failed its verification."""


@dataclass
class SolvedSlice:
    slice: Slice
    codes: np.ndarray
    max_distance: int
    results: tuple[int, int, int]    # wins, losses, draws (side to move's view)
    seconds: float
    distances: bool = True


Progress = Callable[[float], None]


def solve_slice(s: Slice, eg: np.ndarray, progress: Optional[Progress] = None, distances: bool = True) -> SolvedSlice:
    """Solve and verify slice ``s``; ``eg`` must hold every slice its captures and promotions lead into.

    ``distances=False`` keeps only win/loss/draw (the distances are still computed,
    and verified, in a game where moves into slices without distances end it).
    """
    t0 = time.perf_counter()
    offsets = men_offsets(s)
    nbk, nwk = king_set_counts(s)
    n = slice_size(s, offsets)
    remaining = np.zeros(n, dtype=np.int16)
    win_at = np.zeros(n, dtype=np.int16)
    loss_floor = np.zeros(n, dtype=np.int16)
    has_draw = np.zeros(n, dtype=np.int8)
    sched_head = np.full(sv.MAX_DISTANCE + 2, -1, dtype=np.int64)
    sched_next = np.full(n, -1, dtype=np.int32)
    stats = np.zeros(sv.STATS_WORDS, dtype=np.int64)
    args = (s.bm, s.bk, s.wm, s.wk, offsets, nbk, nwk)
    report = progress or (lambda fraction: None)
    for lo in range(0, n, INIT_CHUNK):
        sv.init_range(lo, min(n, lo + INIT_CHUNK), *args, eg, remaining, win_at, loss_floor, has_draw,
                      sched_head, sched_next, stats)
        _check_stats(s, stats)
        report(0.4 * min(n, lo + INIT_CHUNK) / n)
    dist = np.full(n, sv.UNSOLVED, dtype=np.int16)
    queue = np.zeros(n, dtype=np.int32)
    last = int(sv.propagate(*args, dist, remaining, win_at, loss_floor, has_draw, sched_head, sched_next, queue,
                            stats))
    _check_stats(s, stats)
    del remaining, win_at, loss_floor, has_draw, sched_next, queue
    codes = np.zeros(n, dtype=np.uint8)
    sv.codes_from_distances(dist, codes)
    del dist
    report(0.55)
    verify_codes(s, codes, eg, lambda f: report(0.55 + 0.45 * f))
    results = np.zeros(3, dtype=np.int64)
    sv.count_results(codes, results)
    if not distances:
        codes = to_win_loss_draw(codes)
    return SolvedSlice(s, codes, max(0, last), (int(results[0]), int(results[1]), int(results[2])),
                       time.perf_counter() - t0, distances)


def verify_codes(s: Slice, codes: np.ndarray, eg: np.ndarray, progress: Optional[Progress] = None,
                 classes_only: bool = False) -> None:
    """Check every value of slice ``s`` against its successors; raises EgdbBuildError on any inconsistency."""
    offsets = men_offsets(s)
    nbk, nwk = king_set_counts(s)
    n = codes.shape[0]
    stats = np.zeros(sv.STATS_WORDS, dtype=np.int64)
    for lo in range(0, n, INIT_CHUNK):
        sv.verify_range(lo, min(n, lo + INIT_CHUNK), s.bm, s.bk, s.wm, s.wk, offsets, nbk, nwk, eg, codes,
                        classes_only, stats)
        _check_stats(s, stats)
        if progress:
            progress(min(n, lo + INIT_CHUNK) / n)
    if stats[sv.ST_MISMATCH]:
        raise EgdbBuildError(f"slice {s}: {int(stats[sv.ST_MISMATCH])} values inconsistent with their successors "
                             f"(first at index {int(stats[sv.ST_FIRST_BAD])})")


def _check_stats(s: Slice, stats: np.ndarray) -> None:
    if stats[sv.ST_ERROR] == 1:
        raise EgdbBuildError(f"slice {s}: a successor of index {int(stats[sv.ST_ERROR_INDEX])} lies in a slice "
                             f"that is not loaded")
    if stats[sv.ST_ERROR] == 2:
        raise EgdbBuildError(f"slice {s}: a distance exceeds {sv.MAX_DISTANCE} plies")


# =============================================================================
# The resumable build
# =============================================================================
class ProgressBar:
    """The build's progress (:class:`~uci_checkers.util.progress.Progress`): on a terminal one live line with
    the whole build's share and the current slice's, elsewhere a plain line every half minute; a line per
    slice in both cases."""

    def __init__(self, stream: TextIO, total_positions: int, quiet: bool = False) -> None:
        self.total = max(1, total_positions)
        self.done = 0
        self.progress = ProgressLine(None if quiet else stream, "egdb build")

    def update(self, label: str, fraction: float, current: int) -> None:
        overall = (self.done + fraction * current) / self.total
        self.progress.update(f"{100 * overall:5.1f}%  {label:<14} {100 * fraction:5.1f}%", overall)

    def line(self, text: str) -> None:
        self.progress.note(text)


def _slice_line(s: Slice, positions: int, max_distance: int, results: tuple[int, int, int], seconds: float,
                file_bytes: int, note: str, distances: bool = True) -> str:
    w, l, d = results
    longest = f"{max_distance:>3}" if distances else "wld"
    return (f"{s.name:<12} {positions:>12,} positions  W {w:>11,} L {l:>11,} D {d:>11,}  longest {longest}"
            f"  {seconds:7.1f} s  {file_bytes:>11,} bytes  {note}")


def _solve_and_write(directory: str, s: Slice, eg: np.ndarray, distances: bool) -> tuple:
    solved = solve_slice(s, eg, distances=distances)
    path = write_slice(Path(directory), s, solved.codes, solved.max_distance, solved.results, solved.seconds,
                       distances)
    return s, solved.codes.shape[0], solved.max_distance, solved.results, solved.seconds, path.stat().st_size


_FORK_TABLE: list[np.ndarray] = []


def _start_worker() -> None:
    """A forked pool worker's set-up: its own process group (Ctrl-C at a terminal reaches only the parent,
    which stops the pool), and the default SIGTERM and SIGINT.  fork copies the parent's Python signal
    handlers; one that does not end the process (a host's, or a tool's) would make ``Pool.terminate``,
    which every level ends with, wait for ever on an idle worker."""
    os.setpgrp()
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _worker(directory: str, s: Slice, distances: bool) -> tuple:
    return _solve_and_write(directory, s, _FORK_TABLE[0], distances)


def _ray_solve(s: Slice, eg: np.ndarray, distances: bool) -> SolvedSlice:
    """The Ray task: solve one slice; the driver writes the file (workers may not share its disk)."""
    return solve_slice(s, eg, distances=distances)


class RaySolver:
    """Independent slices as Ray tasks (a local instance, or a cluster at ``address``), like the arena's backend."""

    def __init__(self, address: Optional[str] = None) -> None:
        try:
            import ray
        except ImportError as exc:
            raise EgdbBuildError(f"the ray backend needs Ray: pip install 'uci_checkers[cluster]' ({exc})") from None
        from ..util.raycluster import RayConnectError, connect_ray

        self.ray = ray
        try:
            self.started_here = connect_ray(address)
        except RayConnectError as exc:
            raise EgdbBuildError(str(exc)) from None
        self.remote = ray.remote(num_cpus=1, max_retries=1)(_ray_solve)

    def solve(self, slices: list[Slice], eg: np.ndarray, distance_pieces: int):
        """Yield each SolvedSlice as its task finishes."""
        ray = self.ray
        table = ray.put(eg)
        pending = {self.remote.remote(s, table, stores_distances(s, distance_pieces)): s for s in slices}
        try:
            while pending:
                ready, _ = ray.wait(list(pending), num_returns=1, timeout=1.0)
                for ref in ready:
                    pending.pop(ref)
                    yield ray.get(ref)
        finally:
            for ref in pending:
                try:
                    ray.cancel(ref, force=True)
                except Exception:
                    pass

    def close(self) -> None:
        if self.started_here:
            self.ray.shutdown()


def build(directory: Path, pieces: int, jobs: int = 1, stream: TextIO = sys.stderr, quiet: bool = False,
          distance_pieces: int = DEFAULT_DISTANCE_PIECES, backend: str = "local",
          address: Optional[str] = None) -> int:
    """Build (or complete) the databases up to ``pieces`` pieces in ``directory``; returns the number solved.

    Slices keep their distances as :func:`stores_distances` says.  A present slice
    stored with distances where none are wanted is converted in place; one stored
    without distances where they are wanted is solved again.  ``backend="ray"`` solves the
    slices of each group as Ray tasks (``address``: an existing cluster).
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    slices = slices_up_to(pieces)
    sizes = {s: slice_size(s) for s in slices}
    bar = ProgressBar(stream, sum(sizes.values()), quiet)
    t_start = time.perf_counter()
    ray_solver = RaySolver(address) if backend == "ray" else None
    try:
        solved_count = _build_groups(directory, slices, sizes, bar, jobs, distance_pieces, ray_solver)
    finally:
        if ray_solver is not None:
            ray_solver.close()
    total_bytes = sum(slice_path(directory, s).stat().st_size for s in slices)
    bar.line(f"{len(slices)} slices, {sum(sizes.values()):,} positions, {total_bytes:,} bytes "
             f"({8 * total_bytes / max(1, sum(sizes.values())):.3f} bits/position) in {directory}; "
             f"{solved_count} solved in {time.perf_counter() - t_start:.1f} s")
    return solved_count


def _build_groups(directory: Path, slices: list[Slice], sizes: dict[Slice, int], bar: ProgressBar, jobs: int,
                  distance_pieces: int, ray_solver: Optional[RaySolver]) -> int:
    loaded: dict[Slice, tuple[np.ndarray, np.ndarray]] = {}
    eg = empty_table()
    solved_count = 0
    for group in build_levels(slices):
        todo = []
        for s in group:
            wanted = stores_distances(s, distance_pieces)
            if slice_path(directory, s).exists():
                try:
                    codes, info = read_slice(directory, s)
                except EgdbFileError as exc:
                    bar.line(f"{exc}: rebuilding it")
                else:
                    note = "(already built)"
                    if info.distances and not wanted:
                        codes = to_win_loss_draw(codes)
                        write_slice(directory, s, codes, info.max_distance, (info.wins, info.losses, info.draws),
                                    info.seconds, False)
                        info = read_info(slice_path(directory, s))
                        note = "(already built; distances dropped)"
                    if info.distances == wanted:
                        loaded[s] = (codes, men_offsets(s))
                        bar.done += sizes[s]
                        bar.line(_slice_line(s, info.positions, info.max_distance,
                                             (info.wins, info.losses, info.draws), info.seconds, info.file_bytes,
                                             note, info.distances))
                        continue
                    bar.line(f"{s.name}: stored without distances, solving it again with them")
            todo.append(s)
        if todo and ray_solver is not None:
            for solved in ray_solver.solve(todo, eg, distance_pieces):
                s = solved.slice
                path = write_slice(directory, s, solved.codes, solved.max_distance, solved.results, solved.seconds,
                                   solved.distances)
                loaded[s] = (solved.codes, men_offsets(s))
                bar.done += sizes[s]
                bar.line(_slice_line(s, sizes[s], solved.max_distance, solved.results, solved.seconds,
                                     path.stat().st_size, "(ray)", solved.distances))
                solved_count += 1
        elif todo and jobs > 1 and len(todo) > 1:
            _FORK_TABLE[:] = [eg]
            ctx = multiprocessing.get_context("fork")
            with ctx.Pool(min(jobs, len(todo)), initializer=_start_worker) as pool:
                try:
                    pending = [pool.apply_async(_worker, (str(directory), s, stores_distances(s, distance_pieces)))
                               for s in todo]
                    for result in pending:
                        s, n, longest, results, seconds, nbytes = result.get()
                        bar.done += sizes[s]
                        bar.update(s.name, 0.0, 0)
                        bar.line(_slice_line(s, n, longest, results, seconds, nbytes, "",
                                             stores_distances(s, distance_pieces)))
                        solved_count += 1
                except BaseException:
                    pool.terminate()
                    raise
            _FORK_TABLE.clear()
            for s in todo:
                codes, _ = read_slice(directory, s)
                loaded[s] = (codes, men_offsets(s))
        else:
            for s in todo:
                distances = stores_distances(s, distance_pieces)
                solved = solve_slice(s, eg, lambda f, s=s: bar.update(s.name, f, sizes[s]), distances)
                path = write_slice(directory, s, solved.codes, solved.max_distance, solved.results, solved.seconds,
                                   distances)
                loaded[s] = (solved.codes, men_offsets(s))
                bar.done += sizes[s]
                bar.line(_slice_line(s, sizes[s], solved.max_distance, solved.results, solved.seconds,
                                     path.stat().st_size, "", distances))
                solved_count += 1
        eg = assemble_table(loaded)
    return solved_count


def verify_directory(directory: Path, pieces: int, stream: TextIO = sys.stderr) -> int:
    """Re-check every stored slice up to ``pieces`` (checksums and successor consistency); returns the bad count."""
    bad = 0
    loaded: dict[Slice, tuple[np.ndarray, np.ndarray]] = {}
    eg = empty_table()
    for group in build_levels(slices_up_to(pieces)):
        for s in group:
            try:
                codes, info = read_slice(directory, s)
                verify_codes(s, codes, eg, classes_only=not info.distances)
            except (EgdbFileError, EgdbBuildError) as exc:
                stream.write(f"BAD  {exc}\n")
                bad += 1
                continue
            stream.write(f"ok   {s.name}\n")
            loaded[s] = (codes, men_offsets(s))
        eg = assemble_table(loaded)
    return bad
