"""The search's tunable constants (search/params.py), the SearchParams option and the SPSA tuner (learn/tune.py)."""
from __future__ import annotations

import json

import numpy as np
import pytest

from uci_checkers.learn import tune
from uci_checkers.rules.position import Game
from uci_checkers.search import params as sp
from uci_checkers.search.alphabeta import SearchLimits, Searcher


# --- the constants ---------------------------------------------------------------------------------
def test_every_default_lies_within_its_bounds_and_names_are_unique():
    assert len({t.name.lower() for t in sp.TUNABLES}) == sp.N_PARAMS
    for t in sp.TUNABLES:
        assert t.low <= t.default <= t.high and t.step > 0, t
    assert list(sp.pack()) == [t.default for t in sp.TUNABLES]


def test_parse_reads_what_format_writes_and_keeps_only_changes():
    values = {"RfpMargin": 61, "lmrreduction": 5, "AspWindow": 30}         # AspWindow is its default
    text = sp.format_values(values)
    assert text == "RfpMargin=61 LmrReduction=5"
    assert sp.parse(text) == {"RfpMargin": 61, "LmrReduction": 5}
    assert sp.parse(" RfpMargin=61, LmrReduction=+5 ") == {"RfpMargin": 61, "LmrReduction": 5}
    assert sp.parse("") == {}
    words = sp.pack(sp.parse(text))
    assert words[sp.P_RFP_MARGIN] == 61 and words[sp.P_LMR_R1] == 5 and words[sp.P_ASP_WINDOW] == 30


@pytest.mark.parametrize("text, says", [
    ("NoSuch=3", "unknown search parameter 'NoSuch'"),
    ("RfpMargin", "is not NAME=VALUE"),
    ("=4", "is not NAME=VALUE"),
    ("RfpMargin=1.5", "needs a whole number"),
    ("RfpMargin=٣", "needs a whole number"),
    ("RfpMargin=301", "out of range 0..300"),
    ("AspGrowth=1", "out of range 2..8"),
])
def test_parse_names_the_bad_entry(text, says):
    with pytest.raises(sp.SearchParamsError, match=says):
        sp.parse(text)


def _nodes(searcher: Searcher, depth: int = 7) -> int:
    searcher.clear()
    game = Game.from_moves(None, ("11-15", "23-19", "8-11", "22-17"))
    return searcher.search(game, SearchLimits(depth=depth), None, np.zeros(1, dtype=np.int64)).nodes


def test_the_search_reads_its_constants_at_run_time_and_the_defaults_give_the_same_search():
    """Each kind of constant (a reduction, a pruning depth, a margin, the aspiration window) changes the
    tree when changed; the defaults again give the very same node count."""
    s = Searcher(8)
    base = _nodes(s)
    assert _nodes(s) == base                                  # deterministic
    for change in ({"LmrReduction": 0, "LmrReduction2": 0}, {"RfpDepth": 0}, {"VerifyMargin": 0},
                   {"TruncStep": 0}, {"RfpMargin": 200}, {"AspWindow": 5}):
        s.set_params(change)
        assert _nodes(s) != base, change
    s.set_params(None)
    assert _nodes(s) == base
    s.set_params({t.name: t.default for t in sp.TUNABLES})
    assert _nodes(s) == base


def test_a_bad_set_params_changes_nothing():
    s = Searcher(8)
    s.set_params({"RfpMargin": 70})
    with pytest.raises(sp.SearchParamsError):
        s.set_params({"RfpMargin": 70000})
    assert s.params[sp.P_RFP_MARGIN] == 70


def test_the_searchparams_option_reaches_the_search_and_a_bad_value_changes_nothing():
    from uci_checkers.engine.facade import Engine
    from uci_checkers.engine.options import OptionError

    engine = Engine()
    engine.set_option("SearchParams", "RfpMargin=70 AspWindow=40")
    assert engine.ensure_ready(timeout=120)
    searcher = engine._searcher
    assert searcher.params[sp.P_RFP_MARGIN] == 70 and searcher.params[sp.P_ASP_WINDOW] == 40
    with pytest.raises(OptionError, match="option SearchParams: unknown search parameter 'Nope'"):
        engine.set_option("SearchParams", "Nope=1")
    assert engine.get_option("SearchParams") == "RfpMargin=70 AspWindow=40"
    assert searcher.params[sp.P_RFP_MARGIN] == 70
    engine.set_option("SearchParams", "")
    assert engine.ensure_ready(timeout=60)
    assert list(searcher.params) == list(sp.pack())


# --- the SPSA schedule -----------------------------------------------------------------------------
def _config(**kw) -> tune.TuneConfig:
    base = dict(names=("RfpMargin", "LmrReduction"), pairs=100, nodes=300, seed=3, batch=4, r_end=0.02)
    base.update(kw)
    return tune.TuneConfig(**base)


def test_the_schedule_ends_at_the_step_and_the_learning_rate():
    """fishtest's schedule: at the last pair c_k is the constant's step, a_k is r_end * step**2."""
    cfg = _config()
    steps = np.array([sp.TUNABLES[sp.BY_NAME["rfpmargin"]].step, sp.TUNABLES[sp.BY_NAME["lmrreduction"]].step])
    c_end, a_end = tune.gains(cfg, cfg.pairs)
    assert np.allclose(c_end, steps) and np.allclose(a_end, cfg.r_end * steps ** 2)
    c_1, a_1 = tune.gains(cfg, 1)
    assert np.all(c_1 > c_end) and np.all(a_1 > a_end)        # both shrink over the run


def test_a_pair_moves_each_constant_along_its_sign_by_the_result():
    cfg = _config()
    theta = np.array([50.0, 4.0])
    delta, _ = tune.perturbation(cfg, 7)
    c_k, a_k = tune.gains(cfg, 7)
    assert np.allclose(tune.update(cfg, theta, 7, 2), theta + 2 * a_k / c_k * delta)
    assert np.allclose(tune.update(cfg, theta, 7, 0), theta)
    plus, minus, signs = tune.side_values(cfg, theta, 7)
    assert list(signs) == list(delta)
    for i, name in enumerate(cfg.names):
        assert plus[name] == round(theta[i] + c_k[i] * delta[i]) and minus[name] == round(theta[i] - c_k[i] * delta[i])
    low = tune.update(cfg, np.array([0.0, 0.0]), 7, -2 if delta[0] > 0 else 2)
    assert low[0] == 0.0                                        # kept within the bounds


# --- a run -----------------------------------------------------------------------------------------
def test_a_run_is_reproducible_resumable_and_refuses_other_settings(tmp_path, monkeypatch):
    cfg = _config(pairs=3, batch=2, nodes=400)
    first = tune.run(tmp_path / "a", cfg, jobs=1, progress=None)
    again = tune.run(tmp_path / "b", cfg, jobs=1, progress=None)
    assert first.theta == again.theta and first.pairs_done == 3
    assert first.plus_wins + first.draws + first.plus_losses == 6
    saved = json.loads((tmp_path / "a" / tune.STATE_NAME).read_text())
    assert saved["pairs_done"] == 3 and [row[0] for row in saved["history"]] == [2, 3]
    assert saved["search_params"] == sp.format_values(saved["values"])

    def no_games(*args):
        raise AssertionError("a finished run played again")

    monkeypatch.setattr(tune, "play_pair", no_games)
    assert tune.run(tmp_path / "a", cfg, jobs=1, progress=None).theta == first.theta
    with pytest.raises(tune.TuneStateError, match="other settings \\(nodes\\)"):
        tune.run(tmp_path / "a", _config(pairs=3, batch=2, nodes=500), jobs=1, progress=None)


def test_an_interrupted_run_continues_to_the_same_values(tmp_path):
    """Stopped after its first batch, a run goes on to the values of a run never stopped."""
    cfg = _config(pairs=4, batch=2, nodes=400)
    whole = tune.run(tmp_path / "whole", cfg, jobs=1, progress=None)
    state = tune.load_state(tmp_path / "part" / tune.STATE_NAME, cfg)
    (tmp_path / "part").mkdir()
    theta = np.array(state.theta)
    for k in (1, 2):                                       # the first batch by hand, from the same values
        plus, minus, _ = tune.side_values(cfg, np.array(state.theta), k)
        _, g1, g2 = tune.play_pair(cfg, k, plus, minus)
        theta = tune.update(cfg, theta, k, g1 + g2)
    state.theta, state.pairs_done = [float(x) for x in theta], 2
    state.history.append([2, 0.0, list(tune.rounded(state).values())])
    tune.save_state(tmp_path / "part" / tune.STATE_NAME, state)
    assert tune.run(tmp_path / "part", cfg, jobs=1, progress=None).theta == whole.theta


def test_the_command_lists_the_constants_and_rejects_bad_arguments(tmp_path, capsys):
    assert tune.main(["--list"]) == 0
    out = capsys.readouterr().out
    assert all(t.name in out for t in sp.TUNABLES)
    for argv, says in ((["--out", str(tmp_path), "--params", "Bogus"], "unknown search parameter 'Bogus'"),
                       (["--out", str(tmp_path), "--params", "RfpMargin,rfpmargin"], "twice"),
                       (["--games", "10"], "--out DIR is needed"),
                       (["--out", str(tmp_path), "--games", "1"], "at least 2"),
                       (["--out", str(tmp_path), "--r-end", "0"], "--r-end")):
        try:
            status = tune.main(argv)
        except SystemExit as exc:             # the parser's error() ends with SystemExit(2), as in every tool
            status = exc.code
        assert status == 2, argv
        err = capsys.readouterr().err
        assert says in err and len(err.strip().splitlines()) == 1, (argv, err)
