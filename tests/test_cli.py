"""The command-line dispatcher and the helpers the tools share: interrupts, output paths, help text."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from uci_checkers import cli
from uci_checkers.util import commandline
from uci_checkers.util import interrupts

ROOT = Path(__file__).resolve().parents[1]


def test_an_interrupt_escaping_a_tool_is_one_line_and_exit_130(monkeypatch, capsys):
    class Tool:
        @staticmethod
        def main(argv):
            raise KeyboardInterrupt

    monkeypatch.setattr(cli, "_load", lambda name: Tool)
    assert cli.main(["bench"]) == 130
    assert capsys.readouterr().err == "uci-checkers bench: interrupted\n"


def test_a_compiler_failure_after_a_swallowed_interrupt_is_the_interrupt(monkeypatch, capsys):
    """Ctrl-C that lands inside numba's compiler is swallowed there and numba then fails with an error of
    its own (seen: RuntimeError "no compiled object yet"): the user sees the interrupt, not a traceback.
    The same error without an interrupt is a bug and still surfaces."""
    class Tool:
        @staticmethod
        def main(argv):
            interrupts.interrupt_event().set()      # what the signal handler records
            raise RuntimeError("no compiled object yet for <Library '_push'>")

    monkeypatch.setattr(cli, "_load", lambda name: Tool)
    assert cli.main(["egdb"]) == 130
    assert capsys.readouterr().err == "uci-checkers egdb: interrupted\n"
    assert not interrupts.interrupted()            # the record ends with the tool

    class Broken:
        @staticmethod
        def main(argv):
            raise RuntimeError("a bug")

    monkeypatch.setattr(cli, "_load", lambda name: Broken)
    with pytest.raises(RuntimeError, match="a bug"):
        cli.main(["egdb"])


def test_sigterm_is_an_interrupt_inside_a_tool(monkeypatch):
    import signal

    class Tool:
        @staticmethod
        def main(argv):
            os.kill(os.getpid(), signal.SIGTERM)
            for _ in range(100):                 # the handler runs between bytecodes
                pass
            return 0

    monkeypatch.setattr(cli, "_load", lambda name: Tool)
    before = signal.getsignal(signal.SIGTERM)
    assert cli.main(["perft"]) == 130
    assert signal.getsignal(signal.SIGTERM) is before      # restored


def test_check_output_path(tmp_path):
    commandline.check_output_path(str(tmp_path / "new.pdn"), "--out")
    with pytest.raises(ValueError, match="does not exist"):
        commandline.check_output_path(str(tmp_path / "no" / "new.pdn"), "--out")
    with pytest.raises(ValueError, match="is a directory"):
        commandline.check_output_path(str(tmp_path), "--out")
    if os.geteuid() != 0:                      # root may write anywhere
        ro = tmp_path / "ro"
        ro.mkdir()
        ro.chmod(0o500)
        with pytest.raises(ValueError, match="not writable"):
            commandline.check_output_path(str(ro / "x.pdn"), "--out")


def test_hub_help_is_plain_text():
    proc = subprocess.run([sys.executable, "-m", "uci_checkers", "hub", "--help"], cwd=ROOT, capture_output=True,
                          text=True, timeout=60, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0
    assert proc.stdout.startswith("usage: uci-checkers hub")
    assert "``" not in proc.stdout and ":func:" not in proc.stdout


def test_an_interrupt_lost_in_a_ctypes_callback_is_still_seen(capsys):
    """numba's compiler calls back into Python through ctypes, which swallows exceptions: the
    KeyboardInterrupt raised there is lost, so the signal is also recorded for the wait loops."""
    import ctypes
    import signal

    def callback():
        os.kill(os.getpid(), signal.SIGTERM)
        for _ in range(1000):                  # the handler runs here, inside the callback
            pass

    hook = ctypes.CFUNCTYPE(None)(callback)
    with interrupts.handle_interrupts():
        hook()                                 # the KeyboardInterrupt is swallowed by ctypes...
        assert interrupts.interrupted()        # ...but recorded
        with pytest.raises(KeyboardInterrupt):
            interrupts.raise_if_interrupted()
    assert not interrupts.interrupted()
    assert "Traceback" not in capsys.readouterr().err


@pytest.mark.parametrize("name", sorted(cli.SUBCOMMANDS))
def test_every_tool_reports_a_usage_error_in_one_line_with_exit_2(name, capsys):
    # issue 20 item 11: one convention for every tool; argparse printed its whole usage first
    try:
        code = cli.main([name, "--no-such-flag"])
    except SystemExit as exc:              # argparse ends the parse with SystemExit(2)
        code = exc.code
    err = capsys.readouterr().err
    assert code == 2, (name, err)
    assert len(err.strip().splitlines()) == 1, (name, err)
    assert err.startswith(f"uci-checkers {name}") and "Traceback" not in err, (name, err)


def test_input_errors_exit_2_in_one_line_without_errno(tmp_path, capsys):
    # issue 20 item 11: egdb used 1 for a missing directory, and raw "[Errno 2] ..." texts reached users
    missing = str(tmp_path / "missing")
    for argv in (["egdb", "info", "--dir", missing], ["egdb", "probe", "--dir", missing, "--fen", "W:WK1:BK32"],
                 ["analyse", missing + ".pdn"], ["checkerboard", "exports", missing + ".dll"]):
        assert cli.main(argv) == 2, argv
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and "Errno" not in err and "missing" in err, (argv, err)
