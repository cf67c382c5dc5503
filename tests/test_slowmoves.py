"""The pure-Python rules (rules/slowmoves.py) against the kernels (rules/movegen.py), bit for bit.

``Position`` answers with slowmoves while another thread compiles the kernels (a first
start), so the two must never differ: on thousands of seeded random positions (the
generators of test_movegen.py: full boards, king endgames, capture-heavy boards) the
same move words and landing paths, per move the same resulting position, and the same
capture test, move count and Zobrist key; and the perft counts of tests/data/perft.tsv.
"""
from __future__ import annotations

import csv
import threading
from pathlib import Path

import numpy as np
import pytest

from test_movegen import random_positions, to_bits
from uci_checkers.rules import movegen as mg
from uci_checkers.rules import backend
from uci_checkers.rules import slowmoves as slow
from uci_checkers.rules.position import Game, Position

DATA = Path(__file__).resolve().parent / "data"
N_PER_KIND = 1200           # three kinds -> 3,600 positions, both sides of each


def kernel_words(black: int, white: int, kings: int, stm: int) -> list[tuple[int, int]]:
    moves = np.zeros(mg.MAX_MOVES, dtype=np.int64)
    paths = np.zeros(mg.MAX_MOVES, dtype=np.int64)
    n = mg.gen_moves(black, white, kings, stm, moves, paths, 0)
    return [(int(moves[i]), int(paths[i])) for i in range(n)]


def check_position(black: int, white: int, kings: int) -> int:
    """Compare everything slowmoves gives for both sides to move; the number of moves compared."""
    compared = 0
    for stm in (0, 1):
        args = (black, white, kings, stm)
        words = slow.gen_moves(*args)
        assert sorted(words) == sorted(kernel_words(*args)), Position(*args).fen()
        assert slow.has_capture(*args) == bool(mg.has_capture(*args))
        assert slow.count_moves(*args) == int(mg.count_moves(*args))
        assert slow.hash_position(*args) == int(mg.hash_position(*args))
        for word, _ in words:
            assert slow.make_move(*args, word) == tuple(int(x) for x in mg.make_move(*args, word))
        compared += len(words)
    return compared


def test_random_positions_agree_with_the_kernels():
    compared = 0
    for _, board, side in random_positions(N_PER_KIND, seed=20261120):
        black, white, kings, _ = to_bits(board, side)
        compared += check_position(black, white, kings)
    assert compared > 20_000


def test_games_played_from_the_start_agree_with_the_kernels():
    import random

    rng = random.Random(7)
    for _ in range(40):
        pos = Position.start()
        for _ in range(120):
            check_position(pos.black, pos.white, pos.kings)
            words = slow.gen_moves(pos.black, pos.white, pos.kings, pos.turn)
            if not words:
                break
            b, w, k = slow.make_move(pos.black, pos.white, pos.kings, pos.turn, rng.choice(words)[0])
            pos = Position(b, w, k, 1 - pos.turn)


def _slow_perft(black: int, white: int, kings: int, stm: int, depth: int) -> int:
    words = slow.gen_moves(black, white, kings, stm)
    if depth == 1:
        return len(words)
    return sum(_slow_perft(*slow.make_move(black, white, kings, stm, word), 1 - stm, depth - 1)
               for word, _ in words)


def test_perft_counts_of_the_reference_table():
    rows = [row for row in csv.reader((DATA / "perft.tsv").open(encoding="utf-8"), delimiter="\t")
            if row and not row[0].startswith("#") and row[0] != "name"]
    checked = 0
    for name, fen, depth, paths, *_ in rows:
        if int(paths) > 20_000:          # pure Python: the small rows say enough
            continue
        pos = Position.from_fen(fen)
        assert _slow_perft(pos.black, pos.white, pos.kings, pos.turn, int(depth)) == int(paths), (name, depth)
        checked += 1
    assert checked >= 30


def test_position_uses_the_python_rules_while_another_thread_loads_the_kernels(monkeypatch):
    """Before the kernels are loaded, while a thread inside load_kernels holds its lock, the other
    threads get slowmoves: the same answers, without waiting for the compilation."""
    used: list[str] = []
    real_gen = slow.gen_moves

    def spy(*args: int) -> list[tuple[int, int]]:
        used.append("slow")
        return real_gen(*args)

    monkeypatch.setattr(slow, "gen_moves", spy)
    fen = "B:W6,7,14,15,23:BK2,K10"             # a king's capture loop: two paths to the same end
    with_kernels = [(m.squares, m.word) for m in Position.from_fen(fen).legal_moves()]
    game_kernels = Game.from_moves(Position.from_fen(fen), ["2x11x18x9x2"])
    assert used == []
    loading = threading.Event()
    release = threading.Event()

    def loader() -> None:
        with backend._LOAD_LOCK:               # what load_kernels holds while it compiles
            loading.set()
            release.wait(10)

    thread = threading.Thread(target=loader)
    thread.start()
    try:
        assert loading.wait(10)
        monkeypatch.setattr(backend, "_KERNELS", None)     # as before the first load
        pos = Position.from_fen(fen)
        assert [(m.squares, m.word) for m in pos.legal_moves()] == with_kernels
        game = Game.from_moves(Position.from_fen(fen), ["2x11x18x9x2"])
        assert game.position == game_kernels.position
        assert game.history_keys() == game_kernels.history_keys()
        assert game.status() == game_kernels.status()
        assert used, "the pure-Python rules were not used"
    finally:
        release.set()
        thread.join(10)


@pytest.mark.parametrize("fen", ["B:W21-32:B1-12", "W:WK5,6,10,12:BK4,K18,K25,K26", "B:W26,27:B22"])
def test_moves_read_from_text_are_the_same(fen):
    pos = Position.from_fen(fen)
    for move in pos.legal_moves():
        b, w, k = slow.make_move(pos.black, pos.white, pos.kings, pos.turn, move.word)
        assert Position(b, w, k, 1 - pos.turn) == pos.play(move)


def test_a_deferred_process_never_loads_the_kernels_in_a_rules_call(monkeypatch):
    """After defer_to_background (the engine's start), rules calls use slowmoves until the warm-up has
    loaded the kernels, in every thread: none of them compiles for seconds."""
    def no_loading() -> None:
        raise AssertionError("a rules call tried to load the kernels")

    moves = ["9-14", "23-19", "10-15", "19x10", "6x15", "26-23", "15-19", "23x16", "11x20", "31-26", "14-17",
             "22x13", "7-11", "21-17"]
    with_kernels = Game.from_moves(None, moves)
    monkeypatch.setattr(backend, "_KERNELS", None)
    monkeypatch.setattr(backend, "_DEFERRED", threading.Event())
    monkeypatch.setattr(backend, "_load_locked", no_loading)
    backend.defer_to_background()
    game = Game.from_moves(None, moves)
    assert game.position.legal_moves() == with_kernels.position.legal_moves()
    assert game.history_keys() == with_kernels.history_keys()
    assert not backend.loaded()
