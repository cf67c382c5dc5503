"""Sequential probability ratio test (GSPRT) for engine matches.

Hypotheses on the logistic Elo difference: H0 ``elo = elo0`` against H1
``elo = elo1``.  Wald's bounds: stop and accept H1 when the log-likelihood ratio
reaches ``log((1 - beta) / alpha)``, accept H0 when it falls to
``log(beta / (1 - alpha))``.

The outcome distribution (three outcomes per game, or five per opening pair)
is unknown beyond its mean, so this is a *generalised* SPRT: under each
hypothesis we take the distribution closest to the observed frequencies ``p``
(maximum likelihood) that has the hypothesised mean ``s``.  Maximising
``sum p_i log q_i`` subject to ``sum q_i = 1`` and ``sum q_i a_i = s`` gives

    q_i = p_i / (1 + lambda * (a_i - s)),   with  sum p_i (a_i - s) / (1 + lambda (a_i - s)) = 0,

whose left side falls monotonically in ``lambda``, so bisection finds it.  Then
``LLR = N * sum p_i log(q1_i / q0_i)`` over the N samples (games or pairs).
For large N this agrees with the normal approximation
``N (s1 - s0) (2 mean - s0 - s1) / (2 var)``, also provided for checks.

Empty bins get a tiny pseudo-count so that a stream of identical results (all
draws, say) still has a distribution that can take either mean.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional, Sequence

from .stats import PENTA_VALUES, TRI_VALUES, score_from_elo

PSEUDO_COUNT = 1e-3


class SprtError(ValueError):
    """Bad SPRT parameters."""


def _mle(values: Sequence[float], probs: Sequence[float], mean: float) -> list[float]:
    """The distribution on ``values`` nearest ``probs`` (in likelihood) with the given mean."""
    d = [v - mean for v in values]
    top, bottom = max(d), min(d)
    if top <= 0 or bottom >= 0:
        raise SprtError(f"mean {mean} outside the range of the outcomes")
    lo, hi = -1.0 / top, -1.0 / bottom

    def f(lam: float) -> float:
        return sum(p * x / (1.0 + lam * x) for p, x in zip(probs, d))

    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if f(mid) > 0:
            lo = mid
        else:
            hi = mid
    lam = 0.5 * (lo + hi)
    return [p / (1.0 + lam * x) for p, x in zip(probs, d)]


def llr(values: Sequence[float], counts: Sequence[float], s0: float, s1: float) -> float:
    """Generalised log-likelihood ratio of mean ``s1`` against ``s0`` for the observed counts."""
    n = float(sum(counts))
    if n <= 0:
        return 0.0
    reg = [c if c > 0 else PSEUDO_COUNT for c in counts]
    total = sum(reg)
    probs = [c / total for c in reg]
    q0 = _mle(values, probs, s0)
    q1 = _mle(values, probs, s1)
    return n * sum(p * math.log(a / b) for p, a, b in zip(probs, q1, q0) if p > 0)


def llr_normal(values: Sequence[float], counts: Sequence[float], s0: float, s1: float) -> float:
    """The normal approximation of :func:`llr` (for checks and intuition)."""
    n = float(sum(counts))
    if n <= 0:
        return 0.0
    mean = sum(v * c for v, c in zip(values, counts)) / n
    var = sum(c * (v - mean) ** 2 for v, c in zip(values, counts)) / n
    if var <= 0:
        return 0.0
    return n * (s1 - s0) * (2 * mean - s0 - s1) / (2 * var)


@dataclass(frozen=True)
class Sprt:
    """The test's parameters; :meth:`llr_*` compute the statistic, :meth:`decide` applies the bounds."""

    elo0: float = 0.0
    elo1: float = 5.0
    alpha: float = 0.05
    beta: float = 0.05

    def __post_init__(self) -> None:
        if not all(math.isfinite(v) and abs(v) <= 2000 for v in (self.elo0, self.elo1)):
            raise SprtError("elo0 and elo1 must be finite numbers between -2000 and 2000")
        if not (0 < self.alpha < 1 and 0 < self.beta < 1):
            raise SprtError("alpha and beta must lie strictly between 0 and 1")
        if self.elo1 <= self.elo0:
            raise SprtError("elo1 must be greater than elo0")

    @classmethod
    def parse(cls, words: Sequence[str]) -> "Sprt":
        """From ``["elo0=0", "elo1=5", "alpha=0.05", "beta=0.05"]`` (any subset)."""
        kwargs = {}
        for w in words:
            key, sep, value = w.partition("=")
            if not sep or key not in ("elo0", "elo1", "alpha", "beta"):
                raise SprtError(f"bad SPRT parameter {w!r}: expected elo0=, elo1=, alpha=, beta=")
            try:
                kwargs[key] = float(value)
            except ValueError:
                raise SprtError(f"bad SPRT parameter {w!r}: not a number") from None
        return cls(**kwargs)

    @property
    def lower(self) -> float:
        return math.log(self.beta / (1.0 - self.alpha))

    @property
    def upper(self) -> float:
        return math.log((1.0 - self.beta) / self.alpha)

    @property
    def s0(self) -> float:
        return score_from_elo(self.elo0)

    @property
    def s1(self) -> float:
        return score_from_elo(self.elo1)

    def llr_trinomial(self, wins: int, draws: int, losses: int) -> float:
        return llr(TRI_VALUES, (losses, draws, wins), self.s0, self.s1)

    def llr_pentanomial(self, penta: Sequence[int]) -> float:
        return llr(PENTA_VALUES, penta, self.s0, self.s1)

    def decide(self, value: float) -> Optional[str]:
        """``"H1"`` (accept elo1), ``"H0"`` (accept elo0) or ``None`` (keep playing)."""
        if value >= self.upper:
            return "H1"
        if value <= self.lower:
            return "H0"
        return None

    def describe(self) -> str:
        return (f"SPRT elo0={self.elo0:g} elo1={self.elo1:g} alpha={self.alpha:g} beta={self.beta:g} "
                f"bounds [{self.lower:.2f}, {self.upper:.2f}]")
