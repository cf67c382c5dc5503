"""The gui server's API without a browser: refusals leave the match unchanged, seeded replies, engine crashes."""
from __future__ import annotations

import socket
import sys
import time
from pathlib import Path

import pytest

from starlette.testclient import TestClient

from uci_checkers.gui.host import EngineCommand
from uci_checkers.gui.match import engine_seed
from uci_checkers.gui.server import create_app

RANDOM_MOVER = Path(__file__).resolve().parent / "engines" / "random_mover.py"


@pytest.fixture(scope="module")
def client():
    with TestClient(create_app(warm_up=False), base_url="http://127.0.0.1") as c:
        yield c


def new(client, **setup):
    r = client.post("/api/matches", json=setup)
    assert r.status_code == 201, r.text
    return r.json()


def step(client, state, frm, to, version=None):
    return client.post(f"/api/matches/{state['id']}/step",
                       json={"from": frm, "to": to, "version": state["version"] if version is None else version})


def test_practice_double_jump_is_one_turn_of_two_steps(client):
    s = new(client, mode="two-players", position="practice")
    assert s["turn_text"] == "Red: capture required"
    assert s["targets"] == {"9": [18]} and s["counts"] == {"red": 1, "white": 2}
    s = step(client, s, 9, 18).json()
    assert s["turn_text"] == "Red: continue jumping from 18"
    assert s["board"][13] == "" and s["board"][17] == "r" and s["targets"] == {"18": [27]}
    assert s["history"] == [] and s["turn"] == "red"
    s = step(client, s, 18, 27).json()
    assert s["result"]["title"] == "Red wins" and s["result"]["reason"] == "White has no pieces left."
    assert s["steps"] == 2
    assert [m["text"] for m in s["history"]] == ["Red 9×18×27"]


def test_illegal_and_stale_moves_are_refused_and_change_nothing(client):
    s = new(client, mode="two-players")
    cases = [
        ((11, 18, None), 400, "11 to 18 is not a legal move. From 11 the marked squares are: 15, 16."),
        ((22, 18, None), 400, "Square 22 holds no Red piece: select a ringed piece."),
        ((2, 7, None), 400, "The piece on 2 cannot move. Select a ringed piece."),
        ((11, 15, s["version"] + 1), 409, "out-of-date board"),
        ((0, 99, None), 400, "two squares numbered 1 to 32"),
    ]
    for (frm, to, version), code, message in cases:
        r = step(client, s, frm, to, version)
        assert r.status_code == code
        assert message in r.json()["error"]
        assert r.json()["state"] == s                    # the whole state, version included, is unchanged
    r = client.post(f"/api/matches/{s['id']}/step", content=b"not json")
    assert r.status_code == 400 and r.json()["error"] == "The request body must be JSON."
    # a capture is compulsory: the ordinary move is refused with the reason
    s = step(client, s, 11, 15).json()
    s = step(client, s, 22, 18).json()
    assert s["turn_text"] == "Red: capture required" and s["targets"] == {"15": [22]}
    r = step(client, s, 10, 14)
    assert "Capture required: the piece on 10 cannot jump" in r.json()["error"] and r.json()["state"] == s
    # mid-jump, another piece may not take over the turn
    s = new(client, mode="two-players", position="practice")
    s = step(client, s, 9, 18).json()
    r = step(client, s, 23, 19)
    assert r.json()["error"] == "Red: continue jumping from 18 with the same piece." and r.json()["state"] == s


def test_bad_setups_get_one_clear_sentence(client):
    for setup, message in [
        ({"seed": "   "}, "1 to 96 characters"),
        ({"seed": "x" * 97}, "1 to 96 characters"),
        ({"position": "setup", "setup_text": "B:W33:B1"}, "Cannot read the FEN"),
        ({"position": "setup", "setup_text": "1. 11-15 11-15 *"}, "Cannot read the PDN"),
        ({"mode": "robots"}, "Unknown opponent"),
    ]:
        r = client.post("/api/matches", json=setup)
        assert r.status_code == 400 and message in r.json()["error"], (setup, r.text)
    assert client.post("/api/matches", json={"seed": "  padded  "}).json()["setup"]["seed"] == "padded"
    r = client.get("/api/matches/nosuchmatch")
    assert r.status_code == 404 and "Change setup" in r.json()["error"]


def play_human_moves(client, s, moves):
    """Play the player's moves (each a list of squares) and collect the computer's replies."""
    replies = []
    for squares in moves:
        for a, b in zip(squares, squares[1:]):
            r = step(client, s, a, b)
            assert r.status_code == 200, r.text
            s = r.json()
        replies.append(s["history"][-1]["move"])
    return s, replies


def test_casual_replies_follow_the_seed_and_undo_restores_them(client):
    human = [[11, 15], [9, 13], [10, 14]]

    def first_legal_line(seed):
        s = new(client, mode="computer", level="casual", seed=seed)
        out = []
        for _ in range(6):
            frm = s["selectable"][0]
            s = step(client, s, frm, s["targets"][str(frm)][0]).json()
            out.append(s["history"][-1]["move"])
            if s["result"]:
                break
        return out

    assert first_legal_line("checkers-1") == first_legal_line("checkers-1")
    assert first_legal_line("checkers-1") != first_legal_line("another seed")

    s = new(client, mode="computer", level="casual", seed="undo-test")
    s, replies = play_human_moves(client, s, human[:2])
    assert s["can_undo"]
    before_undo = s["history"]
    s = client.post(f"/api/matches/{s['id']}/undo", json={"version": s["version"]}).json()
    assert len(s["history"]) == 2 and s["history"] == before_undo[:2]
    s, again = play_human_moves(client, s, human[1:2])
    assert again == replies[1:2] and s["history"] == before_undo


def test_two_players_undo_takes_back_one_turn_and_the_turn_in_progress(client):
    s = new(client, mode="two-players", side="white")
    assert s["orientation"] == "white"
    s = step(client, s, 11, 15).json()
    s = step(client, s, 22, 18).json()
    assert s["turn_text"] == "Red: capture required"
    s = client.post(f"/api/matches/{s['id']}/undo", json={"version": s["version"]}).json()
    assert [m["move"] for m in s["history"]] == ["11-15"] and s["turn"] == "white"
    # a multi-jump in progress goes back to the start of the turn
    p = new(client, mode="two-players", position="practice")
    p = step(client, p, 9, 18).json()
    p = client.post(f"/api/matches/{p['id']}/undo", json={"version": p["version"]}).json()
    assert p["partial"] == [] and p["board"][8] == "r" and p["board"][13] == "w"
    r = client.post(f"/api/matches/{p['id']}/undo", json={"version": p["version"]})
    assert r.status_code == 400 and r.json()["error"] == "There is no turn to undo yet."


def test_pause_resign_and_no_undo_after_the_end(client):
    s = new(client, mode="computer", level="casual")
    s = client.post(f"/api/matches/{s['id']}/pause", json={}).json()
    assert s["paused"] and s["turn_text"] == "Paused" and s["selectable"] == []
    r = step(client, s, 11, 15)
    assert r.status_code == 400 and "paused" in r.json()["error"]
    s = client.post(f"/api/matches/{s['id']}/resume", json={}).json()
    s = step(client, s, 11, 15).json()
    s = client.post(f"/api/matches/{s['id']}/resign", json={"version": s["version"]}).json()
    assert s["result"] == {"winner": "white", "title": "White wins", "reason": "Red resigned.", "pdn": "0-1"}
    r = client.post(f"/api/matches/{s['id']}/undo", json={"version": s["version"]})
    assert r.json()["error"] == "A completed match cannot be undone."
    pdn = client.get(f"/api/matches/{s['id']}/pdn").text
    assert '[Result "0-1"]' in pdn and "1. 11-15" in pdn
    again = client.post(f"/api/matches/{s['id']}/replay", json={}).json()
    assert again["id"] != s["id"] and again["setup"] == s["setup"] and again["history"] == []


def test_setup_position_from_pdn_and_analysis_stepping(client):
    s = new(client, mode="analysis", position="setup", setup_text="1. 11-15 23-19 2. 8-11 22-17 *")
    assert s["cursor"] == 4 and len(s["history"]) == 4
    s = client.post(f"/api/matches/{s['id']}/goto", json={"ply": 1}).json()
    assert s["cursor"] == 1 and s["turn"] == "white" and len(s["history"]) == 4
    s = step(client, s, 22, 18).json()                       # a new move there replaces the rest of the line
    assert [m["move"] for m in s["history"]] == ["11-15", "22-18"]
    r = client.post(f"/api/matches/{s['id']}/goto", json={"ply": 9})
    assert r.status_code == 400


def wait_for(client, match_id, predicate, timeout=60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        s = client.get(f"/api/matches/{match_id}").json()
        if predicate(s):
            return s
        time.sleep(0.05)
    raise AssertionError(f"state not reached in {timeout} s: {s}")


def test_engine_crash_is_reported_and_restart_recovers():
    command = EngineCommand([sys.executable, str(RANDOM_MOVER), "--fault", "async", "--slow-ms", "1500"])
    with TestClient(create_app(command, warm_up=False), base_url="http://127.0.0.1") as client:
        s = new(client, mode="computer", level="easy", side="white")     # the computer moves first
        assert s["thinking"] and s["turn_text"] == "Red (computer) is thinking…"
        host = client.app.state.gui.player
        deadline = time.monotonic() + 30
        while (host._engine is None or host._engine.process.poll() is not None) and time.monotonic() < deadline:
            time.sleep(0.02)
        host._engine.process.kill()                                       # the engine dies mid-search
        s = wait_for(client, s["id"], lambda st: st["engine_error"])
        assert s["engine_error"].startswith("The engine (random_mover) stopped working: engine terminated")
        assert s["turn_text"] == "The engine stopped" and not s["thinking"] and s["history"] == []
        s = client.post(f"/api/matches/{s['id']}/restart-engine", json={}).json()
        assert s["thinking"] and s["engine_error"] is None
        s = wait_for(client, s["id"], lambda st: st["history"])
        assert s["turn"] == "white" and s["selectable"] and s["engine_error"] is None


def test_engine_seed_is_stable():
    assert engine_seed("checkers-1") == engine_seed("checkers-1") == 927292802
    assert 0 <= engine_seed("x" * 96) < 2 ** 31


def test_engine_argument_parsing():
    c = EngineCommand.parse(['cmd=python -m other "a b"', "dir=/tmp", "option.Hash=32"])
    assert c.argv == ["python", "-m", "other", "a b"] and c.cwd == "/tmp" and c.options == {"Hash": "32"}
    for bad in (["python"], ["colour=red"], ["cmd="]):
        with pytest.raises(ValueError):
            EngineCommand.parse(bad)


def test_other_host_names_are_refused(client):
    assert client.get("/api/info", headers={"host": "evil.example:8000"}).status_code == 400
    assert client.get("/api/info", headers={"host": "127.0.0.1:8000"}).status_code == 200


def test_command_line_refusals_are_one_line(capsys):
    from uci_checkers.gui.server import main

    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen(1)
    try:
        assert main(["--no-browser", "--port", str(busy.getsockname()[1])]) == 2
    finally:
        busy.close()
    err = capsys.readouterr().err
    assert err.startswith("uci-checkers gui: cannot serve on 127.0.0.1:") and err.count("\n") == 1
    assert main(["--no-browser", "--engine", "python"]) == 2
    assert capsys.readouterr().err == ("uci-checkers gui: --engine takes KEY=VALUE words (cmd=, dir=, "
                                       "option.NAME=), not 'python'\n")


LOADED_GAME = ('[Event "club night"]\n[Black "Ann"]\n[White "Bob"]\n[Result "1-0"]\n'
               '{from the club book} 1. 11-15 {the Old Fourteenth?} 23-19 2. 8-11 $1 22-17 {White resigned here} 1-0\n')


def test_save_pdn_keeps_a_loaded_games_result_and_annotations(client):
    s = new(client, mode="analysis", position="setup", setup_text=LOADED_GAME)
    pdn = client.get(f"/api/matches/{s['id']}/pdn").text
    assert '[Result "1-0"]' in pdn and pdn.rstrip().endswith("1-0")
    for kept in ('[Event "club night"]', '[Black "Ann"]', "{from the club book}", "{the Old Fourteenth?}",
                 "8-11 $1", "{White resigned here}"):
        assert kept in pdn, (kept, pdn)
    # stepping back does not change the game that is saved
    s = client.post(f"/api/matches/{s['id']}/goto", json={"ply": 2}).json()
    assert client.get(f"/api/matches/{s['id']}/pdn").text == pdn
    # another move from there: a new line, ongoing; the annotations of the moves it shares stay
    s = step(client, s, 9, 13).json()
    pdn = client.get(f"/api/matches/{s['id']}/pdn").text
    assert '[Result "*"]' in pdn and "{the Old Fourteenth?}" in pdn
    assert "$1" not in pdn and "resigned" not in pdn and "9-13" in pdn


def test_save_pdn_of_an_analysis_line_that_ends_the_game(client):
    s = new(client, mode="analysis", position="practice")
    s = step(client, step(client, s, 9, 18).json(), 18, 27).json()
    assert s["result"]["pdn"] == "1-0"
    pdn = client.get(f"/api/matches/{s['id']}/pdn").text
    assert '[Result "1-0"]' in pdn and "9x18x27 1-0" in pdn


def test_every_board_has_its_own_position_id(client):
    s = new(client, mode="analysis", position="setup", setup_text="1. 11-15 23-19 *")
    other = new(client, mode="analysis", position="setup", setup_text="1. 11-15 23-19 *")
    assert s["position_id"] != other["position_id"]
    back = client.post(f"/api/matches/{s['id']}/goto", json={"ply": 1}).json()
    assert back["position_id"] not in (s["position_id"], other["position_id"])
    assert client.get(f"/api/matches/{s['id']}").json()["position_id"] == back["position_id"]
