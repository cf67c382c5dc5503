"""protocol.md's worked example, replayed against the engine (in-process).

Syntax of the ```transcript block: ``> line`` is sent, ``< text`` is expected next
(``...`` matches any text; trailing spaces do not count), ``#`` lines are comments.
Between expected lines the engine may write ``info depth``/``info currmove`` lines
that the transcript leaves out (search progress varies with the search version),
and ``option name Threads`` (listed only when the search supports it); any other
unexpected line fails.
"""
from __future__ import annotations

import re
import time
from pathlib import Path

from test_protocol import Session

DOC = Path(__file__).resolve().parent.parent / "protocol.md"
SKIPPABLE = ("info depth ", "info currmove ", "info string compiling ")  # the last: a cold cache
TIMEOUT = 60.0


def transcript() -> list[tuple[str, str]]:
    text = DOC.read_text(encoding="utf-8")
    m = re.search(r"```transcript\n(.*?)```", text, re.DOTALL)
    assert m, "protocol.md has no ```transcript block"
    steps = []
    for raw in m.group(1).splitlines():
        if not raw.strip() or raw.startswith("#"):
            continue
        kind, body = raw[:1], raw[2:] if len(raw) > 1 else ""
        assert kind in "<>", f"bad transcript line {raw!r}"
        steps.append((kind, body.rstrip()))
    return steps


def pattern(expected: str) -> re.Pattern:
    return re.compile("^" + ".*".join(re.escape(part) for part in expected.split("...")) + "$")


def test_transcript_parses_and_covers_the_main_commands():
    steps = transcript()
    sent = {body.split()[0] for kind, body in steps if kind == ">"}
    assert {"uci", "isready", "setoption", "ucinewgame", "position", "go", "stop", "ponderhit", "d",
            "quit"} <= sent
    assert sum(kind == "<" for kind, _ in steps) > 30


def test_protocol_md_example_transcript_replays():
    steps = transcript()
    sess = Session()
    pos = 0                      # next unread engine line

    def expect(expected: str) -> None:
        nonlocal pos
        pat = pattern(expected)
        deadline = time.monotonic() + TIMEOUT
        with sess.cv:
            while True:
                while pos < len(sess.lines):
                    line = sess.lines[pos].rstrip()
                    pos += 1
                    if pat.match(line):
                        return
                    assert line.startswith(SKIPPABLE), f"expected {expected!r}, engine wrote {line!r}"
                left = deadline - time.monotonic()
                assert left > 0, f"expected {expected!r} within {TIMEOUT}s; engine wrote {sess.lines[pos:]}"
                sess.cv.wait(left)

    for kind, body in steps:
        if kind == "<":
            expect(body)
        else:
            alive = sess.proto.handle(body)
            assert alive or body == "quit"
    time.sleep(0.1)
    with sess.cv:
        rest = [line for line in sess.lines[pos:] if not line.startswith(SKIPPABLE)]
    assert rest == [], f"unexpected lines after the transcript: {rest}"
