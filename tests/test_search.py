"""Search behaviour: tactics, forced captures, legality, determinism, mate scores, MultiPV, limits, skill."""
from __future__ import annotations

import random
import threading
import time

import numpy as np
import pytest

from uci_checkers.rules.position import Game, Position
from uci_checkers.search.alphabeta import MATE, MATE_BOUND, SearchLimits, Searcher, mate_in_moves

BALLOT_FENS = (
    "W:W17,22,23,24,25,26,27,28,29,30,31,32:B1,2,3,4,6,7,8,9,10,11,12,13",
    "W:W20,21,22,23,25,26,27,28,29,30,31,32:B1,2,3,4,5,6,7,8,9,12,14,15",
    "W:W18,21,22,24,25,26,27,28,29,30,31,32:B1,2,3,4,5,6,7,8,9,12,14,16",
)


@pytest.fixture(scope="module")
def searcher() -> Searcher:
    s = Searcher(8)
    s.warm_up()
    return s


def run(searcher: Searcher, fen_or_game, **kw):
    game = fen_or_game if isinstance(fen_or_game, Game) else Game(Position.from_fen(fen_or_game))
    infos = []
    searcher.clear()
    result = searcher.search(game, SearchLimits(**kw), infos.append, np.zeros(1, dtype=np.int64))
    return result, infos


# --- tactics -----------------------------------------------------------------
@pytest.mark.parametrize("fen, move, min_score", [
    # give one man, take two: 19-15 10x19 then 3x10x17
    ("W:WK3,19,22,27,28,29,30,31,32:B1,4,6,7,10,14,20", "19-15", 250),
    # 11-7 2x11, then 23-19 16x23 27x18x9x2: a man up
    ("W:W11,21,23,25,26,27,28,29,30,31,32:B1,2,3,4,5,6,10,12,14,16", "11-7", 150),
])
def test_finds_shots(searcher, fen, move, min_score):
    """The shot is seen (its line wins material) and the position is scored as won; another move that
    the evaluation likes as much may be chosen."""
    result, _ = run(searcher, fen, depth=8)
    assert result.score >= min_score
    shot = Position.from_fen(fen).parse_move(move)
    restricted, _ = run(searcher, fen, depth=8, searchmoves=[shot])
    assert str(restricted.best) == move and restricted.score >= min_score


def test_takes_forced_capture(searcher):
    # 9-13 22-17 13x22: White must recapture
    fen = "W:W21,23,24,25,26,27,28,29,30,31,32:B1,2,3,4,5,6,7,8,10,11,12,22"
    result, _ = run(searcher, fen, depth=6)
    assert result.best.is_capture
    assert result.best in Position.from_fen(fen).legal_moves()


def test_no_legal_move_returns_none(searcher):
    # White's only man is blocked: Black wins
    result, _ = run(searcher, "W:W29:B25,22", depth=4)
    assert result.best is None
    assert result.score == -MATE


def test_never_illegal_random_positions(searcher):
    rng = random.Random(7)
    start = Position.start()
    for trial in range(25):
        pos = start
        for _ in range(rng.randint(0, 40)):
            moves = pos.legal_moves()
            if not moves:
                break
            pos = pos.play(rng.choice(moves))
        legal = pos.legal_moves()
        result, _ = run(searcher, pos.fen(), depth=rng.randint(1, 6))
        if not legal:
            assert result.best is None
        else:
            assert result.best in legal
            # the PV is a legal line
            p = pos
            for m in result.pv:
                assert m in p.legal_moves()
                p = p.play(m)


# --- determinism ---------------------------------------------------------------
def test_same_nodes_twice_and_after_clear(searcher):
    game = Game(Position.from_fen(BALLOT_FENS[0]))
    a, ia = run(searcher, game, depth=9)
    b, ib = run(searcher, game, depth=9)
    fresh = Searcher(8)
    c = fresh.search(game, SearchLimits(depth=9), lambda i: None, np.zeros(1, dtype=np.int64))
    assert a.nodes == b.nodes == c.nodes > 1000
    assert a.best == b.best == c.best
    assert [(i.depth, i.score, i.nodes, [str(m) for m in i.pv]) for i in ia] == \
        [(i.depth, i.score, i.nodes, [str(m) for m in i.pv]) for i in ib]


def test_node_limit_deterministic_and_respected(searcher):
    a, _ = run(searcher, BALLOT_FENS[1], nodes=20000)
    b, _ = run(searcher, BALLOT_FENS[1], nodes=20000)
    assert a.nodes == b.nodes
    assert 20000 <= a.nodes <= 20000 + 50
    assert a.best == b.best


# --- scores and reporting ------------------------------------------------------
def test_mate_scores():
    assert mate_in_moves(MATE - 1) == 1
    assert mate_in_moves(MATE - 3) == 2
    assert mate_in_moves(-MATE + 2) == -1
    assert mate_in_moves(-MATE + 4) == -2
    assert mate_in_moves(100) is None


def test_mate_in_two_two_kings(searcher):
    # Black: 20-16 then 21x30 or similar; White's lone king is lost at once
    result, infos = run(searcher, "B:WK29:BK20,K21", mate=3)
    assert mate_in_moves(result.score) == 2
    assert infos[-1].mate == 2


def test_go_mate_finds_long_win(searcher):
    result, infos = run(searcher, "B:WK1:BK20,K21", mate=20, nodes=5_000_000)
    n = mate_in_moves(result.score)
    assert n is not None and 0 < n <= 20
    assert infos[-1].mate == n
    # the losing side sees a negative mate
    lost, _ = run(searcher, "W:WK5:BK10,K14", depth=24)
    assert lost.score < -MATE_BOUND and mate_in_moves(lost.score) < 0


def test_infos_per_depth(searcher):
    result, infos = run(searcher, BALLOT_FENS[2], depth=7)
    completed = [i for i in infos if i.bound is None and i.multipv == 1]
    depths = sorted({i.depth for i in completed})
    assert depths == list(range(1, 8))
    last = infos[-1]
    assert last.depth == 7 and last.seldepth >= 7 and last.pv and last.pv[0] == result.best
    assert last.nodes == result.nodes
    assert 0 <= last.hashfull <= 1000


def test_multipv_distinct_lines_ordered(searcher):
    result, infos = run(searcher, BALLOT_FENS[0], depth=6, multipv=3)
    final = [i for i in infos if i.depth == 6 and i.bound is None]
    assert [i.multipv for i in final] == [1, 2, 3]
    firsts = [i.pv[0] for i in final]
    assert len(set(firsts)) == 3
    scores = [i.score for i in final]
    assert scores == sorted(scores, reverse=True)
    assert result.best == firsts[0]


def test_searchmoves_respected(searcher):
    pos = Position.start()
    only = [pos.parse_move("12-16"), pos.parse_move("9-13")]
    result, infos = run(searcher, Game(pos), depth=6, searchmoves=only)
    assert result.best in only
    assert all(i.pv[0] in only for i in infos)


# three White kings against one Black king (a win for White); the kings shuttle, so that the position
# after Black's 28-32 (White to move) occurs again: once before the root after CYCLE, twice after two
CYCLE = ["27-32", "14-18", "32-28", "18-14", "28-32", "14-18", "32-28", "18-14"]


def _shuttled(plies: int) -> tuple[Game, list]:
    game = Game(Position.from_fen("B:WK14,K19,K22:BK27"))
    for m in CYCLE[:plies]:
        game.push_text(m)
    return game, [game.position.parse_move("28-32")]


def test_a_position_seen_once_before_the_root_is_not_a_draw(searcher):
    """The rules' draw is the third occurrence: a loser who steps back into a position seen once before is
    not saved (the winner steps aside), so the search must not score that move as a draw."""
    game, into_repeat = _shuttled(4)
    assert game.status().is_over is False
    result, _ = run(searcher, game, depth=6, searchmoves=into_repeat)
    assert result.score < -50


def test_the_third_occurrence_is_a_draw(searcher):
    game, into_repeat = _shuttled(8)
    assert game.status().is_over is False
    result, _ = run(searcher, game, depth=6, searchmoves=into_repeat)
    assert result.score == 0
    free, _ = run(searcher, game, depth=6)            # with every move: still lost for Black
    assert free.score == 0 or free.best in into_repeat  # the draw is Black's best move


@pytest.mark.parametrize("contempt", [10, -25])
def test_contempt_scores_a_draw_against_the_roots_side(searcher, contempt):
    """Contempt c: the forced draw (the lost side's repetition) scores -c for the side that searches, and
    the search still takes it (every other move loses); 0 is the plain draw of the test above."""
    game, into_repeat = _shuttled(8)
    result, _ = run(searcher, game, depth=6, searchmoves=into_repeat, contempt=contempt)
    assert result.score == -contempt
    free, _ = run(searcher, game, depth=6, contempt=contempt)
    assert free.best in into_repeat and free.score == -contempt


def test_contempt_counts_for_the_no_progress_draw_and_both_sides_parity(searcher):
    """The no-progress draw costs the root's side too, whichever side reaches it; ``_draw_score`` is
    -c at the root's even plies and +c at the opponent's odd ones."""
    from uci_checkers.search import alphabeta as AB
    game = Game(Position.from_fen("B:WK1:BK20,K21"), no_progress_plies=80)
    for nprog in (2, 3):                 # the draw met at an even ply (the root's side) and at an odd one
        result, _ = run(searcher, game, depth=12, no_progress_plies=nprog, contempt=30)
        assert result.score == -30, nprog
    ws = np.zeros(AB.WS_SIZE, dtype=np.int64)
    ws[AB.C_CONTEMPT] = 30
    assert [int(AB._draw_score(ws, np.int64(p))) for p in range(4)] == [-30, 30, -30, 30]
    won, _ = run(searcher, game, depth=12, contempt=30)      # a win is still a win
    assert won.score > 100


@pytest.mark.parametrize("earlier, ply, qp, draw", [
    ([2], 6, 6, True),             # met at ply 2 inside the search, again at ply 6: the side can repeat it
    ([0], 4, 4, True),             # the root itself, met again at ply 4
    ([-2], 2, 8, False),           # once before the root: this is its second occurrence
    ([-2, -6], 2, 8, True),        # twice before the root: the third occurrence
    ([-2, -6], 2, 4, False),       # ... but the older one lies before the last irreversible move
    ([2], 6, 3, False),            # no repetition within fewer than 4 quiet plies
])
def test_the_repetition_rule_of_the_search(earlier, ply, qp, draw):
    """``_repeats`` on a hand-made key stack: the root at index 40, the key met at the plies ``earlier``
    (relative to the root; negative: the game's history)."""
    from uci_checkers.search import alphabeta as AB
    ws = np.zeros(AB.WS_SIZE, dtype=np.int64)
    root, key = 40, 0x1234_5678_9ABC
    ws[AB.C_ROOTIDX] = root
    for p in earlier:
        ws[AB.W_KEYS + root + p] = key
    assert bool(AB._repeats(ws, np.int64(key), np.int64(ply), np.int64(qp))) is draw
    assert ws[AB.W_KEYS + root + ply] == key          # the node's key is recorded for the plies below


def test_history_rewards_the_best_quiet_move_and_lowers_the_ones_tried_before_it():
    """``_reward_quiet_best`` on a hand-made move list: the best move (the third tried) gains, the two
    tried before it lose, one not tried keeps its counter; repeated rewards stay within +-HIST_MAX."""
    from uci_checkers.search import alphabeta as AB
    from uci_checkers.search import params as SP
    ws = np.zeros(AB.WS_SIZE, dtype=np.int64)
    ws[AB.W_PARAMS:AB.W_PARAMS + SP.N_PARAMS] = SP.pack()       # the history bonus cap is one of them
    moves = [(9, 13), (10, 14), (11, 15), (12, 16)]              # (from bit, to bit) of four quiet moves
    start, ply, hbase, depth = AB.W_MOVES, 3, AB.W_HIST, 6
    for j, (f, t) in enumerate(moves):
        ws[start + j] = f | (t << 6) | (np.int64(5 - j) << 48)   # packed as _score_moves leaves them
    slot = [hbase + f * 64 + t for f, t in moves]
    best = moves[2][0] | (moves[2][1] << 6)
    AB._reward_quiet_best(ws, np.int64(ply), np.int64(best), np.int64(0), np.int64(hbase), np.int64(depth),
                          np.int64(start), np.int64(2))
    bonus = 8 * depth * (depth - 1)
    assert ws[slot[2]] == bonus
    assert ws[slot[0]] == ws[slot[1]] == 1 - bonus
    assert ws[slot[3]] == 0
    assert ws[AB.W_KILL + 2 * ply] == best                      # and it is the first killer
    for _ in range(500):
        AB._reward_quiet_best(ws, np.int64(ply), np.int64(best), np.int64(best), np.int64(hbase),
                              np.int64(40), np.int64(start), np.int64(2))
    assert 0 < ws[slot[2]] <= AB.HIST_MAX and -AB.HIST_MAX <= ws[slot[0]] < 0


def test_a_game_with_repetitions_in_its_history_gets_a_move(searcher):
    game = Game(Position.from_fen("B:WK32,25:BK1,8"))
    for m in ["1-5", "32-27", "5-1", "27-32"]:
        game.push_text(m)
    result, _ = run(searcher, game, depth=6)
    assert result.best is not None


def test_no_progress_limit_is_draw(searcher):
    # Two kings against one is a win, but not with 2 plies left before the no-progress draw
    pos = Position.from_fen("B:WK1:BK20,K21")
    game = Game(pos, no_progress_plies=80)
    won, _ = run(searcher, game, depth=12)
    assert won.score > 100
    result, _ = run(searcher, game, depth=12, no_progress_plies=2)
    assert result.score == 0


# --- limits and stop ---------------------------------------------------------
def test_stop_flag_stops_quickly(searcher):
    game = Game(Position.from_fen(BALLOT_FENS[0]))
    stop = np.zeros(1, dtype=np.int64)
    searcher.clear()
    timer = threading.Timer(0.3, lambda: stop.__setitem__(0, 1))
    t0 = time.perf_counter()
    timer.start()
    result = searcher.search(game, SearchLimits(infinite=True), lambda i: None, stop)
    elapsed = time.perf_counter() - t0
    timer.cancel()
    assert result.best in game.position.legal_moves()
    assert elapsed < 3.0  # generous: stops within a few ms of the flag in practice


class FakeClock:
    """A time manager that ends the search after a fixed number of iterations."""

    def __init__(self, iterations: int) -> None:
        self.iterations = iterations
        self.calls = []

    def elapsed_ms(self) -> int:
        return 0

    def iteration_done(self, depth: int, best_changed: bool, score: int) -> bool:
        self.calls.append(depth)
        return depth >= self.iterations


def test_time_control_called_per_iteration(searcher):
    clock = FakeClock(5)
    game = Game(Position.from_fen(BALLOT_FENS[1]))
    searcher.clear()
    result = searcher.search(game, SearchLimits(), lambda i: None, np.zeros(1, dtype=np.int64), clock)
    assert clock.calls == [1, 2, 3, 4, 5]
    assert result.depth == 5


def test_single_legal_move_under_time_control(searcher):
    clock = FakeClock(50)
    game = Game(Position.from_fen("W:W18:B14,5"))  # White man 18 must take 14 (18x9): one legal move
    assert len(game.position.legal_moves()) == 1
    searcher.clear()
    result = searcher.search(game, SearchLimits(), lambda i: None, np.zeros(1, dtype=np.int64), clock)
    assert result.best == game.position.legal_moves()[0]
    assert clock.calls == [1]


# --- skill ---------------------------------------------------------------------
def test_skill_zero_reproducible_and_varied(searcher):
    pos = Position.start()
    a, _ = run(searcher, Game(pos), skill=0, seed=42)
    b, _ = run(searcher, Game(pos), skill=0, seed=42)
    assert a.best == b.best and a.nodes == 0
    picks = {run(searcher, Game(pos), skill=0, seed=s)[0].best for s in range(30)}
    assert len(picks) >= 4          # uniform over 7 moves: 30 seeds give several


def test_skill_levels_reproducible_and_legal(searcher):
    for level in (1, 5, 10, 15):
        game = Game(Position.from_fen(BALLOT_FENS[2]))
        a, _ = run(searcher, game, skill=level, seed=3)
        b, _ = run(searcher, game, skill=level, seed=3)
        assert a.best == b.best
        assert a.best in game.position.legal_moves()


# --- threads -------------------------------------------------------------------
def test_threads_two_gives_legal_move_and_stops():
    s = Searcher(8)
    s.set_threads(2)
    game = Game(Position.from_fen(BALLOT_FENS[0]))
    result = s.search(game, SearchLimits(depth=8), lambda i: None, np.zeros(1, dtype=np.int64))
    assert result.best in game.position.legal_moves() and result.depth == 8
    stop = np.zeros(1, dtype=np.int64)
    timer = threading.Timer(0.2, lambda: stop.__setitem__(0, 1))
    timer.start()
    t0 = time.perf_counter()
    result = s.search(game, SearchLimits(infinite=True), lambda i: None, stop)
    timer.cancel()
    assert time.perf_counter() - t0 < 3.0
    assert result.best in game.position.legal_moves()
    assert not [t for t in threading.enumerate() if t.name.startswith("search-helper")]
    # a helper searches with the main thread's contempt (its draws go into the shared table)
    from uci_checkers.search.alphabeta import C_CONTEMPT
    s.search(game, SearchLimits(depth=4, contempt=12), lambda i: None, np.zeros(1, dtype=np.int64))
    assert [int(h[C_CONTEMPT]) for h in s._helper_ws] == [12]
    # back to one thread: deterministic again
    s.set_threads(1)
    s.clear()
    a = s.search(game, SearchLimits(depth=7), lambda i: None, np.zeros(1, dtype=np.int64)).nodes
    s.clear()
    b = s.search(game, SearchLimits(depth=7), lambda i: None, np.zeros(1, dtype=np.int64)).nodes
    assert a == b


@pytest.mark.parametrize("helper_depth, adopted", [(9, True), (4, False)])
def test_a_helper_that_completed_a_deeper_iteration_gives_the_move(helper_depth, adopted):
    """The helper's report (here written by a stand-in helper) wins when it is deeper than the main
    thread's last completed iteration (depth 4 here), and is reported as the last line; otherwise the
    main thread's move stands."""
    game = Game(Position.from_fen(BALLOT_FENS[0]))
    legal = game.position.legal_moves()

    class StandInHelper(Searcher):
        def _helper(self, t, hws, hstop, children, stm, max_depth, finished):
            finished[t - 1] = (helper_depth, len(children) - 1, 123, [children[-1][0].word])

    s = StandInHelper(8)
    s.set_threads(2)
    infos = []
    result = s.search(game, SearchLimits(depth=4), infos.append, np.zeros(1, dtype=np.int64))
    if adopted:
        assert (result.best, result.depth, result.score) == (legal[-1], 9, 123)
        assert infos[-1].pv[0] == legal[-1] and infos[-1].depth == 9
    else:
        assert result.depth == 4 and infos[-1].depth == 4 and result.best == infos[-1].pv[0]


def test_engine_limits_match_the_search():
    from uci_checkers.engine import options
    from uci_checkers.search import alphabeta as search

    assert options._SEARCH_MAX_THREADS == search.MAX_THREADS
    assert options.MAX_CONTEMPT == search.MAX_CONTEMPT
