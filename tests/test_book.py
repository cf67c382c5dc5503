"""The opening book: file format, drop-out expansion, the engine's use of a book, and the build command.

Books are built in the test run (a few positions at a small depth, or with a stand-in search whose
values are a fixed function of the position), never read from the shared data.
"""
from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from test_protocol import Session
from uci_checkers.book.build import (BookBuildError, BookState, BuildSettings, LocalRunner, Node, SearchRequest,
                                     build, negate)
from uci_checkers.book.probe import candidates, choose
from uci_checkers.book.store import (BookError, BookMove, encode_book, key_fen, load_book, position_key,
                                     write_book)
from uci_checkers.rules.position import Game, Position
from uci_checkers.tools import book_command

REPO = Path(__file__).resolve().parent.parent
WAIT = 60.0


# --------------------------------------------------------------------------------------------------
# A stand-in search: values fixed by the position, so the graph logic is tested without searching
# --------------------------------------------------------------------------------------------------
def fake_value(fen: str, move: str) -> int:
    return int.from_bytes(hashlib.sha256(f"{fen}|{move}".encode()).digest()[:2], "little") % 81 - 40


class FakeRunner:
    """``run`` as the real runners do, from :func:`fake_value`; counts the searches."""

    def __init__(self, multipv: int = 2) -> None:
        self.multipv = multipv
        self.requests: list[SearchRequest] = []

    def run(self, requests):
        out = []
        for r in requests:
            self.requests.append(r)
            pos = Position.from_fen(r.fen)
            moves = list(r.moves) if r.moves else [m.text() for m in pos.legal_moves()]
            lines = sorted(([m, fake_value(r.fen, m), 7] for m in moves), key=lambda x: -x[1])
            out.append(lines[:self.multipv])
        return out

    def close(self):
        pass


def roots(which: str = "start") -> list:
    return book_command.root_positions(which)


def fake_build(tmp_path: Path, target: int, name: str = "b", which: str = "start", **settings) -> BookState:
    s = BuildSettings(**{"depth": 3, "batch": 3, **settings})
    return build(tmp_path / f"{name}.book", tmp_path / f"{name}.state", roots(which), s, target,
                 runner=FakeRunner(s.multipv), quiet=True, checkpoint=5)


# --------------------------------------------------------------------------------------------------
# The file format
# --------------------------------------------------------------------------------------------------
def test_keys_are_exact_and_invertible():
    game = Game.from_moves(None, ["11-15", "23-19", "8-11", "22-17", "9-13", "17-14", "10x17", "21x14"])
    for pos in game.positions:
        key = position_key(pos)
        assert len(key) == 13 and Position.from_fen(key_fen(key)) == pos
    assert len({position_key(p) for p in game.positions}) == len(game.positions)
    kinged = Position.from_fen("W:WK1,K5,32:B2,K28,K29")
    assert Position.from_fen(key_fen(position_key(kinged))) == kinged


def test_a_book_file_round_trips(tmp_path):
    start = Position.start()
    after = start.play(start.parse_move("11-15"))
    entries = {position_key(start): [BookMove((11, 15), 12, 15), BookMove((9, 14), -3, 14)],
               position_key(after): [BookMove((22, 18), -10, 13)]}
    path = tmp_path / "x.book"
    write_book(path, entries, {"note": "test"})
    book = load_book(path)
    assert len(book) == 2 and book.moves == 3 and book.header["provenance"] == {"note": "test"}
    assert book.probe(start) == entries[position_key(start)]
    assert book.probe(after) == entries[position_key(after)]
    assert book.probe(after.play(after.legal_moves()[0])) == []
    assert dict(book.items()) == entries
    assert encode_book(entries, {"note": "test"}) == path.read_bytes()     # deterministic bytes


def test_broken_files_are_refused_in_one_sentence(tmp_path):
    good = tmp_path / "good.book"
    write_book(good, {position_key(Position.start()): [BookMove((11, 15), 0, 1)]}, {})
    data = good.read_bytes()
    cases = {"missing": None, "bad magic": b"NOTABOOK" + data[8:], "truncated": data[:20],
             "flipped": data[:-40] + bytes([data[-40] ^ 1]) + data[-39:], "empty": b""}
    for name, content in cases.items():
        path = tmp_path / f"{name}.book"
        if content is not None:
            path.write_bytes(content)
        with pytest.raises(BookError) as info:
            load_book(path)
        assert "\n" not in str(info.value) and str(path) in str(info.value)
    with pytest.raises(BookError, match="is a directory"):
        load_book(tmp_path)


def test_variety_candidates_and_the_seed():
    moves = [BookMove((11, 15), 20, 9), BookMove((9, 14), 12, 9), BookMove((10, 14), 0, 9), BookMove((12, 16), -50, 9)]
    assert candidates(moves, 0) == moves[:1] and candidates(moves, 8) == moves[:2] and candidates(moves, 70) == moves
    key = position_key(Position.start())
    assert all(choose(moves, 0, seed, key) == moves[0] for seed in range(20))
    picks = [choose(moves, 25, seed, key) for seed in range(40)]
    assert set(picks) == set(moves[:3])                                    # only within 25 of the best, all used
    assert picks == [choose(moves, 25, seed, key) for seed in range(40)]   # the same seed, the same move


# --------------------------------------------------------------------------------------------------
# Drop-out expansion (stand-in search)
# --------------------------------------------------------------------------------------------------
def check_graph(state: BookState) -> None:
    """Every expanded move leads where it says, known moves are legal and unexpanded, values are minimax."""
    values = state.values()
    for key, node in state.nodes.items():
        pos = Position.from_fen(node.fen)
        assert position_key(pos).hex() == key
        legal = {m.text(): m for m in pos.legal_moves()}
        assert node.terminal == (not legal)
        for text, child in node.expanded.items():
            assert position_key(pos.play(legal[text])).hex() == child and child in state.nodes
        for text, _, _ in node.known:
            assert text in legal and text not in node.expanded
        if len(legal) == 1:
            assert list(node.expanded) == list(legal)                     # forced: expanded, never searched
        cands = state.candidates(key, values)
        if cands and key in values:
            assert values[key][0] == max(v for _, v, _ in cands)
        for text, child in node.expanded.items():
            if child in values and key in values:
                assert dict((t, v) for t, v, _ in cands)[text] == negate(values[child][0])


def test_drop_out_expansion_keeps_the_graph_consistent(tmp_path):
    state = fake_build(tmp_path, 60)
    assert len(state.nodes) >= 60
    check_graph(state)
    # a position's next alternatives come from a search of exactly the moves not valued yet
    runner = FakeRunner()
    excluding = 0
    for _ in range(15):
        expansions, new, requests = state.plan(3)
        played = {key: text for key, text, _ in expansions}
        for r in requests:
            if r.moves:
                excluding += 1
                node = state.nodes[r.key]
                legal = {m.text() for m in Position.from_fen(node.fen).legal_moves()}
                assert set(r.moves) == legal - set(node.expanded) - {played[r.key]}
        state.commit(expansions, new, requests, runner.run(requests))
    assert excluding
    check_graph(state)


def test_the_priority_is_omega_per_ply_plus_the_errors_of_each_players_moves():
    start = Position.start()
    after = start.play(start.parse_move("11-15"))
    root, child = position_key(start).hex(), position_key(after).hex()
    state = BookState(BuildSettings(dropout=10, reply_weight=50), [["start", root]])
    state.nodes[root] = Node(start.fen(), {"11-15": child}, [["9-14", -10, 7]])
    state.nodes[child] = Node(after.fen(), {}, [["22-18", 5, 7], ["23-19", 0, 7]])
    values = state.values()
    assert values == {child: (5, 7), root: (-5, 8)}                      # minimax: 11-15 is worth -5 for Black
    prio = state.priorities(values)
    assert prio == [{root: 0, child: 1000}, {root: 0, child: 1000}]      # the best move: omega only (x100)
    # 9-14 is 5 worse than the best: Black's priority counts 5, White's half of it
    assert state.frontier(values) == [(min(1000 + 500, 1000 + 250), 0, root, "9-14"), (2000, 1, child, "22-18")]
    expansions, new, requests = state.plan(1)
    played = start.play(start.parse_move("9-14"))
    assert expansions == [(root, "9-14", position_key(played).hex())]
    assert list(new) == [position_key(played).hex()]
    # the root's last known move is played out: its other moves are searched for the next alternatives
    rest = tuple(m.text() for m in start.legal_moves() if m.text() not in ("11-15", "9-14"))
    assert requests == [SearchRequest(position_key(played).hex(), played.fen(), None),
                        SearchRequest(root, start.fen(), rest)]
    state.commit(expansions, new, requests, [[["22-17", 3, 7]], [["12-16", -30, 7]]])
    assert state.nodes[root].known == [["12-16", -30, 7]] and set(state.nodes[root].expanded) == {"11-15", "9-14"}
    assert state.values()[root] == (-3, 8)                               # 9-14 turned out best


def test_forced_moves_are_expanded_without_a_search():
    pos = Position.from_fen("W:W17,21,23,24,25,26,27,28,29,30,31,32:B1,2,3,4,5,6,7,8,9,11,12,18")   # 23x14 only
    assert len(pos.legal_moves()) == 1
    state = BookState(BuildSettings(), [["x", position_key(pos).hex()]])
    new, requests = state.start([("x", pos)])
    first = new[position_key(pos).hex()]
    assert len(first.expanded) == 1 and not first.known
    assert [r.key for r in requests] == [list(new)[-1]] and len(new) >= 2


@pytest.mark.parametrize("which,first,target", [("start", 20, 50), ("all", 60, 250)])
def test_rounds_do_not_depend_on_checkpoints_or_resuming(tmp_path, which, first, target):
    whole = fake_build(tmp_path, target, name="whole", which=which)
    part = fake_build(tmp_path, first, name="parts", which=which)
    assert len(part.nodes) < target
    rest = fake_build(tmp_path, target, name="parts", which=which)
    assert rest.to_bytes() == whole.to_bytes()
    assert (tmp_path / "parts.book").read_bytes() == (tmp_path / "whole.book").read_bytes()
    check_graph(rest)


class InterruptingRunner(FakeRunner):
    """A Ctrl-C after ``after`` searches (in the middle of a round)."""

    def __init__(self, after: int) -> None:
        super().__init__()
        self.after = after

    def run(self, requests):
        if len(self.requests) + len(requests) > self.after:
            raise KeyboardInterrupt
        return super().run(requests)


@pytest.mark.parametrize("after", [30, 180])      # among the roots, and among the expansions
def test_an_interrupted_build_saves_its_finished_rounds_and_resumes_to_the_same_book(tmp_path, after):
    whole = fake_build(tmp_path, 250, name="whole", which="all")
    s = BuildSettings(depth=3, batch=3)
    with pytest.raises(KeyboardInterrupt):
        build(tmp_path / "p.book", tmp_path / "p.state", roots("all"), s, 250, runner=InterruptingRunner(after),
              quiet=True, checkpoint=1000)
    saved = BookState.from_bytes((tmp_path / "p.state").read_bytes(), "p.state")
    assert 0 < saved.searches <= after
    rest = build(tmp_path / "p.book", tmp_path / "p.state", roots("all"), s, 250, runner=FakeRunner(), quiet=True,
                 checkpoint=1000)
    assert rest.to_bytes() == whole.to_bytes()
    assert (tmp_path / "p.book").read_bytes() == (tmp_path / "whole.book").read_bytes()


def test_a_resume_with_other_settings_is_refused(tmp_path):
    fake_build(tmp_path, 10)
    s = BuildSettings(depth=4, batch=3)
    with pytest.raises(BookBuildError, match="depth 3, not 4"):
        build(tmp_path / "b.book", tmp_path / "b.state", roots(), s, 20, runner=FakeRunner(), quiet=True,
              explicit=["depth"])
    with pytest.raises(BookBuildError, match="other roots"):
        build(tmp_path / "b.book", tmp_path / "b.state", roots("all"), BuildSettings(depth=3, batch=3), 20,
              runner=FakeRunner(), quiet=True)
    (tmp_path / "b.state").write_bytes(b"garbage")
    with pytest.raises(BookBuildError, match="unreadable"):
        build(tmp_path / "b.book", tmp_path / "b.state", roots(), BuildSettings(depth=3), 20, runner=FakeRunner(),
              quiet=True)


# --------------------------------------------------------------------------------------------------
# A real tiny book: built with the engine's search, then played from
# --------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def tiny_book(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("tinybook")
    s = BuildSettings(depth=3, batch=2, hash_mb=4)
    build(folder / "tiny.book", folder / "tiny.state", roots(), s, 16, quiet=True, checkpoint=4)
    return folder / "tiny.book"


def test_the_real_search_values_every_line(tmp_path):
    runner = LocalRunner(BuildSettings(depth=3, hash_mb=4))
    fen = Position.start().fen()
    first = runner.run([SearchRequest("k", fen, None)])[0]
    assert len(first) == 2 and first[0][1] >= first[1][1] and all(d == 3 for _, _, d in first)
    assert runner.run([SearchRequest("k", fen, None)])[0] == first          # reproducible
    rest = runner.run([SearchRequest("k", fen, ("9-13", "12-16"))])[0]
    assert sorted(t for t, _, _ in rest) == ["12-16", "9-13"]


def play_from_book(session: Session, moves: list[str]) -> tuple[str, list[str]]:
    session.send("position startpos" + (" moves " + " ".join(moves) if moves else ""))
    session.new()
    session.send("go movetime 300")
    best = session.bestmove().split()[1]
    session.idle()
    return best, session.new()


def test_the_engine_plays_a_tiny_book_and_its_moves_are_legal(tiny_book):
    book = load_book(tiny_book)
    s = Session()
    s.send(f"setoption name BookFile value {tiny_book}")
    game = Game()
    plies = 0
    while True:
        entries = book.probe(game.position)
        best, out = play_from_book(s, [m.text() for m in game.moves])
        assert not [line for line in out if line.startswith("info string error")]
        move = game.position.parse_move(best)                          # legal, or this raises
        if not entries:
            assert any(line.startswith("info depth") and " nodes 0 " not in line for line in out)
            break
        assert out[0] == f"info string book {best} {entries[0].value}"
        assert move.squares == entries[0].squares                      # BookVariety 0: the best
        assert out[1].startswith(f"info depth {entries[0].depth} ") and " nodes 0 " in out[1]
        assert out[1].split(" pv ")[1].split()[0] == best
        game.push(move)
        plies += 1
    assert plies >= 2
    s.send("quit")


def test_a_book_move_needs_no_kernels(tiny_book):
    from uci_checkers.engine.facade import Engine

    eng = Engine()
    gate = threading.Event()
    real_warm = eng._warm

    def slow_warm() -> None:
        gate.wait(20)
        real_warm()

    eng._warm = slow_warm                  # "compiling" until the gate opens
    s = Session(engine=eng)
    s.send(f"setoption name BookFile value {tiny_book}")
    s.send("position startpos")
    t0 = time.monotonic()
    s.send("go wtime 400 btime 400")
    best = s.bestmove(5).split()[1]
    assert time.monotonic() - t0 < 1.0 and not eng.ready
    assert best == load_book(tiny_book).probe(Position.start())[0].text()
    assert s.new()[0] == f"info string book {best} {load_book(tiny_book).probe(Position.start())[0].value}"
    gate.set()
    s.send("quit")


@pytest.mark.parametrize("setup,go,from_book", [
    ((), "go depth 3", False),
    ((), "go infinite", False),
    ((), "go mate 3 movetime 100", False),
    ((), "go movetime 100 searchmoves 11-15 9-13", False),
    (("UCI_AnalyseMode true",), "go movetime 100", False),
    (("MultiPV 2",), "go nodes 500", False),
    (("OwnBook false",), "go movetime 100", False),
    ((), "go nodes 500", False),                        # fixed effort: a fixed-node match measures the search
    ((), "go wtime 10000 btime 10000 nodes 500", False),
    ((), "go movetime 100", True),
    ((), "go wtime 10000 btime 10000", True),
])
def test_the_book_answers_game_moves_only(tiny_book, setup, go, from_book):
    s = Session()
    s.send(f"setoption name BookFile value {tiny_book}")
    for option in setup:
        name, value = option.rsplit(" ", 1)
        s.send(f"setoption name {name} value {value}")
    s.send("position startpos")
    s.new()
    s.send(go)
    if "infinite" in go:
        time.sleep(0.3)
        s.send("stop")
    s.bestmove()
    s.idle()
    out = s.new()
    assert any(line.startswith("info string book ") for line in out) == from_book, out
    s.send("quit")


def test_book_variety_follows_the_seed(tiny_book):
    book = load_book(tiny_book)
    entries = book.probe(Position.start())
    assert len(candidates(entries, 1000)) >= 2
    s = Session()
    s.send(f"setoption name BookFile value {tiny_book}")
    s.send("setoption name BookVariety value 1000")

    def moves_for(seeds):
        out = []
        for seed in seeds:
            s.send(f"setoption name Seed value {seed}")
            out.append(play_from_book(s, [])[0])
        return out

    first = moves_for(range(1, 13))
    assert len(set(first)) >= 2
    assert moves_for(range(1, 13)) == first
    assert set(first) <= {m.text() for m in entries}
    # Seed 0: a fresh seed per game, announced so the game can be replayed
    s.send("setoption name Seed value 0")
    s.send("ucinewgame")
    _, out = play_from_book(s, [])
    seed_line = next(line for line in out if line.startswith("info string book seed "))
    seed = int(seed_line.split()[4])
    s.send(f"setoption name Seed value {seed}")
    assert play_from_book(s, [])[1][0] == out[out.index(seed_line) + 1]
    s.send("quit")


@pytest.mark.parametrize("damage", ["missing", "corrupt"])
def test_a_missing_or_corrupt_book_gives_one_error_line_and_the_engine_plays_on(tiny_book, tmp_path, damage):
    path = tmp_path / "broken.book"
    if damage == "corrupt":
        data = tiny_book.read_bytes()
        path.write_bytes(data[:60] + bytes([data[60] ^ 0xFF]) + data[61:])
    s = Session()
    s.send(f"setoption name BookFile value {path}")
    s.send("position startpos")
    for _ in range(2):
        s.new()
        s.send("go movetime 100")
        best = s.bestmove().split()[1]
        s.idle()
        out = s.new()
        errors = [line for line in out if line.startswith("info string error")]
        if _ == 0:
            assert len(errors) == 1 and errors[0].startswith("info string error: book: ") and str(path) in errors[0]
            assert "playing without the book" in errors[0]
        else:
            assert errors == []                                             # said once
        assert best in [m.text() for m in Position.start().legal_moves()]
        assert any(line.startswith("info depth") and " nodes 0 " not in line for line in out)
    s.send("quit")


# --------------------------------------------------------------------------------------------------
# The command line
# --------------------------------------------------------------------------------------------------
def run_cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.run([sys.executable, "-m", "uci_checkers", "book", *args], capture_output=True, text=True,
                          timeout=timeout, env=env, start_new_session=True)


def test_info_and_probe(tiny_book, capsys):
    assert book_command.main(["info", str(tiny_book)]) == 0
    out = capsys.readouterr().out
    assert "opening book format 1" in out and "best line from the start position:" in out
    assert "depth 3" in out and "ballots" in out
    assert book_command.main(["probe", "startpos", "--book", str(tiny_book)]) == 0
    out = capsys.readouterr().out.splitlines()
    entries = load_book(tiny_book).probe(Position.start())
    assert out[0].endswith(f"{len(entries)} book move(s), values in centi-men for black")
    assert out[1].split()[0] == entries[0].text()
    assert book_command.main(["probe", "B:W32:B1", "--book", str(tiny_book)]) == 0
    assert capsys.readouterr().out.strip().endswith("not in the book")
    assert book_command.main(["probe", "X:nonsense", "--book", str(tiny_book)]) == 2
    assert book_command.main(["info", str(tiny_book.parent / "none.book")]) == 2   # input errors: exit 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2 and all(line.startswith("uci-checkers book ") for line in err), err
    assert "is missing" in err[1] and "Traceback" not in "".join(err)


def test_usage_errors_exit_2_in_one_line(tmp_path, capsys):
    bad_state = tmp_path / "bad.state"
    bad_state.write_bytes(b"not a state")
    for args in (["build", "--positions", "0"], ["build", "--depth", "0", "--out", str(tmp_path / "x.book")],
                 ["build", "--out", str(tmp_path / "no" / "x.book")], ["build", "--no-such-flag"],
                 ["build", "--out", str(tmp_path / "y.book"), "--state", str(bad_state)],
                 ["probe", "startpos", "--moves", "11-19"], ["info", str(bad_state)]):
        code = book_command.main(args)
        err = capsys.readouterr().err
        assert code == 2, (args, err)
        assert len(err.strip().splitlines()) == 1 and err.startswith("uci-checkers book") and "Traceback" not in err, \
            (args, err)


def wait_for(predicate, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return False


def test_an_interrupted_build_resumes_to_the_same_file(tmp_path):
    args = ["build", "--roots", "start", "--depth", "5", "--positions", "40", "--batch", "2", "--checkpoint", "3",
            "--hash", "4", "-q"]
    whole = run_cli(*args, "--out", str(tmp_path / "whole.book"))
    assert whole.returncode == 0, whole.stderr
    env = dict(os.environ, PYTHONPATH=str(REPO))
    out = tmp_path / "parts.book"
    proc = subprocess.Popen([sys.executable, "-m", "uci_checkers", "book", *args, "--out", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            start_new_session=True)
    try:
        assert wait_for(lambda: out.exists() or proc.poll() is not None, WAIT * 4)
        assert proc.poll() is None, "the build ended before it could be interrupted"
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=WAIT)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
    assert proc.returncode == 130, err
    assert "interrupted" in err and "Traceback" not in err
    partial = load_book(out)
    assert 0 < len(partial) < len(load_book(tmp_path / "whole.book"))
    again = run_cli(*args, "--out", str(out))
    assert again.returncode == 0, again.stderr
    assert out.read_bytes() == (tmp_path / "whole.book").read_bytes()
    assert (tmp_path / "parts.book.state").read_bytes() == (tmp_path / "whole.book.state").read_bytes()


def test_parallel_jobs_build_the_same_book(tmp_path):
    s = BuildSettings(depth=3, batch=3, hash_mb=4)
    build(tmp_path / "one.book", tmp_path / "one.state", roots(), s, 12, quiet=True)
    build(tmp_path / "two.book", tmp_path / "two.state", roots(), s, 12, jobs=2, quiet=True)
    assert (tmp_path / "one.book").read_bytes() == (tmp_path / "two.book").read_bytes()


def test_go_nodes_searches_the_same_with_and_without_the_book(tiny_book):
    # fixed-node matches between versions (match --nodes N) compare searches: the book must not answer them
    def searched(*options: str) -> list[str]:
        s = Session()
        s.send(f"setoption name BookFile value {tiny_book}")
        for option in options:
            s.send(f"setoption name {option}")
        s.send("position startpos")
        s.new()
        s.send("go nodes 3000")
        best = s.bestmove().split()[1]
        s.idle()
        out = s.new()
        s.send("quit")
        assert not any(line.startswith("info string book") for line in out), out
        last = [line for line in out if line.startswith("info depth")][-1]
        return [best, last.split(" nodes ")[1].split()[0]]

    assert load_book(tiny_book).probe(Position.start())
    assert searched() == searched("OwnBook value false")


def test_the_browser_game_plays_this_engines_book_at_its_levels(tiny_book):
    from uci_checkers.gui.host import LEVELS, EngineCommand, EngineHost

    entries = load_book(tiny_book).probe(Position.start())
    host = EngineHost(EngineCommand(None, None, {"BookFile": str(tiny_book)}))
    try:
        hard = host.book_move(Game(), LEVELS["hard"], 7)
        assert hard is not None and hard.squares == entries[0].squares             # variety 0: the best
        easy = {host.book_move(Game(), LEVELS["easy"], seed).squares for seed in range(1, 40)}
        assert easy == {m.squares for m in candidates(entries, LEVELS["easy"].book_variety)}
        assert host.book_move(Game(), LEVELS["easy"], 5) == host.book_move(Game(), LEVELS["easy"], 5)
        assert host.book_move(Game(Position.from_fen("B:W32:B1")), LEVELS["hard"], 7) is None   # not in the book
    finally:
        host.close()
    for command in (EngineCommand(None, None, {"BookFile": str(tiny_book), "OwnBook": "false"}),
                    EngineCommand(["some-engine"], None, {})):
        other = EngineHost(command)
        try:
            assert other.book_move(Game(), LEVELS["hard"], 7) is None              # the host plays no book then
        finally:
            other.close()


def test_analyse_switches_the_engines_book_off_unless_asked(tmp_path):
    # analyse's default limit is --movetime, a game move on time: the book would answer with nodes 0
    from uci_checkers.client import Limit
    from uci_checkers.tools.analyse import AnalysisSettings, _open_engine

    for options, from_book in (({}, False), ({"OwnBook": "true"}, True)):
        engine = _open_engine(AnalysisSettings(options=options))
        try:
            result = engine.play(Game(), Limit(movetime=100))
        finally:
            engine.quit(timeout=10)
        assert (result.info.nodes == 0) == from_book, (options, result.info)
