"""Perft against tests/data/perft.tsv (a copy of the project's reference table), divide sums, and the ``uci-checkers perft`` command line.

Rows up to MAX_LEAVES run here (about 2-4 s in all); the deeper rows are the benchmark's.
"""
from __future__ import annotations

import io
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO_ROOT
from uci_checkers.rules.perft import divide, main, perft
from uci_checkers.rules.position import Position

MAX_LEAVES = 100_000_000
START_FEN = "B:W21,22,23,24,25,26,27,28,29,30,31,32:B1,2,3,4,5,6,7,8,9,10,11,12"


PERFT_TABLE = Path(__file__).parent / "data" / "perft.tsv"


def _rows():
    rows = []
    for line in PERFT_TABLE.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#") or line.startswith("name\t"):
            continue
        name, fen, depth, paths, _merged = line.split("\t")
        rows.append((name, fen, int(depth), int(paths)))
    return rows


ROWS = _rows()
FAST_ROWS = [r for r in ROWS if r[3] <= MAX_LEAVES]


def test_table_is_read_and_covers_every_position():
    names = {r[0] for r in ROWS}
    assert {"start", "acf001", "acf046", "crown", "dupcap", "pike001", "rand1", "rand2", "rand3", "rand4"} <= names
    # Every position keeps at least its first few depths in the fast set.
    assert {r[0] for r in FAST_ROWS} == names
    assert len(FAST_ROWS) >= 100


@pytest.mark.parametrize("name,fen,depth,expected", FAST_ROWS,
                         ids=[f"{r[0]}-d{r[2]}" for r in FAST_ROWS])
def test_perft_table(name, fen, depth, expected):
    assert perft(Position.from_fen(fen), depth) == expected


def test_perft_start_without_data_file():
    # The published start-position figures, independent of the table file.
    pos = Position.start()
    assert [perft(pos, d) for d in range(0, 9)] == [1, 7, 49, 302, 1469, 7361, 36768, 179740, 845931]


@pytest.mark.parametrize("name,depth", [("start", 6), ("acf001", 6), ("crown", 9), ("dupcap", 6),
                                        ("pike001", 5), ("rand1", 6), ("rand3", 5)])
def test_divide_sums_to_perft(name, depth):
    fen = next(r[1] for r in ROWS if r[0] == name)
    expected = next(r[3] for r in ROWS if r[0] == name and r[2] == depth)
    pos = Position.from_fen(fen)
    rows = divide(pos, depth)
    assert [m for m, _ in rows] == pos.legal_moves()
    assert sum(n for _, n in rows) == expected
    for move, n in rows:
        assert n == perft(pos.play(move), depth - 1)


def test_divide_counts_both_loop_directions_separately():
    # dupcap: Black kings with several capture routes to the same result; every route is listed.
    pos = Position.from_fen("B:W6,7,14,15,23:BK2,K10")
    rows = divide(pos, 1)
    texts = [str(m) for m, _ in rows]
    assert len(texts) == len(set(texts)) == 8
    results = [pos.play(m) for m, _ in rows]
    assert len(set(results)) < len(results)  # some different paths reach the same position


def test_perft_argument_errors():
    with pytest.raises(ValueError):
        perft(Position.start(), -1)
    with pytest.raises(ValueError):
        divide(Position.start(), 0)
    assert perft(Position.start(), 0) == 1
    assert perft(Position.from_fen("B:W29-32,K9:B"), 3) == 0  # Black has no pieces: no moves


# --- command line ----------------------------------------------------------------

def run_main(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out=out, err=err)
    return code, out.getvalue(), err.getvalue()


COUNT_LINE = re.compile(
    r"^perft (\d+)(?: run \d+| median of \d+)?: (\d+) leaves in (\d+\.\d+) s \(([\d,]+|n/a) leaves/s, cpu (\d+\.\d+) s\)$")


def test_cli_count():
    code, out, err = run_main("--depth", "6")
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert len(lines) == 1
    m = COUNT_LINE.match(lines[0])
    assert m, lines[0]
    assert m.group(1) == "6" and m.group(2) == "36768"


def test_cli_fen_and_divide():
    code, out, err = run_main("--fen", "B:W6,7,14,15,23:BK2,K10", "--depth", "3", "--divide")
    assert code == 0 and err == ""
    head, _, tail = out.partition("\n\n")
    entries = [line.split(": ") for line in head.splitlines()]
    pos = Position.from_fen("B:W6,7,14,15,23:BK2,K10")
    assert [e[0] for e in entries] == [str(m) for m in pos.legal_moves()]
    assert all("x" in e[0] for e in entries)  # full landing paths of captures
    assert sum(int(e[1]) for e in entries) == 70
    tail_lines = tail.splitlines()
    assert tail_lines[0] == f"moves: {len(entries)}"
    assert COUNT_LINE.match(tail_lines[1]).group(2) == "70"


def test_cli_repeat_prints_each_run_and_median():
    code, out, _ = run_main("--depth", "5", "--repeat", "3")
    assert code == 0
    lines = out.splitlines()
    assert len(lines) == 4
    assert [COUNT_LINE.match(line).group(2) for line in lines] == ["7361"] * 4
    assert "run 1" in lines[0] and "run 3" in lines[2] and "median of 3" in lines[3]


@pytest.mark.parametrize("argv,needle", [
    (["--fen", "B:W1:B5", "--depth", "2"], "crowning row"),
    (["--fen", "garbage", "--depth", "2"], "invalid FEN"),
    (["--depth", "-1"], "--depth"),
    (["--depth", "2", "--repeat", "0"], "--repeat"),
    (["--depth", "0", "--divide"], "--divide"),
    (["--depth", "x"], "invalid int"),
    ([], "--depth"),
])
def test_cli_errors_exit_2_with_message_on_stderr(argv, needle):
    code, out, err = run_main(*argv)
    assert code == 2
    assert out == ""
    assert needle in err


def test_cli_through_console_dispatch():
    """``python -m uci_checkers perft ...`` goes through cli.py to perft.main."""
    proc = subprocess.run([sys.executable, "-m", "uci_checkers", "perft", "--depth", "4"],
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=300,
                          env={**__import__("os").environ, "PYTHONPATH": str(REPO_ROOT)})
    assert proc.returncode == 0, proc.stderr
    assert COUNT_LINE.match(proc.stdout.strip()).group(2) == "1469"
    proc = subprocess.run([sys.executable, "-m", "uci_checkers", "perft", "--fen", "X:W1:B2", "--depth", "1"],
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=300,
                          env={**__import__("os").environ, "PYTHONPATH": str(REPO_ROOT)})
    assert proc.returncode == 2
    assert "invalid FEN" in proc.stderr and proc.stdout == ""


def test_perft_kernel_lives_in_perft_only():
    # The kernels live in perft.py; movegen keeps no alias of them (no compatibility shim).
    from uci_checkers.rules import movegen as mg
    from uci_checkers.rules import perft as perft_module
    assert not hasattr(mg, "perft_kernel")
    moves, paths = mg.new_move_buffers(6)
    p = Position.start()
    assert perft_module.perft_kernel(p.black, p.white, p.kings, p.turn, 4, moves, paths) == 1469
    with pytest.raises(AttributeError):
        mg.no_such_kernel  # noqa: B018


def test_cli_refuses_a_depth_that_would_run_for_days():
    code, out, err = run_main("--depth", "50")
    assert code == 2 and out == ""
    assert "between 0 and 20" in err


def test_cli_reports_progress_of_a_long_count(monkeypatch):
    import uci_checkers.rules.perft as perft_module
    monkeypatch.setattr(perft_module, "PROGRESS_AFTER_S", 0.0)
    code, out, err = run_main("--depth", "11")
    assert code == 0
    assert COUNT_LINE.match(out.strip()).group(2) == "85242128"
    progress = err.splitlines()
    assert progress and all(re.match(r"perft 11: \d/7 root moves, \d+ leaves so far", line) for line in progress)


@pytest.mark.parametrize("signame", ["SIGINT", "SIGTERM"])
def test_cli_interrupt_exits_130_without_traceback(signame):
    import signal
    from toolrun import interrupt_tool
    # after 2 s the count is running (start-up and compile-cache load done)
    code, out, err = interrupt_tool(["perft", "--depth", "18"], after=2.0, signum=getattr(signal, signame),
                                    timeout=15)
    assert code == 130, err
    assert "Traceback" not in err and "interrupted" in err
    assert out == ""
