"""The generator: solve, verify and store slice by slice, resumable (the command line is
:mod:`uci_checkers.tools.egdb_command`).

``uci-checkers egdb build --pieces N [--dir D] [--jobs J]`` builds every slice with
up to N pieces in dependency order (:func:`uci_checkers.egdb.index.slices_up_to`),
following the plan of :mod:`uci_checkers.egdb.plan`: the values of solved slices
stay in memory only while a later slice needs them.  A slice whose file is
already present and sound is never redone (it is read back when a later slice
needs its values), so an interrupted build (Ctrl-C exits 130) resumes where it
stopped.  Every slice is verified against its successors before it is written.
Slices of one group (same piece and men counts) do not depend on each other;
``--jobs`` spreads them over local worker processes (forked, each in its own
process group), ``--backend ray`` over Ray tasks (each gets the values of its
own successors; the driver writes every file).

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

from ..util.progress import PLAIN_EVERY_S, Progress as ProgressLine
from ..util.raycluster import RayConnectError, RayTasks
from . import solve as sv
from .index import Slice, king_set_counts, men_offsets, slice_size, slices_up_to, successors
from .plan import CHECK, CONVERT, SOLVE, SOLVER_BYTES, Plan, Step, make_plan
from .probe import WLD_LOSS, WLD_WIN, assemble_table
from .store import EgdbFileError, check_file, probe_slice, read_info, read_slice, slice_path, write_slice

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
    cpu_seconds: float = 0.0


Progress = Callable[[float], None]


def solve_slice(s: Slice, eg: np.ndarray, progress: Optional[Progress] = None, distances: bool = True) -> SolvedSlice:
    """Solve and verify slice ``s``; ``eg`` must hold every slice its captures and promotions lead into.

    ``distances=False`` keeps only win/loss/draw (the distances are still computed,
    and verified, in a game where moves into slices without distances end it).
    """
    t0 = time.perf_counter()
    c0 = time.process_time()
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
                       time.perf_counter() - t0, distances, time.process_time() - c0)


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
    slice in both cases (plain lines every ``every`` seconds)."""

    def __init__(self, stream: TextIO, total_positions: int, quiet: bool = False,
                 every: float = PLAIN_EVERY_S) -> None:
        self.total = max(1, total_positions)
        self.done = 0
        self.progress = ProgressLine(None if quiet else stream, "egdb build", every=every)

    def update(self, label: str, fraction: float, current: int) -> None:
        overall = (self.done + fraction * current) / self.total
        self.progress.update(f"{100 * overall:5.1f}%  {label:<14} {100 * fraction:5.1f}%", overall)

    def line(self, text: str) -> None:
        self.progress.note(text)


def _slice_line(s: Slice, positions: int, max_distance: int, results: tuple[int, int, int], seconds: float,
                file_bytes: int, note: str, distances: bool = True, cpu_seconds: Optional[float] = None) -> str:
    w, l, d = results
    longest = f"{max_distance:>3}" if distances else "wld"
    cpu = f" (CPU {cpu_seconds:7.1f} s)" if cpu_seconds is not None else ""
    return (f"{s.name:<12} {positions:>12,} positions  W {w:>11,} L {l:>11,} D {d:>11,}  longest {longest}"
            f"  {seconds:7.1f} s{cpu}  {file_bytes:>11,} bytes  {note}")


def _solve_and_write(directory: str, s: Slice, eg: np.ndarray, distances: bool) -> tuple:
    solved = solve_slice(s, eg, distances=distances)
    path = write_slice(Path(directory), s, solved.codes, solved.max_distance, solved.results, solved.seconds,
                       distances, solved.cpu_seconds)
    return (s, solved.codes.shape[0], solved.max_distance, solved.results, solved.seconds, solved.cpu_seconds,
            path.stat().st_size)


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


def _ray_solve(s: Slice, distances: bool, uses: list[Slice], *values: np.ndarray) -> SolvedSlice:
    """The Ray task: solve one slice from its successors' values (``values[i]`` those of ``uses[i]``,
    top-level arguments so that Ray fetches them); the driver writes the file (workers may not share its
    disk).  A table points into its own process's memory, so the task assembles its own."""
    return solve_slice(s, assemble_table({d: (codes, men_offsets(d)) for d, codes in zip(uses, values)}),
                       distances=distances)


class RaySolver(RayTasks):
    """Independent slices as Ray tasks (a local instance, or a cluster at ``address``), like the arena's backend."""

    def __init__(self, address: Optional[str] = None) -> None:
        try:
            super().__init__(_ray_solve, address)
        except RayConnectError as exc:
            raise EgdbBuildError(str(exc)) from None

    def solve(self, slices: list[Slice], values: dict[Slice, np.ndarray], distance_pieces: int):
        """Yield each SolvedSlice as its task finishes (each task gets the values of its own successors)."""
        ray = self.ray
        refs = {d: ray.put(codes) for d, codes in values.items()}
        pending = {}
        for s in slices:
            uses = [d for d in successors(s) if d in refs]
            pending[self.remote.remote(s, stores_distances(s, distance_pieces), uses, *(refs[d] for d in uses))] = s
        try:
            while pending:
                ready, _ = ray.wait(list(pending), num_returns=1, timeout=1.0)
                for ref in ready:
                    pending.pop(ref)
                    yield ray.get(ref)
        finally:
            self.cancel(pending)


class _Values:
    """The solved slices' values a build still needs, in memory (one byte a position), and a probe table
    of any set of them; a slice's values are dropped once the last step that needs them is done."""

    def __init__(self, plan: Plan) -> None:
        self.users: dict[Slice, int] = {}
        for st in plan.steps:
            for d in st.uses:
                self.users[d] = self.users.get(d, 0) + 1
        self.codes: dict[Slice, np.ndarray] = {}

    def add(self, s: Slice, codes: np.ndarray) -> None:
        if self.users.get(s, 0) > 0:
            self.codes[s] = codes

    def raw(self, slices) -> dict[Slice, tuple[np.ndarray, np.ndarray]]:
        return {d: (self.codes[d], men_offsets(d)) for d in slices}

    def table(self, slices) -> np.ndarray:
        return assemble_table(self.raw(slices))

    def release(self, step: Step) -> None:
        for d in step.uses:
            self.users[d] -= 1
            if self.users[d] == 0:
                self.codes.pop(d, None)

    @property
    def bytes(self) -> int:
        return sum(c.shape[0] for c in self.codes.values())


def _present_action(directory: Path, s: Slice, wanted: bool, bar: ProgressBar, thorough: bool = True) -> str:
    """What a build does with slice ``s`` given its file: CHECK (present and sound), CONVERT (present
    with distances that are not wanted) or SOLVE (absent, unreadable, or without wanted distances).
    ``thorough``: check the block data's checksum too, not only the header."""
    path = slice_path(directory, s)
    if not path.exists():
        return SOLVE
    try:
        info = check_file(directory, s) if thorough else read_info(path)
    except EgdbFileError as exc:
        bar.line(f"{exc}: rebuilding it")
        return SOLVE
    if info.distances and not wanted:
        return CONVERT
    if wanted and not info.distances:
        bar.line(f"{s.name}: stored without distances, solving it again with them")
        return SOLVE
    return CHECK


def build_plan(directory: Path, pieces: int, jobs: int = 1, distance_pieces: int = DEFAULT_DISTANCE_PIECES,
               stream: TextIO = sys.stderr) -> Plan:
    """The plan a build in ``directory`` would follow (present files judged by their headers only)."""
    bar = ProgressBar(stream, 1)
    actions = {s: SOLVE for s in slices_up_to(pieces)}
    if Path(directory).is_dir():
        actions = {s: _present_action(Path(directory), s, stores_distances(s, distance_pieces), bar, False)
                   for s in actions}
    return make_plan(pieces, actions, jobs)


def build(directory: Path, pieces: int, jobs: int = 1, stream: TextIO = sys.stderr, quiet: bool = False,
          distance_pieces: int = DEFAULT_DISTANCE_PIECES, backend: str = "local",
          address: Optional[str] = None, progress_every: float = PLAIN_EVERY_S) -> int:
    """Build (or complete) the databases up to ``pieces`` pieces in ``directory``; returns the number solved.

    Slices keep their distances as :func:`stores_distances` says.  A present slice
    stored with distances where none are wanted is converted in place; one stored
    without distances where they are wanted is solved again.  The steps and their
    memory follow :func:`uci_checkers.egdb.plan.make_plan` (stated before the first
    slice).  ``backend="ray"`` solves the slices of each group as Ray tasks
    (``address``: an existing cluster).
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    slices = slices_up_to(pieces)
    sizes = {s: slice_size(s) for s in slices}
    bar = ProgressBar(stream, sum(sizes.values()), quiet, progress_every)
    actions = {s: _present_action(directory, s, stores_distances(s, distance_pieces), bar) for s in slices}
    plan = make_plan(pieces, actions, jobs)
    if plan.solved:
        big = max(plan.solved, key=lambda st: st.positions)
        bar.line(f"plan: {len(plan.solved)} of {len(slices)} slices to solve, "
                 f"{sum(st.positions for st in plan.solved):,} positions; largest {big.slice.name} "
                 f"({big.positions:,} positions): {SOLVER_BYTES * big.positions / 1e9:.2f} GB of work arrays, "
                 f"{big.memory / 1e9:.2f} GB with the values in memory then; peak {plan.peak_memory / 1e9:.2f} GB "
                 f"with {jobs} job(s)")
    t_start = time.perf_counter()
    ray_solver = RaySolver(address) if backend == "ray" and plan.solved else None
    try:
        solved_count = _walk(directory, plan, bar, jobs, distance_pieces, ray_solver)
    finally:
        if ray_solver is not None:
            ray_solver.close()
    total_bytes = sum(slice_path(directory, s).stat().st_size for s in slices)
    bar.line(f"{len(slices)} slices, {sum(sizes.values()):,} positions, {total_bytes:,} bytes "
             f"({8 * total_bytes / max(1, sum(sizes.values())):.3f} bits/position) in {directory}; "
             f"{solved_count} solved in {time.perf_counter() - t_start:.1f} s")
    return solved_count


def _walk(directory: Path, plan: Plan, bar: ProgressBar, jobs: int, distance_pieces: int,
          ray_solver: Optional[RaySolver]) -> int:
    values = _Values(plan)
    solved_count = 0
    for group in plan.groups:
        todo = []
        for st in group:
            s = st.slice
            if st.action == SOLVE:
                todo.append(st)
                continue
            if st.action == CHECK:
                info = read_info(slice_path(directory, s))
                note = "(already built)"
            else:
                try:
                    codes, info = read_slice(directory, s, values.table(st.uses))
                except EgdbFileError as exc:
                    raise EgdbBuildError(f"{exc}; delete it and run the build again") from None
                note = "(already built)"
                if st.action == CONVERT:
                    codes = to_win_loss_draw(codes)
                    write_slice(directory, s, codes, info.max_distance, (info.wins, info.losses, info.draws),
                                info.seconds, False, info.cpu_seconds)
                    info = read_info(slice_path(directory, s))
                    note = "(already built; distances dropped)"
                values.add(s, codes)
            bar.done += st.positions
            bar.line(_slice_line(s, info.positions, info.max_distance, (info.wins, info.losses, info.draws),
                                 info.seconds, info.file_bytes, note, info.distances))
        if todo:
            solved_count += _solve_group(directory, todo, values, bar, jobs, distance_pieces, ray_solver)
        for st in group:
            values.release(st)
    return solved_count


def _solve_group(directory: Path, todo: list[Step], values: _Values, bar: ProgressBar, jobs: int,
                 distance_pieces: int, ray_solver: Optional[RaySolver]) -> int:
    """Solve, verify and write the slices of one group (they do not depend on each other)."""
    count = 0
    if ray_solver is not None:
        needed = {d for st in todo for d in st.uses}
        by_slice = {st.slice: st for st in todo}
        for solved in ray_solver.solve([st.slice for st in todo], {d: values.codes[d] for d in needed},
                                       distance_pieces):
            s = solved.slice
            path = write_slice(directory, s, solved.codes, solved.max_distance, solved.results, solved.seconds,
                               solved.distances, solved.cpu_seconds)
            values.add(s, solved.codes)
            bar.done += by_slice[s].positions
            bar.line(_slice_line(s, by_slice[s].positions, solved.max_distance, solved.results, solved.seconds,
                                 path.stat().st_size, "(ray)", solved.distances, solved.cpu_seconds))
            count += 1
        return count
    if jobs > 1 and len(todo) > 1:
        _FORK_TABLE[:] = [values.table({d for st in todo for d in st.uses})]
        ctx = multiprocessing.get_context("fork")
        with ctx.Pool(min(jobs, len(todo)), initializer=_start_worker) as pool:
            try:
                pending = [pool.apply_async(_worker, (str(directory), st.slice,
                                                      stores_distances(st.slice, distance_pieces)))
                           for st in todo]
                for result in pending:
                    s, n, longest, results, seconds, cpu, nbytes = result.get()
                    bar.done += n
                    bar.update(s.name, 0.0, 0)
                    bar.line(_slice_line(s, n, longest, results, seconds, nbytes, "",
                                         stores_distances(s, distance_pieces), cpu))
                    count += 1
            except BaseException:
                pool.terminate()
                raise
        _FORK_TABLE.clear()
        for st in todo:
            if values.users.get(st.slice, 0) > 0:
                codes, _ = read_slice(directory, st.slice,
                                      values.table([d for d in st.uses if d.pieces < st.slice.pieces]))
                values.add(st.slice, codes)
        return count
    for st in todo:
        s = st.slice
        distances = stores_distances(s, distance_pieces)
        solved = solve_slice(s, values.table(st.uses), lambda f, s=s: bar.update(s.name, f, st.positions), distances)
        path = write_slice(directory, s, solved.codes, solved.max_distance, solved.results, solved.seconds,
                           distances, solved.cpu_seconds)
        values.add(s, solved.codes)
        bar.done += st.positions
        bar.line(_slice_line(s, st.positions, solved.max_distance, solved.results, solved.seconds,
                             path.stat().st_size, "", distances, solved.cpu_seconds))
        count += 1
    return count


def verify_directory(directory: Path, pieces: int, stream: TextIO = sys.stderr) -> int:
    """Re-check every stored slice up to ``pieces``: checksums, every value against its successors, and
    every value read back through the probe the search uses; returns the number of bad slices."""
    actions = {s: SOLVE for s in slices_up_to(pieces)}       # every slice needs all its successors
    plan = make_plan(pieces, actions)
    values = _Values(plan)
    bad = 0
    for group in plan.groups:
        for st in group:
            s = st.slice
            missing = [d.name for d in st.uses if d not in values.codes]
            if missing:
                stream.write(f"BAD  {s.name}: not checked, it leads into bad slices ({', '.join(missing)})\n")
                bad += 1
                continue
            try:
                eg = values.table(st.uses)
                codes, info = read_slice(directory, s, eg)
                verify_codes(s, codes, eg, classes_only=not info.distances)
                probed = probe_slice(directory, s, values.raw(d for d in st.uses if d.pieces < s.pieces))
                if not np.array_equal(probed, codes):
                    raise EgdbBuildError(f"slice {s}: {int(np.count_nonzero(probed != codes))} values read through "
                                         f"the probe differ from the file's")
            except (EgdbFileError, EgdbBuildError) as exc:
                stream.write(f"BAD  {exc}\n")
                bad += 1
                continue
            stream.write(f"ok   {s.name}\n")
            values.add(s, codes)
        for st in group:
            values.release(st)
    return bad
