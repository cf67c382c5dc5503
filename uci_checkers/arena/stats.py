"""Match statistics: Elo from a score, error bars, LOS, trinomial and pentanomial estimates.

Model: the logistic Elo curve, ``score = 1 / (1 + 10 ** (-elo / 400))``.

*Trinomial*: every game is an independent sample worth 1, 1/2 or 0.  The mean
score's standard error is ``sqrt(var / n)`` with the sample variance of the
per-game scores; the 95% interval is ``mean +- 1.96 * se`` mapped through the
Elo curve (so it is not symmetric in Elo).  Samples that are all the same (every
game won, every game drawn, every opening pair split 1-1) have no spread to
measure, and the normal interval would be a point (``+-0.0``): their interval is
Wilson's score interval, which assumes the largest spread a score of that mean can
have.  A perfect score then prints as ``+inf [+x, +inf]`` (``[n / (n + 1.96^2), 1]``
in score, ``x`` growing with the number of games), two drawn pairs as ``+0.0 (too
few games)``: an interval that spans every Elo difference is printed as that.

*Pentanomial*: games come in opening pairs (the same opening, colours
reversed).  A pair scores 0, 1/2, 1, 3/2 or 2 points; counting pairs in those
five bins (LL, LD, DD+WL, WD, WW) and treating each pair as one sample (worth its
points / 2) removes the opening's bias from the variance: this is the honest
error bar when openings are unbalanced, and it is what SPRT uses.

LOS (likelihood of superiority) is the normal approximation
``Phi((W - L) / sqrt(W + L))``: the probability that the first engine is
stronger, given the decisive games.
"""
from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Optional, Sequence

Z95 = 1.959963984540054          # two-sided 95% quantile of the normal distribution
PENTA_VALUES = (0.0, 0.25, 0.5, 0.75, 1.0)   # per-game score of a pair with 0..2 points
TRI_VALUES = (0.0, 0.5, 1.0)


def elo_from_score(score: float) -> float:
    """Elo difference for an expected score (``inf``/``-inf`` at 1 and 0)."""
    if score <= 0.0:
        return -math.inf
    if score >= 1.0:
        return math.inf
    return -400.0 * math.log10(1.0 / score - 1.0)


def score_from_elo(elo: float) -> float:
    return 1.0 / (1.0 + 10.0 ** (-elo / 400.0))


def los(wins: int, losses: int) -> float:
    """Likelihood of superiority from wins and losses (draws do not count); 0.5 with no decisive game."""
    if wins + losses == 0:
        return 0.5
    return 0.5 * (1.0 + math.erf((wins - losses) / math.sqrt(2.0 * (wins + losses))))


@dataclass(frozen=True)
class Estimate:
    """A mean score with its standard error, and the Elo it means with a 95% interval."""

    samples: float
    score: float
    stderr: float
    elo: float
    elo_low: float
    elo_high: float

    @property
    def elo_error(self) -> float:
        """Half the width of the 95% interval in Elo (``inf`` when unbounded)."""
        return (self.elo_high - self.elo_low) / 2.0


def estimate(values: Sequence[float], counts: Sequence[float]) -> Optional[Estimate]:
    """Mean, standard error and Elo interval of samples ``values[i]`` seen ``counts[i]`` times."""
    n = float(sum(counts))
    if n <= 0:
        return None
    mean = sum(v * c for v, c in zip(values, counts)) / n
    var = sum(c * (v - mean) ** 2 for v, c in zip(values, counts)) / n
    if var < 1e-12 and (n >= 2 or mean in (0.0, 1.0)):
        # Every sample the same (all won, all drawn, every pair 1-1): there is no spread to
        # measure, and the normal interval would collapse to a point.  Wilson's score interval
        # takes the largest spread a sample of this mean can have (a win-or-loss coin): at a
        # perfect score its far end is infinite and its near end finite, widening as n shrinks.
        se = 0.0
        lo, hi = wilson(mean, n)
    else:
        se = math.sqrt(var / n) if n >= 2 else math.inf     # one sample says nothing about spread
        lo, hi = mean - Z95 * se, mean + Z95 * se
    return Estimate(n, mean, se, elo_from_score(mean), elo_from_score(lo), elo_from_score(hi))


def wilson(p: float, n: float) -> tuple[float, float]:
    """Wilson's 95% score interval of a proportion ``p`` seen over ``n`` samples (within [0, 1])."""
    z2 = Z95 * Z95
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = Z95 / (1 + z2 / n) * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


def trinomial(wins: int, draws: int, losses: int) -> Optional[Estimate]:
    return estimate(TRI_VALUES, (losses, draws, wins))


def pentanomial(counts: Sequence[int]) -> Optional[Estimate]:
    """``counts`` = pairs scoring 0, 1/2, 1, 3/2, 2 points (LL, LD, DD+WL, WD, WW)."""
    return estimate(PENTA_VALUES, counts)


@dataclass
class PairStats:
    """The running result of engine ``a`` against engine ``b`` (from ``a``'s side)."""

    a: str
    b: str
    wins: int = 0
    draws: int = 0
    losses: int = 0
    penta: list[int] = field(default_factory=lambda: [0, 0, 0, 0, 0])
    terminations: Counter = field(default_factory=Counter)
    scores: list[float] = field(default_factory=list)        # a's score per game, in arrival order
    _halves: dict[int, float] = field(default_factory=dict)  # pair_game -> a's points in the first game

    @property
    def games(self) -> int:
        return self.wins + self.draws + self.losses

    @property
    def pairs(self) -> int:
        return sum(self.penta)

    def add(self, score: float, pair_game: int, termination: str = "") -> None:
        """Record one game: ``score`` is a's points; games with the same ``pair_game`` form a pair."""
        if score == 1.0:
            self.wins += 1
        elif score == 0.0:
            self.losses += 1
        else:
            self.draws += 1
        self.scores.append(score)
        if termination:
            self.terminations[termination] += 1
        first = self._halves.pop(pair_game, None)
        if first is None:
            self._halves[pair_game] = score
        else:
            self.penta[int(round((first + score) * 2))] += 1

    @property
    def score(self) -> float:
        return (self.wins + 0.5 * self.draws) / self.games if self.games else 0.5

    @property
    def draw_ratio(self) -> float:
        return self.draws / self.games if self.games else 0.0

    def trinomial(self) -> Optional[Estimate]:
        return trinomial(self.wins, self.draws, self.losses)

    def pentanomial(self) -> Optional[Estimate]:
        return pentanomial(self.penta)

    def los(self) -> float:
        return los(self.wins, self.losses)


def fmt_elo(value: float) -> str:
    if math.isinf(value):
        return "+inf" if value > 0 else "-inf"
    if abs(value) < 0.05:
        value = 0.0            # no "-0.0"
    return f"{value:+.1f}"


def too_few(est: Optional[Estimate]) -> bool:
    """No games, or an interval that spans every Elo difference: the games say nothing yet."""
    return est is None or (math.isinf(est.elo_low) and math.isinf(est.elo_high))


def fmt_error(est: Optional[Estimate]) -> str:
    """``+12.3 +-8.1`` (symmetrised), ``+inf [+93.1, +inf]`` when a bound is infinite, or
    ``+0.0 (too few games)`` when the interval spans everything."""
    if est is None:
        return "-"
    if too_few(est):
        return f"{fmt_elo(est.elo)} (too few games)"
    if math.isinf(est.elo_low) or math.isinf(est.elo_high) or math.isinf(est.elo):
        return f"{fmt_elo(est.elo)} [{fmt_elo(est.elo_low)}, {fmt_elo(est.elo_high)}]"
    return f"{fmt_elo(est.elo)} +-{est.elo_error:.1f}"


def json_number(value: float) -> Optional[float]:
    """JSON has no infinity: ``None`` stands for an unbounded value."""
    return None if math.isinf(value) or math.isnan(value) else round(value, 4)
