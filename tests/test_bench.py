"""The bench: a fixed position list, searched to a fixed depth from a cleared table.

The node total at a small depth is the search's fingerprint: a change to the
search or the evaluation that alters it must update ``SIGNATURE`` on purpose.
"""
from __future__ import annotations

from uci_checkers.tools import bench
from uci_checkers.rules.position import Position

SIGNATURE_DEPTH = 5
SIGNATURE = 52688   # learned evaluation, weights w5 (king-aware windows, material counts)


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
