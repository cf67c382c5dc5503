"""Reading an engine's output under deadlines: the one piece the arena and the Python client share.

A daemon thread is the only reader of the pipe (and the one that closes it: closing a pipe from
another thread while this one is blocked in ``read()`` would block that thread too).  It stamps
every line with the monotonic time it arrived, so a wait judges when the *engine* wrote a line,
not when a busy host thread got round to reading it:

* a line that arrived before the deadline counts even when it is read a little late (up to
  ``late_grace`` seconds: a busy machine);
* the first line that arrived after the deadline ends the wait (it is kept for the next wait),
  so lines that keep coming (an info flood, even a backlog of them) cannot stretch a wait;
* the end of the output is reported to every later wait too.
"""
from __future__ import annotations

import queue
import threading
import time
from typing import IO, Optional

__all__ = ["LATE_READ_GRACE", "LineTimeout", "EndOfOutput", "StampedLineReader"]

LATE_READ_GRACE = 1.0   # how late (s) a line that arrived in time may still be read


class LineTimeout(Exception):
    """No line arrived before the deadline."""


class EndOfOutput(Exception):
    """The engine closed its output (it exited or crashed)."""


class StampedLineReader:
    """The lines of ``stream``, read by a daemon thread named ``name`` and stamped on arrival."""

    def __init__(self, stream: IO[str], name: str, late_grace: float = LATE_READ_GRACE) -> None:
        self.late_grace = late_grace
        self._queue: "queue.Queue[Optional[tuple[float, str]]]" = queue.Queue()
        self._late: Optional[tuple[float, str]] = None   # a line that came after its wait's deadline
        self._thread = threading.Thread(target=self._read, args=(stream,), name=name, daemon=True)
        self._thread.start()

    def _read(self, stream: IO[str]) -> None:
        try:
            for line in stream:
                self._queue.put((time.monotonic(), line.rstrip("\r\n")))
        except (OSError, ValueError):
            pass
        self._queue.put(None)
        try:
            stream.close()
        except (OSError, ValueError):
            pass

    def put(self, stamp: float, line: str) -> None:
        """Queue a line as if it had arrived at ``stamp`` (for tests of the deadline rules)."""
        self._queue.put((stamp, line))

    def next_before(self, deadline: float) -> tuple[float, str]:
        """``(arrival stamp, line)`` of the next line, if it arrived before ``deadline`` (monotonic).

        Raises :class:`LineTimeout` when none did, :class:`EndOfOutput` at the end of the output.
        """
        if self._late is not None:
            item, self._late = self._late, None
        else:
            remaining = max(0.0, deadline - time.monotonic())
            try:
                item = self._queue.get(timeout=min(remaining, threading.TIMEOUT_MAX))
            except queue.Empty:
                raise LineTimeout from None
        if item is None:
            self._queue.put(None)      # keep reporting the end to later waits
            raise EndOfOutput
        if item[0] > deadline or time.monotonic() > deadline + self.late_grace:
            self._late = item
            raise LineTimeout
        return item

    def drain(self) -> list[str]:
        """The lines already received and not read (stale output), without waiting; the end of the
        output, if it came, is kept for the next wait."""
        stale = [self._late[1]] if self._late is not None else []
        self._late = None
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return stale
            if item is None:
                self._queue.put(None)
                return stale
            stale.append(item[1])
