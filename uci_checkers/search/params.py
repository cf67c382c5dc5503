"""The search's tunable constants: their names, defaults and bounds, and the words the kernels read them from.

Pruning margins, reductions and depth thresholds were constants of the kernel source.  They are now
values in an int64 array (:func:`pack`) that the driver copies into every thread's workspace at the
start of a search, so a tuner (``uci-checkers tune``) or a curious user (the engine's ``SearchParams``
option) can change them without a recompile.  The defaults are the engine's playing values: a search
with them is the search it always was, node for node.

Depths and reductions are in quarter plies (``ONE_PLY`` = 4 in the kernels), so a tuner can move them
by less than a ply; margins are in centi-men.  Each tunable also carries the SPSA step a tuner starts
from (``step``: the perturbation at the end of a run, fishtest's ``c_end``).

Pure Python: importing it loads nothing but numpy.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Mapping

import numpy as np

_ASCII_INT = re.compile(r"[+-]?[0-9]+")


class SearchParamsError(ValueError):
    """An unknown name, a malformed entry or a value out of bounds (the message says which)."""


@dataclass(frozen=True)
class Tunable:
    name: str
    default: int
    low: int
    high: int
    step: float          # SPSA perturbation at the end of a run (fishtest's c_end)
    help: str


TUNABLES: tuple[Tunable, ...] = (
    Tunable("RfpDepth", 12, 0, 32, 2.0, "reverse futility pruning up to this depth (quarter plies; 0 = off)"),
    Tunable("RfpMargin", 50, 0, 300, 8.0, "reverse futility margin, centi-men per ply of depth"),
    Tunable("LmrMinIndex", 2, 1, 10, 0.6, "first move (0-based, in search order) that late-move reduction may reduce"),
    Tunable("LmrReduction", 4, 0, 12, 1.0, "late-move reduction of a move at LmrMinIndex or later (quarter plies)"),
    Tunable("LmrIndex2", 5, 1, 30, 1.0, "from this move index ..."),
    Tunable("LmrDepth2", 16, 4, 40, 2.0, "... and this depth (quarter plies) ..."),
    Tunable("LmrReduction2", 8, 0, 20, 1.0, "... the reduction is this (quarter plies)"),
    Tunable("VerifyMinDepth", 12, 4, 40, 2.0, "verified pruning from this child depth (quarter plies)"),
    Tunable("VerifyMargin", 30, 0, 300, 6.0, "verified pruning: centi-men above beta; 0 = off"),
    Tunable("VerifyReduction", 16, 4, 32, 2.0, "verified pruning: the test search is this much shallower (quarter plies)"),
    Tunable("TruncMinDepth", 8, 0, 40, 2.0, "truncation from this depth (quarter plies)"),
    Tunable("TruncUnit", 64, 8, 400, 8.0, "truncation: centi-men outside the window per step"),
    Tunable("TruncStep", 4, 0, 12, 1.0, "truncation: depth cut per step (quarter plies; 0 = off)"),
    Tunable("TruncMaxSteps", 2, 0, 6, 0.6, "truncation: at most this many steps at a node"),
    Tunable("TruncNear", 20, 0, 200, 5.0, "truncation: within this many centi-men of the window the cut plies come back"),
    Tunable("IidDepth", 20, 0, 60, 3.0, "internal iterative deepening at PV nodes from this depth (quarter plies; 0 = off)"),
    Tunable("IidReduction", 8, 4, 24, 2.0, "internal iterative deepening: this much shallower first (quarter plies)"),
    Tunable("QsThreat", 4, 0, 16, 1.0, "quiescence: a threatened capture extends down to this depth below 0 (quarter plies)"),
    Tunable("QsShot", 4, 0, 16, 1.0, "quiescence: a quiet leaf just below alpha tries its sacrifices, down to this depth "
            "below 0 (quarter plies; 0 = off)"),
    Tunable("QsShotMargin", 150, 0, 600, 15.0, "quiescence: ... when its static score is at most this far below alpha "
            "(centi-men)"),
    Tunable("HistBonusCap", 196, 0, 2000, 25.0, "history bonus of a best move: 8 * min(depth * (depth - 1), this)"),
    Tunable("AspWindow", 30, 5, 300, 5.0, "aspiration window half-width around the previous score (centi-men)"),
    Tunable("AspGrowth", 3, 2, 8, 0.5, "aspiration: a failed window widens by this factor"),
)
N_PARAMS = len(TUNABLES)
BY_NAME: dict[str, int] = {t.name.lower(): i for i, t in enumerate(TUNABLES)}

# word indices (the kernels read ws[W_PARAMS + P_...]; numba folds the module's ints into constants)
(P_RFP_DEPTH, P_RFP_MARGIN, P_LMR_MIN_I, P_LMR_R1, P_LMR_I2, P_LMR_D2, P_LMR_R2, P_VERIFY_MIN_DEPTH,
 P_VERIFY_MARGIN, P_VERIFY_REDUCTION, P_TRUNC_MIN_DEPTH, P_TRUNC_UNIT, P_TRUNC_STEP, P_TRUNC_MAX,
 P_TRUNC_NEAR, P_IID_DEPTH, P_IID_REDUCTION, P_QS_THREAT, P_QS_SHOT, P_QS_SHOT_MARGIN, P_HIST_BONUS_CAP,
 P_ASP_WINDOW, P_ASP_GROWTH) = range(N_PARAMS)


def pack(values: Mapping[str, int] | None = None) -> np.ndarray:
    """The int64 words of ``values`` (names as in TUNABLES, any case; missing ones: their defaults)."""
    words = np.array([t.default for t in TUNABLES], dtype=np.int64)
    for name, value in (values or {}).items():
        i = _index(name)
        words[i] = _checked(TUNABLES[i], int(value))
    return words


def parse(text: str) -> dict[str, int]:
    """``"RfpMargin=60 LmrReduction=5"`` (spaces or commas between entries; empty: none) as a dict."""
    out: dict[str, int] = {}
    for entry in text.replace(",", " ").split():
        name, sep, value = entry.partition("=")
        if not sep or not name:
            raise SearchParamsError(f"search parameter entry {entry[:40]!r} is not NAME=VALUE")
        t = TUNABLES[_index(name)]
        if not _ASCII_INT.fullmatch(value) or len(value) > 12:
            raise SearchParamsError(f"search parameter {t.name} needs a whole number, not {value[:40]!r}")
        out[t.name] = _checked(t, int(value, 10))
    return out


def format_values(values: Mapping[str, int]) -> str:
    """The text :func:`parse` reads back, only the values that differ from the defaults, in TUNABLES order."""
    given = {TUNABLES[_index(k)].name: int(v) for k, v in values.items()}
    return " ".join(f"{t.name}={given[t.name]}" for t in TUNABLES
                    if t.name in given and given[t.name] != t.default)


def _index(name: str) -> int:
    i = BY_NAME.get(name.strip().lower())
    if i is None:
        raise SearchParamsError(f"unknown search parameter {name[:40]!r} (known: "
                                f"{', '.join(t.name for t in TUNABLES)})")
    return i


def _checked(t: Tunable, value: int) -> int:
    if not t.low <= value <= t.high:
        raise SearchParamsError(f"search parameter {t.name} value {value} is out of range {t.low}..{t.high}")
    return value
