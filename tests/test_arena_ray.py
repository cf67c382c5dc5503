"""The Ray backend: a local Ray instance started by the test plays a few games as remote tasks."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'uci_checkers[cluster]')")

from uci_checkers.arena import game as G  # noqa: E402
from uci_checkers.arena.backends import RayBackend
from uci_checkers.util.raycluster import ray_runtime_env
from uci_checkers.arena.engine import EngineConfig, Limits, Timeouts  # noqa: E402
from uci_checkers.arena.openings import ballots, ordered  # noqa: E402
from uci_checkers.arena.runner import Match, schedule  # noqa: E402
from uci_checkers.rules.pdn import read_pdn_file  # noqa: E402
from uci_checkers.rules.position import Game, Position  # noqa: E402

MOVER = str(Path(__file__).resolve().parent / "engines" / "random_mover.py")


@pytest.fixture(scope="module")
def local_ray():
    # the package is shipped to the workers as the backend does when it starts Ray itself
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False,
             runtime_env=ray_runtime_env())
    yield
    ray.shutdown()


def test_ray_backend_plays_games_and_writes_each_once(local_ray, tmp_path):
    engines = [EngineConfig(n, [sys.executable, MOVER, "--seed", s], limits=Limits(depth=1))
               for n, s in (("a", "1"), ("crashy", "2"))]
    engines[1].command += ["--fault", "crash", "--fault-at", "30"]
    settings = G.Settings(timeouts=Timeouts(uciok=10, readyok=10, move=5), max_plies=200)
    jobs = schedule(engines, "match", 6, ordered(ballots(), 2)[:3])
    out = tmp_path / "ray.pdn"
    match = Match(engines, jobs, settings, "match", str(out))
    result = match.run(RayBackend(settings, concurrency=2))
    doc = read_pdn_file(out)
    games = doc.games
    assert not doc.errors
    assert result.records == 6 and sorted(int(g.tag("Round")) for g in games) == list(range(1, 7))
    for g in games:
        game = Game(Position.start())
        for move in g.moves:
            game.push_text(str(move))           # every recorded move is legal
        if g.tag("Termination") == G.NO_MOVES:
            assert game.status().pdn_result == g.result
        else:
            assert g.tag("Termination") in (G.ENGINE_CRASH, G.REPETITION, G.NO_PROGRESS, G.PLY_CAP)
    assert match.stats[0].games == 6 and match.stats[0].pairs == 3


def test_ray_backend_runs_the_real_engine(local_ray, tmp_path):
    # run from the repository so the engine shares the compile cache of the other tests (the
    # default command would use the copy shipped to the worker: a second cold compile)
    repo = str(Path(__file__).resolve().parent.parent)
    engines = [EngineConfig("own", [sys.executable, "-m", "uci_checkers"], cwd=repo, limits=Limits(depth=1)),
               EngineConfig("mover", [sys.executable, MOVER], limits=Limits(depth=1))]
    settings = G.Settings(timeouts=Timeouts(uciok=30, readyok=120, move=30), max_plies=120)
    jobs = schedule(engines, "match", 2, ordered(ballots(), 9)[:1])
    match = Match(engines, jobs, settings, "match", str(tmp_path / "own.pdn"))
    match.run(RayBackend(settings, concurrency=2))
    st = match.stats[0]
    assert st.games == 2
    assert not (set(st.terminations) & {G.ENGINE_CRASH, G.ENGINE_TIMEOUT, G.ILLEGAL_MOVE}), st.terminations
