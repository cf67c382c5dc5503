"""What a fresh clone on a fresh machine meets: the README's commands work from the repository alone.

* the browser tests skip, naming the Debian package, when chromium is missing, and fail instead
  where ``UCI_CHECKERS_REQUIRE_BROWSER=1`` (``.ci/run``, which installs it);
* no document points into ``../shared`` (a user has only the repository);
* the README's first steps, typed into the engine, get no error line;
* the first-start compile time is one measured figure, the same in README, protocol.md and the CLI.
* every file the package ships in ``uci_checkers/data`` has its row (what, where from) in that folder's
  README, and the documents name the shipped network's file, not an earlier one.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DOCS = [REPO / "README.md", REPO / "protocol.md", REPO / "ARCHITECTURE.md", REPO / "training-data" / "README.md",
        REPO / "uci_checkers" / "data" / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def _browser_tests(require: bool) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "UCI_CHECKERS_REQUIRE_BROWSER"}
    env["CHROMIUM"] = str(REPO / "no-such-browser")
    if require:
        env["UCI_CHECKERS_REQUIRE_BROWSER"] = "1"
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider",
                           "tests/test_gui_browser.py"], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=300)


def test_without_a_browser_the_browser_tests_skip_and_name_the_package():
    proc = _browser_tests(require=False)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert re.search(r"\d+ skipped", proc.stdout) and "passed" not in proc.stdout and "error" not in proc.stdout
    assert "apt-get install chromium" in proc.stdout


def test_ci_makes_a_missing_browser_a_failure():
    assert "export UCI_CHECKERS_REQUIRE_BROWSER=1" in (REPO / ".ci" / "run").read_text()
    proc = _browser_tests(require=True)
    assert proc.returncode == 1, proc.stdout[-3000:]
    assert "skipped" not in proc.stdout.splitlines()[-1]
    assert "required here: UCI_CHECKERS_REQUIRE_BROWSER=1" in proc.stdout


def _first_steps() -> list[str]:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    m = re.search(r"waits for protocol commands on stdin; type (.*?)\):", readme, re.DOTALL)
    assert m, "README's first steps not found"
    return re.findall(r"`([^`]+)`", m.group(1))


def test_the_readmes_first_steps_get_no_error_line():
    from test_protocol import Session
    steps = _first_steps()
    assert "go depth 10" in steps
    sess = Session()
    try:
        for line in (step for step in steps if step != "quit"):     # quit: Session.close
            sess.send(line)
            if line.startswith("isready"):
                sess.wait_for("readyok", timeout=600)
        sess.wait_for("bestmove", timeout=600)
        sess.idle(timeout=60)
    finally:
        sess.close()
    assert [line for line in sess.lines if line.startswith("info string error")] == []
    assert "uciok" in sess.lines and "readyok" in sess.lines


def test_one_measured_first_start_figure_everywhere():
    from uci_checkers.util.commandline import COMPILING_NOTICE, FIRST_COMPILE_TIME
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    two_commands = readme[readme.index("## Two commands"):readme.index("## A short tour")]
    protocol = (REPO / "protocol.md").read_text(encoding="utf-8")
    startup = protocol[protocol.index("## 2. Start-up"):protocol.index("## 3. Commands")]
    for where, text in (("README", two_commands), ("protocol.md", startup), ("the CLI", COMPILING_NOTICE)):
        assert FIRST_COMPILE_TIME in text, where
        for other in re.findall(r"(?:about \d+ s|\d+-\d+ s|several seconds|a few seconds)", text):
            assert other in (FIRST_COMPILE_TIME, "about 0.6 s"), (where, other)
    assert re.search(r"median of 3 cold starts", two_commands)       # how it was measured


def test_no_document_points_outside_the_repository():
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        assert "../shared" not in text and "shared/data" not in text, doc


def test_the_documented_data_paths_exist():
    made_by_step_1 = {"training-data/gen4"}                   # README: the self-play step writes it
    for doc in (REPO / "README.md", REPO / "training-data" / "README.md"):
        for path in set(re.findall(r"training-data/[\w./-]*\w", doc.read_text(encoding="utf-8"))):
            assert path in made_by_step_1 or (REPO / path).exists(), (doc.name, path)


def test_validate_runs_on_the_repositorys_own_games_by_default():
    from uci_checkers.learn import validate
    assert validate.DEFAULT_PDN == REPO / "training-data" / "validation.pdn" and validate.DEFAULT_PDN.is_file()
    proc = subprocess.run([sys.executable, "-m", "uci_checkers", "validate", "--depth", "2", "--sample", "20"],
                          cwd=REPO, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    import json
    report = json.loads(proc.stdout)
    assert "puzzles" not in report                          # optional: the repository ships no puzzle file
    games = report["games"]
    assert games["positions"] > 5000 and 0 < games["static_log_loss"] < 0.693 and games["move_sample"] == 20


def test_every_package_data_file_has_its_provenance_row():
    data = REPO / "uci_checkers" / "data"
    rows = set(re.findall(r"^\| `([^`]+)` \|", (data / "README.md").read_text(encoding="utf-8"), re.M))
    shipped = {f.name for f in data.iterdir() if f.is_file() and not f.name.startswith(".")}
    assert rows == shipped


def test_the_documents_name_the_shipped_network():
    from uci_checkers.search.layouts import DEFAULT_NAME
    protocol = (REPO / "protocol.md").read_text(encoding="utf-8")
    evalfile_row = next(line for line in protocol.splitlines() if line.startswith("| `EvalFile` |"))
    assert f"uci_checkers/data/{DEFAULT_NAME}" in evalfile_row
    assert f"option name EvalFile type string default .../{DEFAULT_NAME}" in protocol
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    network_section = re.split(r"\n#{1,3} ", readme.split("### The network evaluation", 1)[1], maxsplit=1)[0]
    assert f"uci_checkers/data/{DEFAULT_NAME}" in network_section
    # a network that left the package is named only beside the commit that still holds it
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        for match in re.finditer(r"uci_checkers/data/(eval-[\w.-]+\.weights)", text):
            if not (REPO / "uci_checkers" / "data" / match.group(1)).exists():
                around = text[max(0, match.start() - 80):match.end() + 80]
                assert re.search(r"git show [0-9a-f]{7,}:|commit `[0-9a-f]{7,}`", around), (str(doc), match.group(1))
