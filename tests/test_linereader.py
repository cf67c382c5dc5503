"""The deadline rules of uci_checkers.util.linereader, shared by the arena and the Python client."""
from __future__ import annotations

import os
import threading
import time

import pytest

from uci_checkers.util.linereader import EndOfOutput, LineTimeout, StampedLineReader


@pytest.fixture
def pipe():
    """A reader over a real pipe, and the function that writes a line into it."""
    rfd, wfd = os.pipe()
    stream = os.fdopen(rfd, "r", encoding="utf-8")
    writer = os.fdopen(wfd, "w", encoding="utf-8", buffering=1)
    reader = StampedLineReader(stream, "test-reader")
    yield reader, writer
    if not writer.closed:
        writer.close()


def test_lines_come_in_order_with_their_arrival_stamp(pipe):
    reader, writer = pipe
    before = time.monotonic()
    writer.write("one\r\ntwo\n")
    stamp, line = reader.next_before(time.monotonic() + 5)
    assert line == "one" and stamp >= before
    assert reader.next_before(time.monotonic() + 5)[1] == "two"


def test_no_line_before_the_deadline_times_out_at_the_deadline(pipe):
    reader, _ = pipe
    start = time.monotonic()
    with pytest.raises(LineTimeout):
        reader.next_before(start + 0.2)
    assert 0.15 < time.monotonic() - start < 2.0


def test_a_line_that_came_in_time_counts_when_read_late_and_a_late_one_waits_for_the_next_wait(pipe):
    reader, _ = pipe
    now = time.monotonic()
    reader.put(now - 0.5, "in time")
    reader.put(now, "too late")
    assert reader.next_before(now - 0.3)[1] == "in time"
    with pytest.raises(LineTimeout):
        reader.next_before(now - 0.3)
    assert reader.next_before(now + 5)[1] == "too late"


def test_a_flood_of_lines_cannot_stretch_a_wait(pipe):
    reader, writer = pipe
    stop = threading.Event()

    def flood():
        while not stop.is_set():
            writer.write("info depth 1\n")
            time.sleep(0.001)

    thread = threading.Thread(target=flood, daemon=True)
    thread.start()
    try:
        start = time.monotonic()
        deadline = start + 0.3
        with pytest.raises(LineTimeout):
            while True:
                reader.next_before(deadline)
        assert time.monotonic() - start < 2.0
    finally:
        stop.set()
        thread.join(5)


def test_the_end_of_output_is_reported_to_every_later_wait(pipe):
    reader, writer = pipe
    writer.write("last words\n")
    writer.close()
    assert reader.next_before(time.monotonic() + 5)[1] == "last words"
    for _ in range(3):
        with pytest.raises(EndOfOutput):
            reader.next_before(time.monotonic() + 5)


def test_drain_returns_stale_lines_and_keeps_the_end_of_output(pipe):
    reader, writer = pipe
    writer.write("a\nb\n")
    writer.close()
    stale: list[str] = []
    deadline = time.monotonic() + 5
    while len(stale) < 2 and time.monotonic() < deadline:   # the reader thread may lag behind the writer
        stale += reader.drain()
        time.sleep(0.01)
    assert stale == ["a", "b"]
    with pytest.raises(EndOfOutput):
        reader.next_before(time.monotonic() + 5)
    assert reader.drain() == []
