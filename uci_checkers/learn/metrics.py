"""Loss and scale fitting shared by the trainer and the validation tool (numpy only)."""
from __future__ import annotations

import math

import numpy as np


def log_loss(z: np.ndarray, t: np.ndarray) -> float:
    """Mean cross-entropy of sigmoid(z) against soft targets t."""
    # log(1 + e^z) - t z, computed stably
    return float(np.mean(np.logaddexp(0.0, z) - t * z))


def fit_scale(score: np.ndarray, target: np.ndarray) -> float:
    """K of P = sigmoid(score / K) that best fits the targets (golden-section on log-loss)."""
    lo, hi = 10.0, 2000.0
    f = lambda k: log_loss(score / k, target)   # noqa: E731
    g = (math.sqrt(5) - 1) / 2
    a, b = hi - g * (hi - lo), lo + g * (hi - lo)
    fa, fb = f(a), f(b)
    for _ in range(60):
        if fa < fb:
            hi, b, fb = b, a, fa
            a = hi - g * (hi - lo)
            fa = f(a)
        else:
            lo, a, fa = a, b, fb
            b = lo + g * (hi - lo)
            fb = f(b)
    return (lo + hi) / 2
