"""A whole match or tournament: the schedule, resuming, results, statistics, SPRT and the summary.

The schedule is a pure function of the engines, the tournament type, the number
of games per pair and the (seeded) opening order, so the same command line always
gives the same list of games; a game's number is its PDN ``Round``.  Resuming reads
the PDN (:mod:`uci_checkers.rules.pdn`, which replays every move with the rules core),
checks each finished game against the schedule (same number, players, opening
and limits: a resume with other limits is refused rather than mixing them),
counts it and plays only the rest; a game cut off by the interruption is dropped
from the file and played again.  That rewrite is atomic (a temporary file, fsync,
``os.replace``): a kill at any moment leaves the old file or the new one.
"""
from __future__ import annotations

import itertools
import json
import math
import os
import sys
import time
from dataclasses import dataclass, field
from typing import Optional, TextIO

from ..util.atomicfile import write_text_atomic
from ..util.progress import Progress, is_terminal
from ..rules.pdn import PdnError, read_pdn_file, write_game
from .engine import EngineConfig
from .game import (ADJUDICATED_DRAW, NO_MOVES, NO_PROGRESS, REPETITION, GameJob, GameRecord, Settings, limits_tag,
                   time_control_tag)
from .openings import Opening
from .sprt import Sprt
from .stats import PairStats, fmt_error, json_number

TOURNAMENTS = ("match", "roundrobin", "gauntlet")


class MatchError(ValueError):
    """A match that cannot be run as described (bad engines, schedule or resume file)."""


def pairings(n_engines: int, tournament: str) -> list[tuple[int, int]]:
    """Engine index pairs that meet: the first of each pair is the one the statistics favour."""
    if n_engines < 2:
        raise MatchError("a match needs at least two engines")
    if tournament == "match":
        if n_engines != 2:
            raise MatchError(f"a head-to-head match takes exactly two engines ({n_engines} given): "
                             "use --tournament roundrobin or gauntlet")
        return [(0, 1)]
    if tournament == "roundrobin":
        return list(itertools.combinations(range(n_engines), 2))
    if tournament == "gauntlet":
        return [(0, j) for j in range(1, n_engines)]
    raise MatchError(f"unknown tournament type {tournament!r}: use {', '.join(TOURNAMENTS)}")


def schedule(engines: list[EngineConfig], tournament: str, games_per_pair: int,
             openings: list[Opening]) -> list[GameJob]:
    """Every game in play order: opening pair by opening pair, each pairing in turn.

    In opening pair ``k`` every pairing plays opening ``k`` (cycling through the book)
    twice, the first engine of the pairing taking Black first.
    """
    pairs = pairings(len(engines), tournament)
    jobs: list[GameJob] = []
    number = 0
    for k in range((games_per_pair + 1) // 2):
        index = k % len(openings)
        for p, (i, j) in enumerate(pairs):
            for g in range(2):
                if 2 * k + g >= games_per_pair:
                    break
                number += 1
                black, white = (engines[i], engines[j]) if g == 0 else (engines[j], engines[i])
                jobs.append(GameJob(number, p, k, black, white, openings[index], index))
    return jobs


@dataclass
class MatchResult:
    """What a finished (or stopped) match hands back."""

    stats: list[PairStats]
    records: int
    resumed: int
    sprt_decision: Optional[str] = None
    sprt_llr: Optional[float] = None
    stopped_early: bool = False
    history: list[list[dict]] = field(default_factory=list)


class Match:
    """Runs a schedule on a backend and keeps everything a game result changes."""

    def __init__(self, engines: list[EngineConfig], jobs: list[GameJob], settings: Settings,
                 tournament: str = "match", pdn_out: Optional[str] = None, resume: bool = False,
                 overwrite: bool = False, sprt: Optional[Sprt] = None,
                 progress: Optional[TextIO] = None, progress_live: bool = False) -> None:
        self.engines = engines
        self.jobs = jobs
        self.settings = settings
        self.tournament = tournament
        self.pdn_out = pdn_out
        self.sprt = sprt
        self.progress = progress
        # a line per game (every=0); on a terminal one live line with a bar, games of note above it
        self._bar = Progress(progress, live=progress_live, every=0, width=20)
        pairs = pairings(len(engines), tournament)
        self.stats = [PairStats(engines[i].name, engines[j].name) for i, j in pairs]
        self.history: list[list[dict]] = [[] for _ in pairs]
        self.total = len(jobs)
        self.finished = 0
        self.resumed = 0
        self.written: set[int] = set()
        self.decision: Optional[str] = None
        self.last_llr: Optional[float] = None
        self.started = time.monotonic()
        if sprt is not None and len(pairs) != 1:
            raise MatchError("--sprt needs exactly one engine pair (a match, or a gauntlet of two)")
        self._names = {e.name for e in engines}
        if len(self._names) != len(engines):
            raise MatchError("engine names must be unique")
        self._prepare_output(resume, overwrite)

    # --- output file and resume -------------------------------------------
    def _prepare_output(self, resume: bool, overwrite: bool) -> None:
        if not self.pdn_out:
            if resume:
                raise MatchError("--resume needs --pdn-out FILE (the games to resume from)")
            return
        exists = os.path.exists(self.pdn_out) and os.path.getsize(self.pdn_out) > 0
        if exists and not (resume or overwrite):
            raise MatchError(f"{self.pdn_out} exists: use --resume to continue that match or "
                             "--overwrite to start again")
        if exists and resume:
            self._resume(self.pdn_out)
        elif overwrite or not exists:
            open(self.pdn_out, "w", encoding="utf-8").close()

    def _resume(self, path: str) -> None:
        by_number = {job.number: job for job in self.jobs}
        try:
            games = read_pdn_file(path).games   # a broken game is left out of .games: played again
        except (OSError, PdnError) as exc:
            raise MatchError(f"cannot resume from {path}: {exc}") from exc
        done = []
        for g in games:
            if not g.complete or g.result not in ("1-0", "0-1", "1/2-1/2"):
                continue                        # a game cut off by the interruption: play it again
            try:
                number = int(g.tag("Round"))
            except ValueError:
                raise MatchError(f"cannot resume from {path}: a game has Round {g.tag('Round')!r}") from None
            job = by_number.get(number)
            if job is None or (g.tag("Black"), g.tag("White")) != (job.black.name, job.white.name) \
                    or g.tag("Opening") != job.opening.label:
                raise MatchError(f"cannot resume from {path}: game {number} "
                                 f"({g.tag('Black')} - {g.tag('White')}, {g.tag('Opening')}) does not "
                                 "match this schedule (different engines, openings, seed or games?)")
            played, expected = self._limits_of(g), self._expected_limits(job, g)
            if played != expected:
                raise MatchError(f"cannot resume from {path}: game {number} was played with {played}, this "
                                 f"command gives {expected}; resume with the same limits (or start a new "
                                 "--pdn-out)")
            wanted = self.settings.adjudication_tag
            if g.tag("DrawAdjudication") != wanted:
                raise MatchError(f"cannot resume from {path}: game {number} was played with draw adjudication "
                                 f"{g.tag('DrawAdjudication') or 'off'}, this command gives {wanted or 'off'}; "
                                 "resume with the same --adjudicate-draws (or start a new --pdn-out)")
            if number in self.written:
                continue
            self.written.add(number)
            done.append((job, g))
        # Rewrite the file with only the finished games (once each), so a truncated tail
        # disappears; the arena's own games are written back exactly as they were.
        write_text_atomic(path, "".join(write_game(g) + "\n" for _, g in done))
        for job, g in sorted(done, key=lambda t: t[0].number):
            self._count(job.pairing, job.pair_game, g.tag("Black"), g.tag("White"), g.result,
                        g.tag("Termination"))
            self.resumed += 1
        self.finished = self.resumed
        self.jobs = [job for job in self.jobs if job.number not in self.written]

    @staticmethod
    def _limits_of(game) -> str:
        limits = game.tag("Limits")
        return f"limits {limits!r}" if limits else f"TimeControl {game.tag('TimeControl')!r}"

    @staticmethod
    def _expected_limits(job: GameJob, game) -> str:
        """The same kind of text as :meth:`_limits_of` for this job (files of older versions have no Limits)."""
        pair = (job.black.limits, job.white.limits)
        if game.tag("Limits"):
            return f"limits {limits_tag(pair)!r}"
        return f"TimeControl {time_control_tag(pair)!r}"

    # --- results ----------------------------------------------------------
    def _count(self, pairing: int, pair_game: int, black: str, white: str, result: str,
               termination: str) -> None:
        st = self.stats[pairing]
        if result == "1/2-1/2":
            score = 0.5
        else:
            winner = black if result == "1-0" else white
            score = 1.0 if winner == st.a else 0.0
        st.add(score, pair_game, termination)
        tri = st.trinomial()
        llr = None
        if self.sprt is not None:
            llr = self.sprt.llr_pentanomial(st.penta) if st.pairs else 0.0
            self.last_llr = llr
        self.history[pairing].append({
            "games": st.games, "score": st.score,
            "elo": tri.elo if tri else 0.0, "elo_low": tri.elo_low if tri else -math.inf,
            "elo_high": tri.elo_high if tri else math.inf, "llr": llr})

    def on_result(self, record: GameRecord) -> bool:
        """Write, count and report one finished game; ``False`` once SPRT has decided."""
        if record.number in self.written:
            return self.decision is None
        self.written.add(record.number)
        if self.pdn_out:
            with open(self.pdn_out, "a", encoding="utf-8") as f:
                f.write(record.pdn(self.settings.event, self.settings.site))
                f.flush()
                os.fsync(f.fileno())
        self._count(record.pairing, record.pair_game, record.black, record.white, record.result,
                    record.termination)
        self.finished += 1
        if self.sprt is not None and self.decision is None and self.last_llr is not None:
            self.decision = self.sprt.decide(self.last_llr)
        self._show_progress(record)
        return self.decision is None

    def _show_progress(self, record: Optional[GameRecord]) -> None:
        """One line per game, or on a terminal a single live line with a bar (:mod:`uci_checkers.util.progress`).

        Games that did not end by the rules (a forfeit, a crash, the ply cap) get a
        line of their own that stays on screen.
        """
        if self.progress is None:
            return
        st = self.stats[record.pairing] if record is not None else self.stats[0]
        text = (f"[{self.finished}/{self.total}] {st.a} vs {st.b}: "
                f"+{st.wins} ={st.draws} -{st.losses}  {100 * st.score:.1f}%  "
                f"Elo {fmt_error(st.trinomial())}")
        if self.sprt is not None and self.last_llr is not None:
            text += f"  LLR {self.last_llr:.2f} [{self.sprt.lower:.2f}, {self.sprt.upper:.2f}]"
        note = None
        if record is not None and record.termination not in (NO_MOVES, REPETITION, NO_PROGRESS, ADJUDICATED_DRAW):
            note = f"game {record.number} ({record.black} - {record.white}) {record.result}: " \
                   f"{record.termination}" + (f" - {record.detail}" if record.detail else "")
        if self._bar.live:
            if note:
                self._bar.note(note)
            self._bar.update(text, self.finished / self.total if self.total else 1.0, force=True)
        else:
            self._bar.update(text + (f"  ({note})" if note else ""), force=True)

    def run(self, backend) -> MatchResult:
        if self.jobs and self.decision is None:
            backend.run(self.jobs, self.on_result)
        self._bar.close()
        return MatchResult(self.stats, self.finished, self.resumed, self.decision, self.last_llr,
                           self.decision is not None and self.finished < self.total, self.history)

    # --- reports ----------------------------------------------------------
    def table(self) -> str:
        """The final table: one block per engine pair (plus standings for several pairs)."""
        lines = []
        head = (f"{'Engine A':<16} {'Engine B':<16} {'Games':>5} {'W':>4} {'D':>4} {'L':>4} "
                f"{'Score':>6} {'Draws':>6} {'Elo (95%)':>20} {'LOS':>6}")
        lines.append(head)
        lines.append("-" * len(head))
        for st in self.stats:
            lines.append(f"{st.a:<16.16} {st.b:<16.16} {st.games:>5} {st.wins:>4} {st.draws:>4} "
                         f"{st.losses:>4} {100 * st.score:>5.1f}% {100 * st.draw_ratio:>5.1f}% "
                         f"{fmt_error(st.trinomial()):>20} {100 * st.los():>5.1f}%")
        lines.append("")
        for st in self.stats:
            p = st.pentanomial()
            lines.append(f"{st.a} vs {st.b}: pentanomial over {st.pairs} opening pairs "
                         f"[LL, LD, DD+WL, WD, WW] = {st.penta}; Elo {fmt_error(p)}")
            if st.terminations:
                lines.append("  terminations: " + ", ".join(
                    f"{k} {v}" for k, v in sorted(st.terminations.items(), key=lambda kv: -kv[1])))
        if len(self.stats) > 1:
            lines.append("")
            lines.append(f"{'Standings':<20} {'Games':>5} {'Points':>7} {'Score':>6}")
            totals: dict[str, list[float]] = {e.name: [0, 0.0] for e in self.engines}
            for st in self.stats:
                pts = st.wins + 0.5 * st.draws
                totals[st.a][0] += st.games
                totals[st.a][1] += pts
                totals[st.b][0] += st.games
                totals[st.b][1] += st.games - pts
            for name, (g, pts) in sorted(totals.items(), key=lambda kv: -kv[1][1]):
                score = 100 * pts / g if g else 0.0
                lines.append(f"{name:<20.20} {int(g):>5} {pts:>7.1f} {score:>5.1f}%")
        if self.sprt is not None:
            lines.append("")
            verdict = {"H1": f"H1 accepted (elo >= {self.sprt.elo1:g} more likely)",
                       "H0": f"H0 accepted (elo <= {self.sprt.elo0:g} more likely)",
                       None: "no decision yet"}[self.decision]
            llr = self.last_llr if self.last_llr is not None else 0.0
            lines.append(f"{self.sprt.describe()}: LLR {llr:.3f} -> {verdict}")
        return "\n".join(lines)

    def summary(self, extra: Optional[dict] = None) -> dict:
        """The JSON summary for scripts."""
        pairs = []
        for st in self.stats:
            tri, pen = st.trinomial(), st.pentanomial()
            pairs.append({
                "engine_a": st.a, "engine_b": st.b, "games": st.games, "wins": st.wins,
                "draws": st.draws, "losses": st.losses, "score": json_number(st.score),
                "draw_ratio": json_number(st.draw_ratio),
                "elo": json_number(tri.elo) if tri else None,
                "elo_95": [json_number(tri.elo_low), json_number(tri.elo_high)] if tri else None,
                "los": json_number(st.los()),
                "pentanomial": list(st.penta), "pairs": st.pairs,
                "elo_pentanomial": json_number(pen.elo) if pen else None,
                "elo_pentanomial_95": [json_number(pen.elo_low), json_number(pen.elo_high)] if pen else None,
                "terminations": dict(st.terminations),
            })
        out = {
            "tournament": self.tournament,
            "engines": [{"name": e.name, "command": e.resolved_command(), "options": e.options,
                         "limits": e.limits.describe()} for e in self.engines],
            "games_scheduled": self.total, "games_played": self.finished, "games_resumed": self.resumed,
            "pdn": self.pdn_out, "pairs": pairs,
            "elapsed_s": round(time.monotonic() - self.started, 3),
            "draw_adjudication": self.settings.adjudication_tag or None,
        }
        if self.sprt is not None:
            out["sprt"] = {"elo0": self.sprt.elo0, "elo1": self.sprt.elo1, "alpha": self.sprt.alpha,
                           "beta": self.sprt.beta, "lower": self.sprt.lower, "upper": self.sprt.upper,
                           "llr": self.last_llr, "decision": self.decision}
        if extra:
            out.update(extra)
        return out


def write_json(path: str, data: dict) -> None:
    write_text_atomic(path, json.dumps(data, indent=2) + "\n")


def stderr_is_tty() -> bool:
    return is_terminal(sys.stderr)

