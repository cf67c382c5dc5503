"""The bench: a fixed position list, searched to a fixed depth from a cleared table.

The node total at a small depth is the search's fingerprint: a change to the
search or the evaluation that alters it must update ``SIGNATURE`` on purpose.
"""
from __future__ import annotations

from uci_checkers.tools import bench
from uci_checkers.rules.position import Position

SIGNATURE_DEPTH = 9   # deep enough for internal iterative deepening to act (at depth 5 it never does)
SIGNATURE = 376581  # the network n17 (default; four first layers by phase); verified pruning; truncation; history with malus; IID;
#                     the table score for the static score where it bounds it better; shots at quiet leaves;
#                     a side with neither a capture nor a step has lost


def test_positions_valid_and_enough():
    assert len(bench.POSITIONS) >= 30
    assert len(set(bench.POSITIONS)) == len(bench.POSITIONS)
    captures = 0
    for fen in bench.POSITIONS:
        pos = Position.from_fen(fen)
        assert pos.legal_moves()
        captures += pos.is_capture_pending()
    assert captures >= 3


def test_signature():
    nodes, seconds = bench.run_bench(SIGNATURE_DEPTH)
    assert nodes == SIGNATURE
    again, _ = bench.run_bench(SIGNATURE_DEPTH)
    assert again == nodes


def test_cli_prints_totals(capsys):
    assert bench.main(["3", "-q"]) == 0
    out = capsys.readouterr().out
    assert "Nodes searched" in out and "Nodes/second" in out


def test_interrupt_exits_130_keeping_the_finished_positions():
    from toolrun import interrupt_tool
    code, out, err = interrupt_tool(["bench", "40"], after=4.0)
    assert code == 130, err
    assert "Traceback" not in err
    assert "Interrupted     : after" in out and "Nodes searched" in out


def test_bad_hash_is_refused(capsys):
    import pytest
    with pytest.raises(SystemExit) as exc:
        bench.main(["3", "--hash", "999999999"])
    assert exc.value.code == 2


def test_pattern_evaluation_signature():
    """The shipped pattern tables (selectable, not the default) have their own fingerprint."""
    from uci_checkers.search import weights as W
    nodes, _ = bench.run_bench(SIGNATURE_DEPTH, weights=W.pattern_weights())
    assert nodes == 591984         # w5 (king-aware windows, material counts); history with malus; IID; table score;
    #                                leaf shots; a side with neither a capture nor a step has lost


def test_interrupt_reports_the_totals_of_the_finished_positions():
    # issue 20 item 8: an interrupted bench listed its finished positions but printed zero totals
    import os
    import re
    import signal
    import subprocess
    import sys
    import threading
    import time

    from toolrun import REPO

    proc = subprocess.Popen([sys.executable, "-m", "uci_checkers", "bench", "16"], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(REPO)})
    lines: list[str] = []
    two_done = threading.Event()

    def read() -> None:
        for line in proc.stdout:
            lines.append(line.rstrip("\n"))
            if line.startswith("position  2/"):
                two_done.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        assert two_done.wait(180), "two bench positions did not finish in time"
        proc.send_signal(signal.SIGINT)
        err = proc.stderr.read()
        proc.wait(timeout=30)
        reader.join(10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    finished = [int(m.group(1)) for line in lines if (m := re.match(r"position +\d+/\d+ +nodes +(\d+)", line))]
    assert len(finished) >= 2
    totals = {k.strip(): v for k, _, v in (line.partition(":") for line in lines if ":" in line)}
    assert totals["Nodes searched"].split()[0] == str(sum(finished)), lines
    assert "(partial)" in totals["Nodes searched"]
    assert int(totals["Nodes/second"].split()[0]) > 0
    assert f"after {len(finished)} of " in totals["Interrupted"]
