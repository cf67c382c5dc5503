"""Progress of the long tools on stderr: one live line on a terminal, plain lines in a log.

On a terminal the line is redrawn in place (``\\r``, the line cleared first), with a bar, at most every
``redraw`` seconds.  Anywhere else (a log file, a pipe) a ``\\r`` update would make one endless line, so a
plain line is written at most every ``every`` seconds (``0``: every update), and the last state when the
work ends if it was not written yet.  :meth:`Progress.note` writes a line that stays, in both cases.

``selfplay``, ``train``, ``egdb build`` and ``match`` report through this class.
"""
from __future__ import annotations

import sys
import threading
import time
from typing import Callable, Optional, TextIO

__all__ = ["PLAIN_EVERY_S", "Progress", "is_terminal", "bar"]

PLAIN_EVERY_S = 30.0       # seconds between plain progress lines when the stream is not a terminal
REDRAW_S = 0.2             # fastest redraw of the live line
CLEAR = "\r\x1b[2K"        # back to the start of the line and clear it


def is_terminal(stream: Optional[TextIO]) -> bool:
    """Whether ``stream`` is a terminal (False for files, pipes, closed or odd streams)."""
    try:
        return bool(stream is not None and stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


def bar(fraction: float, width: int = 30) -> str:
    """``[#######.......]`` for a fraction in [0, 1]."""
    filled = int(width * min(1.0, max(0.0, fraction)))
    return "[" + "#" * filled + "." * (width - filled) + "]"


class Progress:
    """Progress reports on ``stream`` (``None``: silent); thread-safe.

    ``label`` starts every line (``"selfplay"`` gives ``selfplay [###...] 3/10 games`` live and
    ``selfplay: 3/10 games`` plain).  ``live`` forces the mode (default: live on a terminal only).
    """

    def __init__(self, stream: Optional[TextIO] = sys.stderr, label: str = "", live: Optional[bool] = None,
                 every: float = PLAIN_EVERY_S, redraw: float = REDRAW_S, width: int = 30,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.stream = stream
        self.label = label
        self.live = is_terminal(stream) if live is None else live
        self.every = every
        self.redraw = redraw
        self.width = width
        self._clock = clock
        self._lock = threading.Lock()
        self._last_write = clock()          # plain mode: the first line comes ``every`` s after the start
        self._shown: Optional[str] = None   # the live line on screen, or the last plain line written
        self._pending: Optional[str] = None  # plain mode: the latest state not written yet

    def _live_text(self, text: str, fraction: Optional[float]) -> str:
        parts = [self.label] if self.label else []
        if fraction is not None:
            parts.append(bar(fraction, self.width))
        return " ".join(parts + [text])

    def _plain_text(self, text: str) -> str:
        return f"{self.label}: {text}" if self.label else text

    def update(self, text: str, fraction: Optional[float] = None, force: bool = False) -> None:
        """The current state (``fraction`` done, for the bar); shown now or when it is due."""
        if self.stream is None:
            return
        with self._lock:
            now = self._clock()
            # a live bar shows its end at once; a plain log gets it from close(), unless a note came first
            due = force or (self.live and fraction is not None and fraction >= 1.0)
            if self.live:
                if not due and self._shown is not None and now - self._last_write < self.redraw:
                    return
                self._shown = self._live_text(text, fraction)
                self._write(CLEAR + self._shown)
            else:
                line = self._plain_text(text)
                if not due and now - self._last_write < self.every:
                    self._pending = line
                    return
                self._pending = None
                self._shown = line
                self._write(line + "\n")
            self._last_write = now

    def note(self, text: str) -> None:
        """A line that stays (a finished slice, an epoch's losses).  It replaces the live line, which the
        next update draws again below it; a plain state not written yet is older than it and is dropped."""
        if self.stream is None:
            return
        with self._lock:
            self._write((CLEAR if self.live and self._shown is not None else "") + text + "\n")
            self._shown = self._pending = None

    def close(self) -> None:
        """The work ended: end the live line, or write the last state a plain log has not seen."""
        if self.stream is None:
            return
        with self._lock:
            if self.live:
                if self._shown is not None:
                    self._write("\n")
            elif self._pending is not None:
                self._write(self._pending + "\n")
            self._shown = self._pending = None

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):       # a closed or broken stderr must not stop the work
            pass
