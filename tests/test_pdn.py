"""PDN reading and writing: the awkward corpus, round trips, error reporting."""
from __future__ import annotations

import random
from pathlib import Path

import pytest

from uci_checkers.rules.pdn import PdnError, PdnGame, normalize_result, parse_pdn, read_game, read_pdn_file, write_game, write_games, write_pdn_file
from uci_checkers.rules.position import Game, GameStatus, Position

DATA = Path(__file__).parent / "data"


def _same(a: PdnGame, b: PdnGame) -> None:
    assert a.start == b.start
    assert a.moves == b.moves
    assert [m.squares for m in a.moves] == [m.squares for m in b.moves]
    assert a.result == b.result
    assert a.comments == b.comments
    assert a.nags == b.nags
    assert a.variations == b.variations
    assert a.first_move_number == b.first_move_number
    for k, v in a.tags.items():
        if k not in ("Result", "FEN"):
            assert b.tags[k] == v


@pytest.fixture(scope="module")
def corpus():
    return read_pdn_file(DATA / "awkward.pdn")


def test_corpus_reads_good_games_and_reports_broken_ones(corpus):
    good = [g.index + 1 for g in corpus.games]
    bad = {e.game_index + 1: e for e in corpus.errors}
    assert good == [1, 2, 5, 6, 8, 10, 11, 14, 16]
    assert sorted(bad) == [3, 4, 7, 9, 12, 13, 15]
    for number, game in zip(good, corpus.games):
        event = game.tags.get("Event", "")
        assert "BROKEN" not in event
        if event:
            assert event.startswith(f"{number:02d}")
    reasons = {n: e.reason for n, e in bad.items()}
    assert "17x10" in reasons[3] and "illegal" in reasons[3]
    assert "ambiguous" in reasons[4] and "3x10x1" in reasons[4]
    assert "never closed" in reasons[7]
    assert "GameType" in reasons[9]
    assert "FEN" in reasons[12]
    assert "alphanumeric" in reasons[13]
    assert "')'" in reasons[15]
    assert str(bad[3]).startswith("game 3 (line 31):")
    assert all(e.line > 0 for e in corpus.errors)


def test_corpus_game_contents(corpus):
    by_number = {g.index + 1: g for g in corpus.games}
    g1 = by_number[1]
    assert g1.result == "1-0"                       # 2-0 is the 2-point form of 1-0
    assert len(g1.moves) == 47
    assert g1.game().status() is GameStatus.BLACK_WINS
    assert str(g1.moves[11]) == "28x19x10"          # short capture 28x10 resolved
    assert str(g1.moves[28]) == "13x22x31"
    assert g1.nags == {6: ["!"], 10: ["$2"], 28: ["?!"]}
    assert g1.comments[0][0].startswith("A comment before the first move")
    assert g1.comments[12] == ["short capture: 28x19x10"]
    assert g1.variations[14][0].startswith("7... 32-28")
    assert [str(m) for m in g1.variation_moves(14)] == ["32-28", "14-17", "21x14"]
    assert g1.tags["Site"] == 'Club "The Crown"'
    g2 = by_number[2]
    assert g2.start.turn == 1 and g2.result == "0-1"
    assert g2.comments[1] == ["White's usual reply"]
    assert g2.move_label(0) == "1..." and g2.move_label(1) == "2."
    assert str(by_number[5].moves[0]) == "3x12x19x10x1"   # resolved to the full path
    g6 = by_number[6]
    assert g6.tags == {} and g6.result == "1/2-1/2" and len(g6.moves) == 6
    assert by_number[10].result == "1/2-1/2"        # only in the tag
    assert by_number[11].tags["Event"] == '11 unescaped "quotes" in a value'
    assert [str(m) for m in by_number[14].moves] == ["10-14", "22-17", "11-15", "17x10", "7x14"]
    assert by_number[16].result == "0-1" and len(by_number[16].moves) == 2


def test_corpus_round_trip(corpus):
    text = write_games(corpus.games)
    again = parse_pdn(text)
    assert not again.errors
    assert len(again.games) == len(corpus.games)
    for a, b in zip(corpus.games, again.games):
        _same(a, b)
    assert write_games(again.games) == text


def test_latin1_crlf_file():
    doc = read_pdn_file(DATA / "latin1_crlf.pdn")
    assert not doc.errors
    (g,) = doc.games
    assert g.tags["Black"] == "Jürgen" and g.tags["White"] == "Señor"
    assert g.comments == {4: ["Señor takes"]}
    assert g.result == "0-1" and len(g.moves) == 6


def test_bom_and_empty():
    assert len(parse_pdn("").games) == 0
    assert len(parse_pdn("  \n\n").games) == 0
    doc = parse_pdn("\ufeff[Event \"x\"]\n1. 11-15 *\n")
    assert not doc.errors and doc.games[0].tags["Event"] == "x"


def _random_game(rng: random.Random, start: Position, plies: int) -> Game:
    game = Game(start)
    while len(game.moves) < plies and not game.status().is_over:
        game.push(rng.choice(game.position.legal_moves()))
    return game


def test_random_games_round_trip(tmp_path):
    rng = random.Random(11)
    fens = ["W:W17,22,23,24,25,26,27,28,29,30,31,32:B1,2,3,4,6,7,8,9,10,11,12,13",
            "W:W21,23,24,25,26,27,28,29,30,31,32:B1,2,3,4,5,6,7,8,10,11,12,22",
            "B:WK5,22,23:B9,K30"]
    starts = [Position.start()] * 6 + [Position.from_fen(f) for f in fens]
    games = []
    for i, start in enumerate(starts):
        g = PdnGame.from_game(_random_game(rng, start, rng.randint(0, 90)),
                              tags={"Event": f"random {i}", "Round": str(i)})
        n = len(g.moves)
        if n:
            g.comments = {0: ["start"], n: ["the end"]}
            k = rng.randint(1, n)
            g.comments[k] = g.comments.get(k, []) + ["a note; with (odd) characters"]
            g.nags = {k: ["$4"], 1: ["!"]}
        games.append(g)
    path = tmp_path / "out.pdn"
    write_pdn_file(path, games)
    doc = read_pdn_file(path)
    assert not doc.errors
    assert len(doc.games) == len(games)
    for a, b in zip(games, doc.games):
        _same(a, b)
        if a.start != Position.start():
            assert b.tags["FEN"] == a.start.fen()
        assert b.tags["GameType"] == "21"


def test_results_and_normalisation():
    assert normalize_result("2-0") == "1-0"
    assert normalize_result("0-2") == "0-1"
    assert normalize_result("1-1") == "1/2-1/2"
    assert normalize_result("1/2-1/2") == "1/2-1/2"
    assert normalize_result("3-0") is None
    g = read_game("1. 11-15 23-19 1-1")
    assert g.result == "1/2-1/2"
    assert "1/2-1/2" in write_game(g)


def test_from_game_uses_status():
    game = Game.from_moves(None, "10-14 22-17 11-15 17x10 7x14".split())
    g = PdnGame.from_game(game, tags={"Black": "me"})
    assert g.result == "*" and g.tags["GameType"] == "21"
    text = g.pdn()
    assert text.startswith('[GameType "21"]\n[Black "me"]\n[Result "*"]\n\n1. 10-14 22-17 2. 11-15 17x10 3. 7x14 *')


def test_read_game_errors():
    with pytest.raises(PdnError):
        read_game("")
    with pytest.raises(PdnError, match="expected one game"):
        read_game("1. 11-15 *\n1. 9-13 *")
    with pytest.raises(PdnError, match="game 1"):
        read_game("1. 11-15 23-19 2. 11-16 *")
    with pytest.raises(PdnError, match="unexpected text"):
        read_game("1. 11-15 hello *")
    assert isinstance(PdnError("x"), ValueError)


def test_unclosed_comment_does_not_swallow_next_game():
    doc = parse_pdn('[Event "a"]\n1. 11-15 {oops\n\n[Event "b"]\n1. 9-13 *\n')
    assert [e.game_index for e in doc.errors] == [0]
    assert [g.tags["Event"] for g in doc.games] == ["b"]
    assert doc.games[0].index == 1


def test_variation_with_illegal_move_is_reported_on_demand():
    g = read_game("1. 11-15 (1. 11-12) 23-19 *")
    assert g.variations == {1: ["1. 11-12"]}
    with pytest.raises(PdnError, match="variation 1"):
        g.variation_moves(1)


def _arena_style_game() -> PdnGame:
    start = Position.from_fen("W:W21-32:B1-8,10-12,15")
    tags = {"Event": "arena", "Round": "3", "Black": "b", "White": "w", "Result": "?", "GameType": "21",
            "SetUp": "1", "FEN": "", "Termination": "time forfeit", "PlyCount": "4"}
    g = PdnGame.from_moves(["22-18", "15x22", "25x18", "12-16"], start=start, tags=tags, result="0-1")
    g.comments = {2: ["+0.25/2 0.010s"], 3: ["-0.50/2 0.011s"], 4: ["+M3/5 0.002s", "Black (b): {late}"]}
    return g


def test_tag_order_per_move_comments_and_white_first_numbering():
    text = write_game(_arena_style_game())
    assert text == (
        '[Event "arena"]\n[Round "3"]\n[Black "b"]\n[White "w"]\n[Result "0-1"]\n[GameType "21"]\n'
        '[SetUp "1"]\n[FEN "W:W21,22,23,24,25,26,27,28,29,30,31,32:B1,2,3,4,5,6,7,8,10,11,12,15"]\n'
        '[Termination "time forfeit"]\n[PlyCount "4"]\n\n'
        '1... 22-18 2. 15x22 {+0.25/2 0.010s} 2... 25x18 {-0.50/2 0.011s} 3. 12-16\n'
        '{+M3/5 0.002s} {Black (b): {late)} 0-1\n')
    again = read_game(text)
    assert list(again.tags) == list(_arena_style_game().tags)          # order kept on reading too
    assert again.comments == {2: ["+0.25/2 0.010s"], 3: ["-0.50/2 0.011s"],
                              4: ["+M3/5 0.002s", "Black (b): {late)"]}
    assert again.complete and write_game(again) == text


def test_tag_lookup_ignores_the_case_of_the_name():
    g = read_game('[fen "W:W21:B1"]\n[Round "7"]\n1... 21-17 *')
    assert g.tag("FEN") == "W:W21:B1" and g.tag("round") == "7"
    assert g.tag("Opening") == "" and g.tag("Opening", "?") == "?"


def test_a_cut_off_game_is_incomplete_or_an_error_never_a_finished_game():
    # what a program appending games as they finish leaves when it is killed mid-write
    first = PdnGame.from_moves("11-15 23-19 8-11 22-17".split(), tags={"Round": "1"}, result="1/2-1/2")
    second = _arena_style_game()
    head = write_game(first) + "\n"
    text = head + write_game(second) + "\n"
    seen_incomplete = 0
    for cut in range(len(head), len(text) + 1):
        doc = parse_pdn(text[:cut])
        assert doc.games[0].complete and doc.games[0].moves == first.moves
        rest = doc.games[1:]
        assert len(rest) + len(doc.errors) <= 1
        for g in rest:
            if g.complete:                  # only once the result token is there
                assert cut >= len(text) - 2 and g.moves == second.moves and g.result == "0-1"
            else:
                seen_incomplete += 1
                assert g.moves == second.moves[:len(g.moves)]
                assert g.result == (g.tag("Result") or "*")
    assert seen_incomplete > 20
    # a game in the middle of a file without a result token is incomplete too
    doc = parse_pdn('[Round "1"]\n[Result "1-0"]\n\n1. 11-15 23-19\n[Round "2"]\n\n1. 9-13 *\n')
    assert [g.complete for g in doc.games] == [False, True] and doc.games[0].result == "1-0"
    assert PdnGame().complete                       # a game built in memory is whole


def test_document_is_a_sequence_of_its_games():
    doc = parse_pdn('[Event "a"]\n1. 11-15 *\n\n[Event "bad"]\n1. 11-16 11-15 *\n\n[Event "b"]\n1. 9-13 *\n')
    assert len(doc) == 2 and len(doc.errors) == 1
    assert doc[0].tags["Event"] == "a" and doc[-1].tags["Event"] == "b"
    assert [g.tags["Event"] for g in doc[0:2]] == ["a", "b"]
    assert [g.tags["Event"] for g in doc] == ["a", "b"]
    with pytest.raises(IndexError):
        doc[2]


def test_write_pdn_file_is_atomic(tmp_path, monkeypatch):
    import os
    path = tmp_path / "games.pdn"
    path.write_text("old text\n")
    game = PdnGame.from_moves(["11-15"])

    def crash(*args):
        raise OSError("simulated crash before the rename")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError):
        write_pdn_file(path, [game])
    assert path.read_text() == "old text\n"
    assert [p.name for p in tmp_path.iterdir()] == ["games.pdn"]
    monkeypatch.undo()
    write_pdn_file(path, [game])
    assert read_pdn_file(path)[0].moves == game.moves
