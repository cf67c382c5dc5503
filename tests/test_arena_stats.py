"""Arena statistics and SPRT against hand-computed values and synthetic result streams."""
from __future__ import annotations

import math
import random

import pytest

from uci_checkers.arena.sprt import Sprt, SprtError, llr, llr_normal
from uci_checkers.arena.stats import PENTA_VALUES, PairStats, elo_from_score, fmt_error, los, pentanomial, score_from_elo, trinomial


def test_elo_from_score_hand_values():
    assert elo_from_score(0.5) == 0.0
    # 0.75 = 1 / (1 + 10^(-e/400))  =>  e = 400 log10(3) = 190.8485
    assert elo_from_score(0.75) == pytest.approx(190.8485, abs=1e-3)
    assert elo_from_score(0.25) == pytest.approx(-190.8485, abs=1e-3)
    assert elo_from_score(1.0) == math.inf and elo_from_score(0.0) == -math.inf
    for e in (-300, -35.5, 0, 12, 400):
        assert elo_from_score(score_from_elo(e)) == pytest.approx(e)


def test_los_hand_values():
    assert los(0, 0) == 0.5
    assert los(10, 10) == pytest.approx(0.5)
    # (W - L) / sqrt(W + L) = 20 / sqrt(40) = 3.1623 -> Phi = 0.999217
    assert los(30, 10) == pytest.approx(0.999217, abs=1e-6)
    # 2 / sqrt(10) = 0.63246 -> Phi = 0.73646 (normal table: 0.73565 at 0.63, 0.73891 at 0.64)
    assert los(6, 4) == pytest.approx(0.73646, abs=2e-5)
    assert los(4, 6) == pytest.approx(1 - 0.73646, abs=2e-5)


def test_trinomial_error_bars_hand_values():
    est = trinomial(30, 0, 10)
    # mean 0.75; var = (30 * 0.25^2 + 10 * 0.75^2) / 40 = 0.1875; se = sqrt(0.1875 / 40) = 0.068465
    assert est.score == pytest.approx(0.75)
    assert est.stderr == pytest.approx(0.068465, abs=1e-6)
    # 0.75 -+ 1.96 * 0.068465 = 0.61581 / 0.88419 -> 81.96 / 353.12 Elo
    assert est.elo_low == pytest.approx(81.96, abs=0.05)
    assert est.elo_high == pytest.approx(353.12, abs=0.05)
    even = trinomial(10, 20, 10)
    assert even.elo == 0.0
    # var = (10 * 0.25 + 10 * 0.25) / 40 = 0.125; se = 0.0559 -> 0.60957 = 400 log10(0.60957/0.39043) = 77.39
    assert even.elo_high == pytest.approx(-even.elo_low)
    assert even.elo_high == pytest.approx(77.39, abs=0.02)
    assert trinomial(0, 0, 0) is None


def test_pentanomial_hand_values():
    # 10 pairs: 1 x 0, 2 x 1/2, 3 x 1, 2 x 3/2, 2 x 2 points -> per-game score of each pair
    est = pentanomial([1, 2, 3, 2, 2])
    # mean = (0.25*2 + 0.5*3 + 0.75*2 + 1*2) / 10 = 0.55
    assert est.score == pytest.approx(0.55)
    # var = (0.3025 + 2*0.09 + 3*0.0025 + 2*0.04 + 2*0.2025) / 10 = 0.0975; se = sqrt(0.0975/10)
    assert est.stderr == pytest.approx(math.sqrt(0.00975))
    assert est.elo == pytest.approx(400 * math.log10(0.55 / 0.45))
    assert est.samples == 10


def test_pair_stats_bins_pairs_by_opening():
    st = PairStats("a", "b")
    st.add(1.0, pair_game=0)       # pair 0: a wins then loses -> 1 point -> bin 2
    st.add(1.0, pair_game=1)       # pair 1: two wins -> bin 4
    st.add(0.0, pair_game=0)
    st.add(1.0, pair_game=1)
    st.add(0.5, pair_game=2)       # pair 2: draw + loss -> 1/2 point -> bin 1
    st.add(0.0, pair_game=2)
    st.add(0.5, pair_game=3)       # pair 3 unfinished: not in the pentanomial
    assert st.penta == [0, 1, 1, 0, 1]
    assert (st.wins, st.draws, st.losses) == (3, 2, 2)
    assert st.pairs == 3
    assert st.score == pytest.approx(4 / 7)
    assert st.draw_ratio == pytest.approx(2 / 7)


def test_one_sample_has_no_error_bar():
    est = trinomial(1, 0, 0)
    assert est.elo == math.inf
    assert "inf" in fmt_error(est)
    est = pentanomial([0, 0, 1, 0, 0])
    assert math.isinf(est.elo_low) and math.isinf(est.elo_high)


def test_sprt_bounds_and_parse():
    s = Sprt.parse(["elo0=0", "elo1=5", "alpha=0.05", "beta=0.05"])
    assert s.lower == pytest.approx(math.log(0.05 / 0.95)) == pytest.approx(-2.944, abs=1e-3)
    assert s.upper == pytest.approx(2.944, abs=1e-3)
    assert s.decide(3.0) == "H1" and s.decide(-3.0) == "H0" and s.decide(0.5) is None
    with pytest.raises(SprtError):
        Sprt.parse(["elo0=5", "elo1=0"])
    with pytest.raises(SprtError):
        Sprt.parse(["gamma=1"])
    with pytest.raises(SprtError):
        Sprt.parse(["alpha=2"])


def test_llr_matches_normal_approximation_for_large_samples():
    s = Sprt(0, 10)
    counts = [100, 300, 500, 300, 200]
    exact = llr(PENTA_VALUES, counts, s.s0, s.s1)
    approx = llr_normal(PENTA_VALUES, counts, s.s0, s.s1)
    assert exact == pytest.approx(approx, rel=0.01)
    # LLR scales with the sample size at fixed frequencies
    assert s.llr_pentanomial([c * 2 for c in counts]) == pytest.approx(2 * exact)
    # two outcomes: the constrained distributions are fixed, LLR = sum n_i log(q1_i / q0_i)
    s0, s1 = s.s0, s.s1
    by_hand = 4 * math.log(s1 / s0) + 6 * math.log((1 - s1) / (1 - s0))
    assert llr((0.0, 1.0), (6, 4), s0, s1) == pytest.approx(by_hand, rel=1e-9)


def _stream(elo: float, draw_ratio: float, seed: int):
    """Games with a true logistic Elo difference: (score of a, pair number)."""
    rng = random.Random(seed)
    mean = score_from_elo(elo)
    win = mean - draw_ratio / 2
    pair = 0
    while True:
        for _ in range(2):
            r = rng.random()
            yield (1.0 if r < win else 0.5 if r < win + draw_ratio else 0.0), pair
        pair += 1


@pytest.mark.parametrize("true_elo, expected", [(40.0, "H1"), (-30.0, "H0")])
def test_sprt_stops_on_synthetic_stream(true_elo, expected):
    sprt = Sprt(0, 10, 0.05, 0.05)
    st = PairStats("a", "b")
    decision = None
    for n, (score, pair) in enumerate(_stream(true_elo, 0.4, seed=7), 1):
        st.add(score, pair)
        if n % 2 == 0:
            decision = sprt.decide(sprt.llr_pentanomial(st.penta))
            if decision:
                break
        assert n < 40000, "SPRT never decided"
    assert decision == expected
    # the trinomial statistic points the same way on the same games
    tri = sprt.llr_trinomial(st.wins, st.draws, st.losses)
    assert (tri > 0) == (expected == "H1")


def test_perfect_scores_print_the_same_kind_of_interval_at_any_size():
    from uci_checkers.arena.stats import fmt_error, pentanomial, trinomial
    texts = [fmt_error(trinomial(n, 0, 0)) for n in (1, 2, 4, 100)]
    assert all(t.startswith("+inf [") and t.endswith(", +inf]") for t in texts), texts
    lows = [trinomial(n, 0, 0).elo_low for n in (1, 2, 4, 100)]
    assert lows == sorted(lows) and all(math.isfinite(v) for v in lows)
    losses = [fmt_error(trinomial(0, 0, n)) for n in (1, 4)]
    assert all(t.startswith("-inf [-inf, ") and "inf]" not in t for t in losses), losses
    assert fmt_error(pentanomial([0, 0, 0, 0, 3])).startswith("+inf [")


def test_identical_samples_get_an_honest_interval_never_a_zero_width_one():
    # issue 20 item 9: +1 =2 -1 over 2 opening pairs (a 1-1 pair and a drawn pair) printed "+0.0 +-0.0"
    st = PairStats("a", "b")
    for score, pair in ((1.0, 0), (0.0, 0), (0.5, 1), (0.5, 1)):
        st.add(score, pair)
    assert st.penta == [0, 0, 2, 0, 0]
    est = st.pentanomial()
    assert est.elo == 0.0 and est.elo_error > 300          # Wilson's interval of two samples: wide
    assert fmt_error(est) == f"+0.0 +-{est.elo_error:.1f}"
    assert "+-0.0" not in fmt_error(st.trinomial())
    # an interval that spans every Elo difference says so
    assert fmt_error(trinomial(1, 0, 1)) == "+0.0 (too few games)"
    assert fmt_error(pentanomial([0, 0, 1, 0, 0])) == "+0.0 (too few games)"
    # all draws: the interval narrows with the games but is never a point
    widths = []
    for n in (4, 20, 100, 1000):
        est = trinomial(0, n, 0)
        assert est.elo == 0.0 and est.elo_low < 0 < est.elo_high
        widths.append(est.elo_high - est.elo_low)
    assert widths == sorted(widths, reverse=True) and widths[-1] > 10
    # pairs all 3/2 points: a finite interval around the score once there are enough of them
    est = pentanomial([0, 0, 0, 50, 0])
    assert est.elo == pytest.approx(elo_from_score(0.75))
    assert est.elo_low < est.elo < est.elo_high and math.isfinite(est.elo_low) and math.isfinite(est.elo_high)
    # and the Wilson bound of a perfect score is unchanged: [n / (n + z^2), 1]
    assert trinomial(10, 0, 0).elo_low == pytest.approx(elo_from_score(10 / (10 + 1.959963984540054 ** 2)))


def test_plot_band_has_no_gaps_where_a_bound_is_infinite(tmp_path, monkeypatch):
    # issue 20 item 9: infinite bounds became NaN, so the band vanished there and left a stray edge
    pytest.importorskip("matplotlib")
    import matplotlib.axes

    from uci_checkers.arena.plot import write_plot

    bands = []
    original = matplotlib.axes.Axes.fill_between

    def spy(self, x, y1, y2=0, **kwargs):
        bands.append((list(y1), list(y2)))
        return original(self, x, y1, y2, **kwargs)

    monkeypatch.setattr(matplotlib.axes.Axes, "fill_between", spy)
    history = [{"games": 1, "elo": 0.0, "elo_low": -math.inf, "elo_high": math.inf, "llr": None},
               {"games": 2, "elo": math.inf, "elo_low": 150.0, "elo_high": math.inf, "llr": None},
               {"games": 3, "elo": 120.0, "elo_low": 10.0, "elo_high": 400.0, "llr": None},
               {"games": 4, "elo": 60.0, "elo_low": -40.0, "elo_high": 200.0, "llr": None}]
    assert write_plot(str(tmp_path / "p.png"), "a vs b", history, None) is None
    (low, high), = bands
    assert all(math.isfinite(v) for v in low + high), (low, high)
    assert all(lo <= hi for lo, hi in zip(low, high))
    assert low[0] == low[1] or low[0] < min(low[2:])      # -inf drawn at the bottom edge
    assert high[0] == high[1] and high[0] > max(high[2:])  # +inf drawn at the top edge
