"""Optional PNG of a match: Elo estimate with its 95% band, and the SPRT's LLR, over games.

matplotlib is an optional extra (``pip install 'uci_checkers[plot]'``); without
it :func:`write_plot` returns a message instead of failing the match.
"""
from __future__ import annotations

import math
from typing import Optional, Sequence

from ..util.atomicfile import atomic_output


def plot_available() -> Optional[str]:
    """``None`` when a plot can be drawn, else why not (checked before a match starts)."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return "matplotlib is not installed (pip install 'uci_checkers[plot]')"
    return None


VIEW_ELO = 800.0      # the Elo axis shows at most +-this: early intervals are far wider


def band(history: Sequence[dict]) -> tuple[list[float], list[float], list[float], tuple[float, float]]:
    """The Elo line, the 95% band's lower and upper edges, and the axis limits.

    An infinite (or off-scale) bound is drawn at the edge of the axis, so the band never has a gap
    (NaN would cut it and leave a stray edge); an infinite estimate is left out of the line.
    """
    finite = [v for h in history for v in (h["elo"], h["elo_low"], h["elo_high"])
              if v is not None and math.isfinite(v)]
    top = min(VIEW_ELO, max([50.0] + [v for v in finite if v > 0]) * 1.1)
    bottom = max(-VIEW_ELO, min([-50.0] + [v for v in finite if v < 0]) * 1.1)

    def clip(v: Optional[float], missing: float) -> float:
        if v is None or math.isnan(v):
            return missing
        return min(top, max(bottom, v))

    elo = [h["elo"] if h["elo"] is not None and math.isfinite(h["elo"]) else float("nan") for h in history]
    low = [clip(h["elo_low"], bottom) for h in history]
    high = [clip(h["elo_high"], top) for h in history]
    return elo, low, high, (bottom, top)


def write_plot(path: str, title: str, history: Sequence[dict], bounds: Optional[tuple[float, float]]
               ) -> Optional[str]:
    """Write the PNG; return ``None`` on success or a reason why no plot was written.

    ``history`` holds one dict per game: ``games``, ``elo``, ``elo_low``, ``elo_high`` (may be
    infinite) and ``llr`` (or ``None``).
    """
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "matplotlib is not installed (pip install 'uci_checkers[plot]'): no plot written"
    if not history:
        return "no games: no plot written"

    games = [h["games"] for h in history]
    elo, low, high, limits = band(history)
    with_llr = bounds is not None and any(h.get("llr") is not None for h in history)
    fig, axes = plt.subplots(2 if with_llr else 1, 1, figsize=(8, 6 if with_llr else 4), sharex=True,
                             squeeze=False)
    ax = axes[0][0]
    ax.plot(games, elo, color="tab:blue", label="Elo")
    ax.fill_between(games, low, high, color="tab:blue", alpha=0.2, label="95% interval")
    ax.set_ylim(*limits)
    ax.axhline(0, color="grey", lw=0.8)
    ax.set_ylabel("Elo difference")
    ax.set_title(title)
    ax.legend(loc="upper right")
    if with_llr:
        ax2 = axes[1][0]
        ax2.plot(games, [h.get("llr") if h.get("llr") is not None else float("nan") for h in history],
                 color="tab:red", label="LLR")
        ax2.axhline(bounds[0], color="tab:green", ls="--", label="accept H0")
        ax2.axhline(bounds[1], color="tab:purple", ls="--", label="accept H1")
        ax2.set_ylabel("LLR")
        ax2.legend(loc="upper right")
    axes[-1][0].set_xlabel("games")
    fig.tight_layout()
    try:
        with atomic_output(path) as f:     # like every file the tools write
            fig.savefig(f, dpi=100, format="png")
    finally:
        plt.close(fig)
    return None
