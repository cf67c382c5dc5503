"""The build plan: which slice is solved, read back or only checked, in which order, with what memory,
and estimates of time and size (``uci-checkers egdb build --dry-run`` prints it; the builder follows it).

Everything comes from the index code: the slices and their sizes
(:func:`uci_checkers.egdb.index.slices_up_to`, :func:`~uci_checkers.egdb.index.slice_size`)
and the slices a move can lead into (:func:`~uci_checkers.egdb.index.successors`).
Solving a slice needs the values of all its successors in memory, one byte a
position; reading a finished slice back from its file needs those with fewer
pieces (its capture positions are computed from them).  A slice's values stay in
memory exactly as long as a later step still needs them, so the memory of a
step is the values alive then plus the solver's work arrays
(``SOLVER_BYTES`` a position).

Times and sizes are estimates: positions times the CPU cost and the bits a
position measured for each piece count on this project's own builds
(``CPU_NS_PER_POSITION``, ``BITS_PER_POSITION``; larger piece counts extrapolate
the trend of the last two measured ones).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Optional

from .index import MAN_SQUARES, Slice, build_levels, colex_unrank, king_set_counts, slice_size, slices_up_to, \
    successors

SOLVER_BYTES = 17          # int16 remaining, win_at, loss_floor, dist; int8 has_draw; int32 sched_next, queue
INDEX_LIMIT = 2 ** 31      # the solver's queues are int32: a larger slice needs them widened first
# measured on this project's builds (one process on a shared 2-core x86-64 machine; README, "Endgame
# databases"): CPU nanoseconds a position to solve, verify and write a slice, and the files' bits a position
CPU_NS_PER_POSITION = {2: 1200.0, 3: 1200.0, 4: 1200.0, 5: 1200.0, 6: 1250.0}
BITS_PER_POSITION = {2: 2.03, 3: 2.07, 4: 1.42, 5: 1.20, 6: 1.1}

SOLVE, READ, CONVERT, CHECK = "solve", "read", "convert", "check"


def _measured(table: dict[int, float], pieces: int) -> float:
    """The measured figure for ``pieces``, or the trend of the last two measured ones beyond them."""
    if pieces in table:
        return table[pieces]
    top = max(table)
    ratio = table[top] / table[top - 1]
    return table[top] * ratio ** (pieces - top)


@dataclass
class Step:
    """What the builder does with one slice."""

    slice: Slice
    action: str                     # SOLVE, READ (its values are needed later), CONVERT (drop distances), CHECK
    positions: int
    uses: list[Slice]               # slices whose values it needs in memory
    kept: bool                      # its own values stay in memory for later steps
    level: int                      # dependency level: 0 for 2 pieces, else 1 + the highest of its successors
    live_bytes: int = 0             # values in memory while it runs (its uses and everything kept for later)
    memory: int = 0                 # live_bytes + its own work arrays
    cpu_seconds: float = 0.0        # estimated (SOLVE and CONVERT only)
    file_bytes: float = 0.0         # estimated (SOLVE and CONVERT)
    group: int = 0                  # index of its build group (same piece and men counts)


@dataclass
class Plan:
    pieces: int
    steps: list[Step]
    jobs: int = 1
    peak_memory: int = 0            # the largest memory of a group's steps run ``jobs`` at a time
    peak_step: Optional[Step] = None
    groups: list[list[Step]] = field(default_factory=list)

    @property
    def solved(self) -> list[Step]:
        return [st for st in self.steps if st.action == SOLVE]


def dependency_levels(slices: Iterable[Slice]) -> dict[Slice, int]:
    """Level of each slice: 0 without successors, else 1 + the highest level among them (slices of one
    level never depend on each other: a cluster may solve them all at once)."""
    level: dict[Slice, int] = {}
    for s in slices:        # build order: successors come first
        level[s] = 1 + max((level[d] for d in successors(s)), default=-1)
    return level


def make_plan(pieces: int, actions: Optional[dict[Slice, str]] = None, jobs: int = 1) -> Plan:
    """The plan of a build up to ``pieces`` pieces.  ``actions`` says what is to be done with each slice
    (default: solve all); a CHECK slice needed by a later step becomes a READ."""
    slices = slices_up_to(pieces)
    actions = dict(actions or {s: SOLVE for s in slices})
    sizes = {s: slice_size(s) for s in slices}
    level = dependency_levels(slices)

    def uses(s: Slice) -> list[Slice]:
        if actions[s] == SOLVE:
            return sorted(successors(s), key=slices.index)
        if actions[s] in (READ, CONVERT):
            return sorted((d for d in successors(s) if d.pieces < s.pieces), key=slices.index)
        return []

    # a slice whose values a later step needs is read back (and that needs its own smaller successors)
    changed = True
    while changed:
        changed = False
        needed = {d for s in slices for d in uses(s)}
        for s in slices:
            if s in needed and actions[s] == CHECK:
                actions[s] = READ
                changed = True
    users = {s: 0 for s in slices}
    for s in slices:
        for d in uses(s):
            users[d] += 1
    live: dict[Slice, int] = {}
    steps: list[Step] = []
    plan = Plan(pieces, steps, jobs)
    for g, group in enumerate(build_levels(slices)):
        group_steps = []
        for s in group:
            n = sizes[s]
            st = Step(s, actions[s], n, uses(s), users[s] > 0, level[s], group=g)
            if st.action in (SOLVE, CONVERT):
                st.cpu_seconds = n * _measured(CPU_NS_PER_POSITION, s.pieces) * 1e-9
                st.file_bytes = n * _measured(BITS_PER_POSITION, s.pieces) / 8
                if st.action == CONVERT:
                    st.cpu_seconds *= 0.1
            steps.append(st)
            group_steps.append(st)
        # the group's steps run while the values from before the group are alive
        before = sum(live.values())
        for st in group_steps:
            own = SOLVER_BYTES * st.positions if st.action == SOLVE else 2 * st.positions if st.action != CHECK else 0
            st.live_bytes = before
            st.memory = before + own
        # jobs at a time: the largest work arrays together, plus the group's finished values kept meanwhile
        works = sorted((st.memory - before for st in group_steps), reverse=True)
        kept_here = sum(st.positions for st in group_steps if st.kept)
        peak = before + sum(works[:max(1, jobs)]) + kept_here
        if peak > plan.peak_memory:
            plan.peak_memory = peak
            plan.peak_step = max(group_steps, key=lambda st: st.memory)
        for st in group_steps:
            if st.kept:
                live[st.slice] = st.positions
        for st in group_steps:
            for d in st.uses:
                users[d] -= 1
                if users[d] == 0:
                    live.pop(d, None)
        plan.groups.append(group_steps)
    return plan


def schedule(steps: list[Step], workers: int) -> tuple[float, list[tuple[float, float, Step]]]:
    """List scheduling of the SOLVE steps on ``workers`` one-core workers, each slice started once its
    successors are solved, the longest remaining chain first: ``(wall seconds, [(start, end, step)])``."""
    todo = {st.slice: st for st in steps if st.action == SOLVE}
    below = {s: [d for d in st.uses if d in todo] for s, st in todo.items()}
    above: dict[Slice, list[Slice]] = {s: [] for s in todo}
    for s, ds in below.items():
        for d in ds:
            above[d].append(s)
    chain: dict[Slice, float] = {}
    for s in reversed(list(todo)):
        chain[s] = todo[s].cpu_seconds + max((chain[u] for u in above[s]), default=0.0)
    done_at: dict[Slice, float] = {}
    free = [0.0] * max(1, workers)
    timeline = []
    waiting = dict(todo)
    while waiting:
        ready = [s for s in waiting if all(d in done_at for d in below[s])]
        s = max(ready, key=lambda x: chain[x])
        w = min(range(len(free)), key=lambda i: free[i])
        start = max([free[w]] + [done_at[d] for d in below[s]])
        end = start + waiting.pop(s).cpu_seconds
        free[w] = end
        done_at[s] = end
        timeline.append((start, end, todo[s]))
    return max(done_at.values(), default=0.0), timeline


def split_sizes(s: Slice) -> dict[tuple[int, int], int]:
    """Positions of slice ``s`` by the rows of each side's most advanced man (black's row counted from
    Black's side, white's from White's; -1 for a side without men), from the index's own men placements.

    A man only moves forward, so these parts depend only on parts whose leading men are as far or
    further advanced (and on other slices): a slice too large for one task can be solved part by part,
    the most advanced parts first, as Chinook's and KingsRow's builders do.  The solver does not split
    slices yet; the plan reports how large the parts would be.
    """
    from math import comb

    nbk, nwk = king_set_counts(s)
    kings = nbk * nwk * 2
    out: dict[tuple[int, int], int] = {}
    white_squares = list(range(4, 32))               # square index 4..31 (squares 5-32)
    for r in range(comb(MAN_SQUARES, s.bm)):
        black = int(colex_unrank(r, s.bm, 0))
        rb = (black.bit_length() - 1) // 4 if black else -1
        free = [q for q in white_squares if not black >> q & 1]
        if s.wm == 0:
            out[(rb, -1)] = out.get((rb, -1), 0) + kings
            continue
        for row in range(1, 8):                      # white's most advanced man on board row ``row``
            rw = 7 - row
            at_or_beyond = sum(1 for q in free if q // 4 >= row)   # white advances toward row 0: its
            beyond = sum(1 for q in free if q // 4 > row)          # most advanced man is its lowest
            n = comb(at_or_beyond, s.wm) - comb(beyond, s.wm)
            if n:
                out[(rb, rw)] = out.get((rb, rw), 0) + n * kings
    return out


def _gb(n: float) -> str:
    return f"{n / 1e9:.2f} GB" if n >= 1e8 else f"{n / 1e6:.1f} MB"


def _duration(seconds: float) -> str:
    if seconds >= 86400:
        return f"{seconds / 86400:.1f} days"
    if seconds >= 3600:
        return f"{seconds / 3600:.1f} h"
    if seconds >= 60:
        return f"{seconds / 60:.1f} min"
    return f"{seconds:.0f} s"


def describe(plan: Plan, workers: Iterable[int] = (1, 16, 64, 256)) -> list[str]:
    """The plan as text: one line per group and per piece count, the largest slice, memory, time, size."""
    out = [f"plan for {plan.pieces} pieces: {len(plan.steps)} slices, {len(plan.solved)} to solve "
           f"({sum(st.positions for st in plan.solved):,} positions)"]
    out.append(f"{'group':>5} {'pcs':>3} {'men':>3} {'slices':>6} {'positions':>15} {'largest slice':>26} "
               f"{'task memory':>12} {'CPU (est.)':>11} {'file (est.)':>11} {'levels':>7}")
    for g, group in enumerate(plan.groups):
        work = [st for st in group if st.action == SOLVE]
        if not work:
            continue
        big = max(work, key=lambda st: st.positions)
        levels = sorted({st.level for st in work})
        out.append(f"{g:>5} {big.slice.pieces:>3} {big.slice.men:>3} {len(work):>6} "
                   f"{sum(st.positions for st in work):>15,} {big.slice.name:>12} {big.positions:>13,} "
                   f"{_gb(max(st.memory for st in work)):>12} {_duration(sum(st.cpu_seconds for st in work)):>11} "
                   f"{_gb(sum(st.file_bytes for st in work)):>11} {levels[0]:>3}-{levels[-1]:<3}")
    by_pieces: dict[int, list[Step]] = {}
    for st in plan.solved:
        by_pieces.setdefault(st.slice.pieces, []).append(st)
    for n, sts in sorted(by_pieces.items()):
        pos = sum(st.positions for st in sts)
        out.append(f"{n} pieces: {len(sts)} slices, {pos:,} positions, about "
                   f"{_gb(sum(st.file_bytes for st in sts))} on disk "
                   f"({_measured(BITS_PER_POSITION, n):.2f} bits/position), about "
                   f"{_duration(sum(st.cpu_seconds for st in sts))} of CPU")
    if plan.solved:
        big = max(plan.solved, key=lambda st: st.positions)
        out.append(f"largest slice {big.slice.name}: {big.positions:,} positions, "
                   f"{_gb(SOLVER_BYTES * big.positions)} of solver arrays + {_gb(big.live_bytes)} of values "
                   f"in memory = {_gb(big.memory)}")
        out.append(f"peak memory with {plan.jobs} job(s): {_gb(plan.peak_memory)} (group of {plan.peak_step.slice.name})")
        parts = split_sizes(big.slice)
        largest_part = max(parts.values())
        out.append(f"split by both sides' most advanced men, {big.slice.name} has {len(parts)} parts, the largest "
                   f"{largest_part:,} positions ({_gb(SOLVER_BYTES * largest_part)} of solver arrays)")
        wide = [st for st in plan.solved if st.positions >= INDEX_LIMIT]
        if wide:
            out.append(f"{len(wide)} slices have 2**31 positions or more (the largest {big.positions:,}): the "
                       f"solver's int32 queues must be widened to int64 first (+8 bytes a position)")
        for w in workers:
            wall, _ = schedule(plan.steps, w)
            out.append(f"  {w:>4} workers: about {_duration(wall)} of wall time (critical path first; each task "
                       f"needs up to {_gb(max(st.memory - st.live_bytes + sum(slice_size(d) for d in st.uses) for st in plan.solved))})")
    return out
