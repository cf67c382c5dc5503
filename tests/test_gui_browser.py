"""The page in a real headless Chromium (Debian's ``chromium`` driven by Playwright), against a real server.

One server (``uci-checkers gui --no-browser``, hosting this package's engine) and one
browser serve the whole module.  Without Debian's chromium these tests are skipped with
the package to install (so the README's test command passes on a fresh machine);
``UCI_CHECKERS_REQUIRE_BROWSER=1`` (set by ``.ci/run``, which installs it) makes a missing
browser a failure.  Playwright drives the system browser (``executable_path``): it needs
no browser download of its own.  ``GUI_SCREENSHOT=path.png`` saves the README's screenshot.
"""
from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
ENGINE_WAIT_MS = 240_000          # the first reply may wait for a cold numba compile
REQUIRE_BROWSER = os.environ.get("UCI_CHECKERS_REQUIRE_BROWSER") == "1"


def missing(reason: str) -> None:
    """A missing browser or driver: a skip that says what to install, or a failure where CI requires it."""
    if REQUIRE_BROWSER:
        pytest.fail(f"{reason} (required here: UCI_CHECKERS_REQUIRE_BROWSER=1)")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    stderr_path = tmp_path_factory.mktemp("gui-server") / "stderr.txt"
    with open(stderr_path, "w") as stderr:
        proc = subprocess.Popen([sys.executable, "-m", "uci_checkers", "gui", "--no-browser"], cwd=REPO,
                                stdout=subprocess.PIPE, stderr=stderr, text=True, start_new_session=True)
    first_line: list[str] = []
    reader = threading.Thread(target=lambda: first_line.append(proc.stdout.readline()), daemon=True)
    reader.start()
    reader.join(120)                                   # printed once the port is bound
    match = re.search(r"http://127\.0\.0\.1:\d+/", first_line[0] if first_line else "")
    if match is None:
        os.killpg(proc.pid, signal.SIGKILL)
        pytest.fail(f"uci-checkers gui did not start: {first_line!r} {stderr_path.read_text()}")
    yield match.group(0)
    os.killpg(proc.pid, signal.SIGINT)
    try:
        code = proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        code = proc.wait(timeout=5)
    errors = stderr_path.read_text()
    assert code == 130, errors
    assert "Traceback" not in errors


@pytest.fixture(scope="module")
def browser():
    if not Path(CHROMIUM).exists():
        missing(f"no browser at {CHROMIUM}: install Debian's chromium (apt-get install chromium)")
    try:
        from playwright import sync_api as playwright_api
    except ImportError:
        missing("playwright is missing: pip install -e '.[test]'")
    profile = tempfile.mkdtemp(prefix="gui-test-profile-")
    with playwright_api.sync_playwright() as p:
        context = p.chromium.launch_persistent_context(profile, executable_path=CHROMIUM, args=CHROMIUM_ARGS,
                                                       headless=True, viewport={"width": 900, "height": 1100})
        yield context
        context.close()
    shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture(scope="module")
def page(browser, server):
    pg = browser.pages[0] if browser.pages else browser.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda exc: errors.append(str(exc)))
    pg.set_default_timeout(20_000)
    pg.app_url = server
    yield pg
    assert not errors, errors


def open_page(page):
    page.goto(page.app_url)
    page.wait_for_selector("body[data-ready=true]")


def start(page, opponent="computer:casual", side="red", position="standard", seed="checkers-1", setup_text=""):
    open_page(page)
    page.select_option("#opponent", opponent)
    page.select_option("#side", side)
    page.select_option("#position", position)
    if setup_text:
        page.fill("#setup-text", setup_text)
    page.fill("#seed", seed)
    page.click("#start")
    page.wait_for_selector("#game-view:not([hidden])")


def square(page, sq):
    page.click(f'#board [data-square="{sq}"]')


def moves_text(page):
    return page.inner_text("#move-list")


def wait_for_player(page, timeout=20_000):
    """Until the player may move (a ringed piece) or the match is over; True when it is over."""
    handle = page.wait_for_function(
        "() => !document.getElementById('result').hidden ? 'over'"
        " : document.querySelector('#board .cell.movable') ? 'move' : null", timeout=timeout)
    return handle.json_value() == "over"


def play_first_choice(page):
    """Play the first ringed piece to its first marked square, jump by jump to the end of the turn."""
    page.click("#board .cell.movable")
    while True:
        before = page.get_attribute("#board", "data-version")
        page.click("#board .cell.target")
        handle = page.wait_for_function("v => { const b = document.getElementById('board');"
                                        " return b.dataset.version !== v && b.dataset.partial; }", arg=before)
        if handle.json_value() == "0":
            return


def test_full_game_against_the_engine_reaches_a_result(page, tmp_path):
    start(page, opponent="computer:easy", seed="quick-2")        # a seed whose game is short (42 plies today)
    for turn in range(200):
        if wait_for_player(page, ENGINE_WAIT_MS if turn == 0 else 60_000):
            break
        if turn == 6:
            shot = os.environ.get("GUI_SCREENSHOT") or str(tmp_path / "gui.png")
            page.screenshot(path=shot, full_page=True)
        play_first_choice(page)
    assert page.is_visible("#result")
    assert re.fullmatch(r"(Red wins|White wins|Draw)", page.inner_text("#result-title"))
    assert page.inner_text("#result-reason")
    assert re.fullmatch(r"Steps played \d+", page.inner_text("#result-steps"))
    assert page.is_disabled("#undo")


def test_practice_double_jump_wins_with_two_steps(page):
    start(page, opponent="two-players", position="practice")
    assert page.inner_text("#turn-text") == "Red: capture required"
    assert page.inner_text("#count-red") == "1" and page.inner_text("#count-white") == "2"
    square(page, 9)
    square(page, 18)
    page.wait_for_function("document.getElementById('turn-text').textContent === 'Red: continue jumping from 18'")
    assert page.inner_text("#count-white") == "1"          # the jumped man is gone
    square(page, 27)
    page.wait_for_selector("#result:not([hidden])")
    assert page.inner_text("#result-title") == "Red wins"
    assert page.inner_text("#result-reason") == "White has no pieces left."
    assert page.inner_text("#result-steps") == "Steps played 2"
    assert moves_text(page) == "Red 9×18×27"


@pytest.mark.parametrize("opponent", ["computer:casual", "computer:normal"])
def test_undo_against_the_computer_restores_the_same_seeded_reply(page, opponent):
    start(page, opponent=opponent, seed="undo-seed")
    replies = []
    for _ in range(2):
        for sq in (11, 15):
            wait_for_player(page, ENGINE_WAIT_MS)
            square(page, sq)
        page.wait_for_function("document.getElementById('move-list').textContent.includes('White')")
        wait_for_player(page, ENGINE_WAIT_MS)
        replies.append(moves_text(page))
        page.click("#undo")
        page.wait_for_function("document.getElementById('move-list').textContent === 'No moves yet.'")
    assert replies[0] == replies[1] and replies[0].startswith("Red 11–15 · White ")


def test_pause_resume_resign_and_replay_same_seed(page):
    start(page, seed="replay-seed")
    for _ in range(3):
        wait_for_player(page)
        play_first_choice(page)
    wait_for_player(page)
    played = moves_text(page)
    page.focus("#board .cell.movable")
    page.keyboard.press("p")                                   # P on the board pauses
    page.wait_for_selector("#pause-menu:not([hidden])")
    assert page.inner_text("#turn-text") == "Paused"
    page.click("#resume")
    page.wait_for_selector("#pause-menu", state="hidden")
    page.click("#pause")
    page.wait_for_selector("#pause-menu:not([hidden])")
    page.click("#resign")
    page.wait_for_selector("#result:not([hidden])")
    assert page.inner_text("#result-title") == "White wins" and page.inner_text("#result-reason") == "Red resigned."
    page.click("#replay")
    page.wait_for_function("document.getElementById('move-list').textContent === 'No moves yet.'")
    for _ in range(3):
        wait_for_player(page)
        play_first_choice(page)
    wait_for_player(page)
    assert moves_text(page) == played                          # the computer replied exactly as before
    assert page.inner_text("#seed-shown") == "replay-seed"


def test_keyboard_only_move(page):
    start(page, seed="keys")
    focused = page.evaluate("document.activeElement.dataset.square")
    assert focused == "9"                                      # the board takes focus at the first ringed piece
    page.keyboard.press("ArrowLeft")
    page.keyboard.press("ArrowLeft")
    assert page.evaluate("document.activeElement.dataset.square") == "11"
    page.keyboard.press("Enter")
    assert page.inner_text("#hint") == "Selected 11. Choose a marked destination."
    page.keyboard.press("Escape")
    assert page.inner_text("#hint") == "Select a ringed piece, then a marked square."
    page.keyboard.press("Space")
    page.keyboard.press("ArrowUp")
    assert page.evaluate("document.activeElement.dataset.square") == "15"
    page.keyboard.press("Enter")
    page.wait_for_function("document.getElementById('move-list').textContent.startsWith('Red 11–15 · White')")


def test_two_players_on_a_phone_sized_screen(page):
    page.set_viewport_size({"width": 390, "height": 844})
    try:
        start(page, opponent="two-players", side="white")
        # White at the bottom: square 1 is the first dark square drawn at the top
        assert page.get_attribute("#board .cell.dark", "data-square") == "1"
        square(page, 11)
        square(page, 15)
        page.wait_for_function("document.getElementById('turn-text').textContent === 'White to move'")
        square(page, 22)
        square(page, 18)
        page.wait_for_function("document.getElementById('turn-text').textContent === 'Red: capture required'")
        assert moves_text(page) == "Red 11–15 · White 22–18"
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        page.click("#undo")
        page.wait_for_function("document.getElementById('turn-text').textContent === 'White to move'")
    finally:
        page.set_viewport_size({"width": 900, "height": 1100})


def test_set_up_position(page):
    start(page, opponent="two-players", position="setup", setup_text="W:W18,K27:B14,K5")
    assert page.inner_text("#turn-text") == "White: capture required"
    assert page.inner_text("#count-red") == "2" and page.inner_text("#count-white") == "2"
    assert page.locator("#board .piece.king").count() == 2
    page.click("#board .cell.movable")
    page.click("#board .cell.target")
    page.wait_for_function("document.getElementById('move-list').textContent === 'White 18×9'")


def test_totals_survive_a_reload_and_skip_practice(page):
    open_page(page)
    before = [int(page.inner_text(f"#t-{k}")) for k in ("red", "white", "draws")]
    start(page, seed="totals")
    page.click("#pause")
    page.click("#resign")
    page.wait_for_selector("#result:not([hidden])")
    start(page, opponent="two-players", position="practice")
    square(page, 9)
    square(page, 18)
    square(page, 27)
    page.wait_for_selector("#result:not([hidden])")
    page.reload()
    page.wait_for_selector("body[data-ready=true]")
    after = [int(page.inner_text(f"#t-{k}")) for k in ("red", "white", "draws")]
    assert after == [before[0], before[1] + 1, before[2]]
    assert page.is_hidden("#storage-warning")


def test_totals_warn_when_storage_is_unavailable(browser, server):
    pg = browser.new_page()
    try:
        pg.add_init_script("Object.defineProperty(window, 'localStorage', {get() { throw new DOMException('denied'); }});")
        pg.app_url = server
        start(pg, seed="no-storage")
        assert pg.is_visible("#storage-warning")
        assert "kept only for the current visit" in pg.inner_text("#storage-warning")
        before = int(pg.inner_text("#t-white"))
        pg.click("#pause")
        pg.click("#resign")
        pg.wait_for_selector("#result:not([hidden])")
        assert int(pg.inner_text("#t-white")) == before + 1          # still counted for this visit
    finally:
        pg.close()


def test_analysis_streams_evaluations(page):
    open_page(page)
    page.click("#nav-analyse")
    page.fill("#load-text", '[Event "test"]\n1. 11-15 23-19 2. 8-11 22-17 *')
    page.click("#load")
    page.wait_for_selector("#analysis-main:not([hidden])")
    assert page.locator("#a-moves li").count() == 4
    page.click("#engine-toggle")
    seen = set()
    deadline = time.monotonic() + ENGINE_WAIT_MS / 1000
    while len(seen) < 2 and time.monotonic() < deadline:           # at least two reports arrive one by one
        text = page.inner_text("#a-depth")
        if text:
            seen.add(text.split(" ·")[0])
        time.sleep(0.05)
    assert len(seen) >= 2, seen
    assert re.match(r"[+-]\d+\.\d\d|#-?\d+", page.inner_text("#eval-text"))
    assert page.locator("#lines li").count() == 3                    # MultiPV 3 by default
    assert re.match(r"([+-]\d+\.\d\d|#-?\d+) \(depth \d+\) \d+", page.inner_text("#lines li >> nth=0"))
    page.click("#a-back")
    page.wait_for_function("document.querySelector('#a-moves button[aria-current=true]').textContent.startsWith('3.')")
    page.wait_for_function("document.querySelectorAll('#lines li').length === 3")
    page.click("#engine-toggle")
    pdn = page.evaluate("fetch(document.getElementById('a-save-pdn').href).then(r => r.text())")
    assert "1. 11-15 23-19 2. 8-11 22-17" in pdn and '[Event "test"]' in pdn


def analyse(page, text):
    """Load ``text`` (FEN or PDN) on the analysis board; returns the new board's position id."""
    before = page.get_attribute("#a-board", "data-position") if page.is_visible("#analysis-main") else None
    page.fill("#load-text", text)
    page.click("#load")
    page.wait_for_selector("#analysis-main:not([hidden])")
    page.wait_for_function("v => { const p = document.getElementById('a-board').dataset.position;"
                           " return !!p && p !== v; }", arg=before)
    return page.get_attribute("#a-board", "data-position")


def test_load_clears_the_old_analysis_and_lines_belong_to_the_board(page):
    open_page(page)
    page.click("#nav-analyse")
    page.fill("#load-text", "")                                # the standard start
    page.click("#load")
    page.wait_for_selector("#analysis-main:not([hidden])")
    page.click("#engine-toggle")
    page.wait_for_function("document.querySelectorAll('#lines li').length === 3", timeout=ENGINE_WAIT_MS)
    page.fill("#load-text", "B:W28:B5,6,7,8,9")
    page.click("#load")
    page.wait_for_function("document.querySelectorAll('#a-board .piece').length === 6")
    # nothing of the start position's analysis is left: no lines, no depth line, an even bar
    assert page.locator("#lines li").count() == 0
    assert page.inner_text("#a-depth") == ""
    assert page.inner_text("#eval-text") == "0.00"
    assert page.get_attribute("#eval-bar", "aria-valuetext") == "no evaluation yet"
    assert page.inner_text("#engine-toggle") == "Start engine"
    page.click("#engine-toggle")
    page.wait_for_function("document.querySelectorAll('#lines li').length > 0", timeout=ENGINE_WAIT_MS)
    assert page.get_attribute("#lines", "data-position") == page.get_attribute("#a-board", "data-position")
    # stepping through a game: whatever is shown belongs to the board on screen
    analyse(page, "1. 11-15 23-19 2. 8-11 22-17 *")
    page.click("#engine-toggle")
    page.wait_for_function("document.querySelectorAll('#lines li').length > 0", timeout=ENGINE_WAIT_MS)
    for button in ("#a-back", "#a-back", "#a-forward", "#a-first", "#a-last"):
        page.click(button)
        for _ in range(10):
            shown = page.evaluate("[document.querySelectorAll('#lines li').length,"
                                  " document.getElementById('lines').dataset.position,"
                                  " document.getElementById('a-board').dataset.position]")
            assert shown[0] == 0 or shown[1] == shown[2], shown
            time.sleep(0.03)
    page.click("#engine-toggle")


def test_a_piece_that_cannot_move_is_explained_once(page):
    start(page, seed="explain")
    wait_for_player(page)
    assert page.inner_text("#hint") == "Select a ringed piece, then a marked square."
    square(page, 2)                                            # Red's back-row man: it cannot move yet
    page.wait_for_function("document.getElementById('error').textContent !== ''")
    assert page.inner_text("#error") == "The piece on 2 cannot move. Select a ringed piece."
    assert page.is_hidden("#hint")
    assert page.inner_text("main").count("Select a ringed piece") == 1
    square(page, 18)                                           # an empty square
    page.wait_for_function("document.getElementById('error').textContent.startsWith('Square 18')")
    assert page.inner_text("#error") == "Square 18 holds no Red piece: select a ringed piece."
    square(page, 11)                                           # a ringed piece: the hint is back
    assert page.inner_text("#error") == "" and page.is_visible("#hint")
    assert page.inner_text("#hint") == "Selected 11. Choose a marked destination."


def test_the_page_says_it_is_local(page):
    open_page(page)
    assert page.title() == "Checkers · uci_checkers"
    assert page.inner_text("h1") == "Checkers"
    assert "Online" not in page.inner_text("body")
    assert "nothing is fetched from the internet" in page.inner_text("#setup-view")
