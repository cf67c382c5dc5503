"""The shared progress display (uci_checkers.util.progress): live on a terminal, plain lines in a log."""
from __future__ import annotations

import io

from uci_checkers.util.progress import CLEAR, Progress, bar, is_terminal


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_plain_mode_writes_a_line_every_n_seconds_and_the_last_state_at_the_end():
    out, clock = io.StringIO(), Clock()
    p = Progress(out, "job", every=10.0, clock=clock)
    assert not p.live and not is_terminal(out)
    for i in range(100):                          # an update every 0.5 s for 50 s
        clock.now = 0.5 * i
        p.update(f"{i}/100", i / 100)
    p.note("a line that stays")
    clock.now = 50.0
    p.update("99/100 again", 0.99)
    p.close()
    text = out.getvalue()
    assert "\r" not in text and "\x1b" not in text
    lines = text.splitlines()
    assert lines == ["job: 20/100", "job: 40/100", "job: 60/100", "job: 80/100", "a line that stays",
                     "job: 99/100 again"]


def test_plain_mode_every_zero_writes_every_update_and_the_end_is_always_written():
    out, clock = io.StringIO(), Clock()
    p = Progress(out, every=0.0, clock=clock)
    p.update("one")
    p.update("two")
    p.close()
    assert out.getvalue() == "one\ntwo\n"
    out2 = io.StringIO()
    q = Progress(out2, "x", every=1000.0, clock=clock)
    q.update("half", 0.5)
    q.update("done", 1.0)                        # written by close()
    q.close()
    assert out2.getvalue() == "x: done\n"


def test_live_mode_redraws_one_line_on_a_terminal():
    out, clock = Tty(), Clock()
    p = Progress(out, "job", clock=clock)
    assert p.live
    p.update("1/4", 0.25)
    clock.now = 0.05
    p.update("2/4", 0.5)                          # too soon: not redrawn
    clock.now = 1.0
    p.update("3/4", 0.75)
    p.note("done with a part")
    p.update("4/4", 1.0)
    p.close()
    text = out.getvalue()
    assert text == (CLEAR + "job " + bar(0.25) + " 1/4" + CLEAR + "job " + bar(0.75) + " 3/4"
                    + CLEAR + "done with a part\n" + CLEAR + "job " + bar(1.0) + " 4/4" + "\n")
    assert "2/4" not in text


def test_silent_without_a_stream_and_a_broken_stream_is_not_fatal():
    Progress(None).update("x", 0.5)
    broken = io.StringIO()
    broken.close()
    p = Progress(broken, live=True)
    p.update("x", 0.5)
    p.note("y")
    p.close()
