"""Driving one engine process over the protocol (protocol.md): start, handshake, search, stop.

``EngineProcess`` owns a subprocess with pipes; its stdout is read by a
:class:`~uci_checkers.linereader.StampedLineReader` (a daemon thread stamping each
line on arrival), so that every wait has a deadline and a hung engine can never
block the arena.  A line counts when it arrived before the deadline (however late
the arena reads it), and the first line stamped after the deadline ends the wait,
so an engine that floods ``info`` lines without ever answering still times out.  The
process is started in its own process group (session) and is killed as a group:
an engine started through a shell script without ``exec`` leaves no orphan, and
the arena never blocks on a pipe (only the reader thread reads or closes stdout).

Failures of the engine are reported as exceptions the game runner maps onto a
lost game:

* :class:`EngineCrashed`  the process exited or closed its pipes;
* :class:`EngineTimeout`  no ``uciok`` / ``readyok`` / ``bestmove`` in time.

Both subclass :class:`EngineError` (a ``RuntimeError``: these are faults of the
engine process).  Faults of the description given by the user are
:class:`EngineConfigError`: :class:`EngineStartError` (the command cannot be
started, or the engine never got through its first start: see
:meth:`EngineProcess.failure_report`) and :class:`EngineOptionError` (an option
the engine does not have, or a value it refuses); the arena stops at once with
exit status 2 for those.

The engine's stderr is read by a daemon thread of its own, which keeps its last
lines (and logs every line with ``--debug``): a failed start is reported with them.
"""
from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import IO, Callable, Optional

from ..util.linereader import EndOfOutput, LineTimeout, StampedLineReader



class EngineError(RuntimeError):
    """The engine process misbehaved (crash or timeout)."""


class EngineCrashed(EngineError):
    """The engine process exited or closed its output."""


class EngineTimeout(EngineError):
    """The engine did not answer in time."""


class EngineConfigError(ValueError):
    """An engine was described wrongly on the command line."""


class EngineStartError(EngineConfigError):
    """The engine's command cannot be started (missing program, not executable, bad directory)."""


class EngineOptionError(EngineConfigError):
    """The engine has no option of that name, or refused its value (``info string error ...``)."""


def check_command(command: list[str], cwd: Optional[str] = None) -> None:
    """Raise :class:`EngineStartError` when ``command`` names no runnable program (before any game)."""
    if not command:
        raise EngineStartError("empty engine command")
    if cwd and not os.path.isdir(cwd):
        raise EngineStartError(f"engine directory {cwd!r} does not exist")
    program = command[0]
    if os.sep in program or (os.altsep and os.altsep in program):
        path = program if os.path.isabs(program) or not cwd else os.path.join(cwd, program)
        if not os.path.isfile(path):
            raise EngineStartError(f"engine command {program!r} not found")
        if not os.access(path, os.X_OK):
            raise EngineStartError(f"engine command {program!r} is not executable")
    elif shutil.which(program) is None:
        raise EngineStartError(f"engine command {program!r} not found on PATH")


def default_engine_command() -> list[str]:
    """This package's own engine, run by the current Python interpreter."""
    return [sys.executable, "-m", "uci_checkers"]


@dataclass
class Limits:
    """Search limits for one engine; any combination may be given (the arena insists on at least one).

    ``tc_base_ms``/``tc_inc_ms`` are the clock (base+increment per side);
    ``movetime_ms`` a fixed time per move; ``depth`` and ``nodes`` fixed-effort limits.
    """

    tc_base_ms: Optional[int] = None
    tc_inc_ms: int = 0
    movetime_ms: Optional[int] = None
    depth: Optional[int] = None
    nodes: Optional[int] = None

    @property
    def has_clock(self) -> bool:
        return self.tc_base_ms is not None

    def describe(self) -> str:
        parts = []
        if self.tc_base_ms is not None:
            parts.append(f"tc={_fmt_seconds(self.tc_base_ms)}+{_fmt_seconds(self.tc_inc_ms)}")
        if self.movetime_ms is not None:
            parts.append(f"movetime={self.movetime_ms}ms")
        if self.depth is not None:
            parts.append(f"depth={self.depth}")
        if self.nodes is not None:
            parts.append(f"nodes={self.nodes}")
        return " ".join(parts) or "unlimited"

    def pdn_time_control(self) -> str:
        """The PDN ``TimeControl`` tag value (PGN style: ``base+inc`` in seconds, ``-`` for none)."""
        if self.tc_base_ms is not None:
            return f"{_fmt_seconds(self.tc_base_ms)}+{_fmt_seconds(self.tc_inc_ms)}"
        if self.movetime_ms is not None:
            return f"{_fmt_seconds(self.movetime_ms)}/move"
        return "-"


def _fmt_seconds(ms: int) -> str:
    text = f"{ms / 1000:.3f}".rstrip("0").rstrip(".")
    return text or "0"


MAX_CLOCK_S = 1_000_000          # ~11 days per side: longer is a typo


def parse_tc(text: str) -> tuple[int, int]:
    """``"60+0.6"`` -> (60000, 600) milliseconds; ``"10"`` -> (10000, 0); ``"1:30+1"`` accepted."""
    base_text, _, inc_text = text.strip().partition("+")
    try:
        if ":" in base_text:
            minutes, _, seconds = base_text.partition(":")
            base = float(minutes) * 60 + float(seconds)
        else:
            base = float(base_text)
        inc = float(inc_text) if inc_text else 0.0
    except ValueError:
        raise EngineConfigError(f"bad time control {text!r}: expected BASE[+INC] in seconds, e.g. 60+0.6")
    if not (0 < base <= MAX_CLOCK_S) or not (0 <= inc <= MAX_CLOCK_S):     # also refuses nan and inf
        raise EngineConfigError(f"bad time control {text!r}: base must be > 0 and increment >= 0, "
                                f"both at most {MAX_CLOCK_S:g} s")
    return int(round(base * 1000)), int(round(inc * 1000))


@dataclass
class EngineConfig:
    """How to run one engine: a command line, a display name, options and limits."""

    name: str
    command: Optional[list[str]] = None      # None: this package's engine (resolved where it runs)
    cwd: Optional[str] = None
    options: dict[str, str] = field(default_factory=dict)
    limits: Limits = field(default_factory=Limits)

    def resolved_command(self) -> list[str]:
        return list(self.command) if self.command else default_engine_command()

    def describe(self) -> str:
        cmd = " ".join(shlex.quote(c) for c in self.resolved_command())
        return f"{self.name}: {cmd}"


@dataclass
class Timeouts:
    """How long to wait for each reply, in seconds (generous defaults: cold numba compiles are slow)."""

    uciok: float = 30.0
    readyok: float = 120.0
    move: float = 300.0          # bestmove when no clock or movetime bounds the search
    margin_ms: int = 200         # time a clock or movetime may be exceeded before a time forfeit
    stop_grace: float = 2.0      # after `stop`, how long to wait for the engine to settle


@dataclass
class Reply:
    """A ``bestmove`` reply and the last ``info`` figures before it."""

    move: str                    # the move text, or "(none)"
    elapsed_ms: float
    score: Optional[str] = None  # e.g. "cp 12" or "mate 3"
    depth: Optional[int] = None
    nodes: Optional[int] = None
    late: bool = False           # True when the wait ran past its deadline (no move taken)


STDERR_TAIL = 8          # stderr lines kept for the report of a failed start
STDOUT_TAIL = 4          # stdout lines kept likewise (an engine that does not speak the protocol)


class _TailReader:
    """The last lines of a stream (an engine's stderr), read to its end by a daemon thread so the
    engine can never block on a full pipe; every line also goes to ``log`` when given."""

    def __init__(self, stream: IO[str], name: str, log: Optional[Callable[[str], None]] = None) -> None:
        self.lines: deque[str] = deque(maxlen=STDERR_TAIL)
        self._log = log
        self._name = name
        self._thread = threading.Thread(target=self._read, args=(stream,), name=f"stderr-{name}", daemon=True)
        self._thread.start()

    def _read(self, stream: IO[str]) -> None:
        try:
            for line in stream:
                text = line.rstrip("\r\n")
                self.lines.append(text)
                if self._log:
                    self._log(f"{self._name} stderr: {text}")
        except (OSError, ValueError):
            pass
        try:
            stream.close()
        except (OSError, ValueError):
            pass

    def finish(self, timeout: float) -> list[str]:
        """The kept lines once the stream has ended (or after ``timeout`` s, whatever was read)."""
        self._thread.join(timeout)
        return list(self.lines)


class EngineProcess:
    """One running engine.  Not thread-safe: one game runner thread drives it."""

    def __init__(self, config: EngineConfig, timeouts: Timeouts,
                 log: Optional[Callable[[str], None]] = None) -> None:
        self.config = config
        self.timeouts = timeouts
        self.log = log
        self.proc: Optional[subprocess.Popen] = None
        self.reader: Optional[StampedLineReader] = None   # the engine's stdout, stamped line by line
        self.id_name: Optional[str] = None
        self.declared_options: dict[str, str] = {}   # lower-case name -> name as declared
        self.option_defaults: dict[str, str] = {}    # lower-case name -> declared default
        self.last_line_at = 0.0                      # monotonic time the reader received the last line
        self.stderr: Optional[_TailReader] = None
        self.stdout_tail: deque[str] = deque(maxlen=STDOUT_TAIL)

    # --- process ------------------------------------------------------------
    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def start(self) -> None:
        """Start the process and complete the ``uci``/options/``isready`` handshake."""
        cmd = self.config.resolved_command()
        try:
            self.proc = subprocess.Popen(
                cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                cwd=self.config.cwd or None, text=True, encoding="utf-8", errors="replace",
                bufsize=1, env=_engine_env(self.config.command is None),
                start_new_session=True)   # Ctrl-C reaches the arena, which stops engines itself
        except OSError as exc:
            raise EngineStartError(f"cannot start {cmd[0]!r}: {exc}") from exc
        assert self.proc.stdout is not None and self.proc.stderr is not None
        self.reader = StampedLineReader(self.proc.stdout, f"reader-{self.config.name}")
        self.stderr = _TailReader(self.proc.stderr, self.config.name, self.log)
        self.send("uci")
        deadline = time.monotonic() + self.timeouts.uciok
        while True:
            line = self._next_line(deadline, "uciok")
            if line == "uciok":
                break
            if line.startswith("id name "):
                self.id_name = line[len("id name "):].strip()
            elif line.startswith("option name "):
                name = _option_name(line)
                if name:
                    self.declared_options[name.lower()] = name
                    default = _option_default(line)
                    if default is not None:
                        self.option_defaults[name.lower()] = default
        for name, value in self.config.options.items():
            if self.declared_options and not self.has_option(name):
                raise EngineOptionError(f"{self.config.name}: the engine has no option {name!r} (it has: "
                                        f"{', '.join(self.declared_options.values())})")
            self.set_option(name, value)
        refused = [line for line in self.sync(self.timeouts.readyok) if line.startswith("info string error")]
        if refused and self.config.options:
            raise EngineOptionError(f"{self.config.name}: {refused[0][len('info string '):]}")

    def send(self, line: str) -> None:
        if self.log:
            self.log(f"{self.config.name} < {line}")
        if not self.alive:
            raise EngineCrashed(self._exit_text())
        try:
            assert self.proc is not None and self.proc.stdin is not None
            self.proc.stdin.write(line + "\n")
            self.proc.stdin.flush()
        except (OSError, ValueError) as exc:
            raise EngineCrashed(f"{self._exit_text()} (write failed: {exc})") from exc

    def _next_line(self, deadline: float, waiting_for: str) -> str:
        """The next line, if the engine wrote it before ``deadline`` (see :mod:`uci_checkers.util.linereader`)."""
        if self.reader is None:
            raise EngineCrashed(f"engine not started while waiting for {waiting_for}")
        try:
            self.last_line_at, line = self.reader.next_before(deadline)
        except LineTimeout:
            raise EngineTimeout(f"no {waiting_for} within the time allowed") from None
        except EndOfOutput:
            if self.proc is not None:
                try:
                    self.proc.wait(timeout=1.0)
                except subprocess.TimeoutExpired:
                    pass
            raise EngineCrashed(self._exit_text() + f" while waiting for {waiting_for}") from None
        self.stdout_tail.append(line)
        if self.log:
            self.log(f"{self.config.name} > {line}")
        return line

    def failure_report(self) -> list[str]:
        """Why the engine may have failed, for the user: its last stderr lines (or, when it wrote
        none, its last output lines).  Kills the process group first, so its pipes end."""
        self.kill()
        tail = self.stderr.finish(1.0) if self.stderr is not None else []
        name = self.config.name
        if tail:
            return [f"{name} stderr: {line}" for line in tail]
        if self.stdout_tail:
            return [f"{name} wrote nothing on stderr; its last output: "
                    + ", ".join(repr(line[:80]) for line in self.stdout_tail)]
        return [f"{name} wrote nothing on stderr or stdout"]

    def _exit_text(self) -> str:
        if self.proc is None:
            return "engine not started"
        code = self.proc.poll()
        return "engine closed its output" if code is None else f"engine exited with status {code}"

    def set_option(self, name: str, value: Optional[str]) -> bool:
        """Send ``setoption`` (using the engine's own spelling when it declared the option).

        Returns whether the engine declared an option of that name.
        """
        declared = self.declared_options.get(name.lower())
        text = f"setoption name {declared or name}"
        if value is not None and value != "":
            text += f" value {value}"
        self.send(text)
        return declared is not None

    def has_option(self, name: str) -> bool:
        return name.lower() in self.declared_options

    def option_value(self, name: str) -> Optional[str]:
        """The value this engine runs with: the one the arena set, else the declared default."""
        for key, value in self.config.options.items():
            if key.lower() == name.lower():
                return value
        return self.option_defaults.get(name.lower())

    def sync(self, timeout: Optional[float] = None) -> list[str]:
        """``isready`` and wait for ``readyok``; the lines that came before it."""
        self.send("isready")
        deadline = time.monotonic() + (self.timeouts.readyok if timeout is None else timeout)
        before: list[str] = []
        while True:
            line = self._next_line(deadline, "readyok")
            if line == "readyok":
                return before
            if len(before) < 100:
                before.append(line)

    def new_game(self) -> None:
        self.send("ucinewgame")
        self.sync()

    def search(self, position_cmd: str, go_cmd: str, timeout: float) -> Reply:
        """Send the position and ``go``; wait up to ``timeout`` s for ``bestmove``.

        Raises :class:`EngineTimeout` with the elapsed time when nothing comes.
        """
        self._drain()                  # nothing said before this `go` can answer it
        self.send(position_cmd)
        self.send(go_cmd)
        start = time.monotonic()
        deadline = start + timeout
        score = None
        depth = nodes = None
        while True:
            line = self._next_line(deadline, "bestmove")
            if line.startswith("info "):
                s, d, n = _parse_info(line)
                score = s or score
                depth = d if d is not None else depth
                nodes = n if n is not None else nodes
                continue
            if line == "bestmove" or line.startswith("bestmove "):
                elapsed = max(0.0, self.last_line_at - start) * 1000.0
                parts = line.split()
                move = parts[1] if len(parts) > 1 else ""
                return Reply(move, elapsed, score, depth, nodes)

    def _drain(self) -> None:
        """Drop lines already received (stale output); keep an end-of-file mark."""
        if self.reader is None:
            return
        for line in self.reader.drain():
            if self.log:
                self.log(f"{self.config.name} > {line}   (stale, dropped)")

    def settle(self) -> bool:
        """After an abandoned search: ``stop``, its ``bestmove``, then ``isready``/``readyok``.

        The ``bestmove`` must be waited for: an engine answers ``isready`` at once even
        while its search is still unwinding, so a ``readyok`` alone does not mean the
        late ``bestmove`` will not arrive later.  True if the engine did both in time.
        """
        try:
            self.send("stop")
            deadline = time.monotonic() + self.timeouts.stop_grace
            while not self._next_line(deadline, "bestmove after stop").startswith("bestmove"):
                pass
            self.sync(self.timeouts.stop_grace)
            return True
        except EngineError:
            return False

    def close(self, timeout: float = 1.0) -> None:
        """``quit``; kill the process group if it lingers.  Never blocks beyond a few seconds.

        stdout is left to the reader thread (it closes it at end of file); the process
        group is killed even when the process itself has exited, so a child it left
        behind (a shell script without ``exec``) does not outlive the arena.
        """
        proc = self.proc
        if proc is None:
            return
        if proc.poll() is None:
            try:
                assert proc.stdin is not None
                proc.stdin.write("quit\n")
                proc.stdin.flush()
            except (OSError, ValueError):
                pass
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                pass
        self.kill()
        try:
            if proc.stdin:
                proc.stdin.close()
        except (OSError, ValueError):
            pass
        self.proc = None

    def kill(self) -> None:
        """Kill the engine's whole process group (SIGKILL) and reap the process (bounded wait)."""
        proc = self.proc
        if proc is None:
            return
        kill_process_group(proc)


def kill_process_group(proc: subprocess.Popen, wait: float = 5.0) -> None:
    """SIGKILL the process group led by ``proc`` (started with ``start_new_session``), then reap it.

    The group is killed even when ``proc`` has already exited: children it left keep the group.
    """
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError, OSError):
        pass
    try:
        proc.wait(timeout=wait)
    except subprocess.TimeoutExpired:
        pass


def _engine_env(own_engine: bool) -> dict[str, str]:
    """The arena's environment; engines run unbuffered when they are Python.

    For this package's own engine the directory holding the package goes first on
    ``PYTHONPATH``, so ``python -m uci_checkers`` finds the same code as the arena
    (a source checkout, or the copy Ray ships to its workers).
    """
    env = dict(os.environ)
    env.setdefault("PYTHONUNBUFFERED", "1")
    if own_engine:
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        old = env.get("PYTHONPATH")
        env["PYTHONPATH"] = root + (os.pathsep + old if old else "")
    return env


def _option_name(line: str) -> Optional[str]:
    """The name in ``option name <words...> type ...``."""
    words = line.split()
    try:
        end = words.index("type")
    except ValueError:
        end = len(words)
    name = " ".join(words[2:end])
    return name or None


def _option_default(line: str) -> Optional[str]:
    """The value after ``default`` in an ``option`` line (up to the next keyword), or None."""
    words = line.split()
    try:
        start = words.index("default", words.index("type") + 1) + 1
    except ValueError:
        return None
    value = []
    for w in words[start:]:
        if w in ("min", "max", "var"):
            break
        value.append(w)
    return " ".join(value)


def _parse_info(line: str) -> tuple[Optional[str], Optional[int], Optional[int]]:
    words = line.split()
    score = None
    depth = nodes = None
    for i, w in enumerate(words[:-1]):
        try:
            if w == "score" and i + 2 < len(words) and words[i + 1] in ("cp", "mate"):
                score = f"{words[i + 1]} {int(words[i + 2])}"
            elif w == "depth":
                depth = int(words[i + 1])
            elif w == "nodes":
                nodes = int(words[i + 1])
        except ValueError:
            continue
        if w == "pv" or w == "string":
            break
    return score, depth, nodes
