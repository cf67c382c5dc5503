"""The protocol loop of protocol.md: text in, text out, over the :class:`~uci_checkers.engine.Engine` facade.

:class:`Protocol` handles one command line at a time (``handle``) and writes
every reply through one locked writer that flushes each line, so tests can
drive it in-process::

    lines = []
    proto = Protocol(write=lines.append)
    proto.handle("uci")          # -> id ..., option ..., uciok
    proto.handle("isready")      # blocks until the kernels are ready -> readyok

:func:`main` runs it on stdin/stdout: an input thread reads raw bytes (decoded
as UTF-8 with replacement characters, overlong lines dropped with an error),
the main thread executes the commands in order, and a search runs in the
engine's worker, so ``stop``, ``isready`` and ``quit`` are answered while it
thinks.  Nothing but protocol lines is ever written to stdout.
"""
from __future__ import annotations

import os
import queue
import re
import sys
import threading
import time
import traceback
from typing import Any, Callable, Optional

from ..engine.timeman import GO_NUMBER_BOUNDS, GoParams, clamp_go_number
from ..engine.facade import Engine, EngineBusyError
from ..engine.options import OptionError
from ..engine.warmup import kernels_compiling
from ..util.exitcodes import EXIT_OK, EXIT_USAGE

MAX_LINE_BYTES = 64 * 1024          # longer input lines are dropped with an error
MAX_ERROR_TEXT = 160                # echo at most this much of a bad token
READY_TIMEOUT_S = 600.0             # isready waits this long at most for the kernels (a cold compile: seconds)

HELP_TEXT = """\
uci_checkers speaks the protocol described in protocol.md (UCI adapted to English checkers).
  uci                          identify, list options, uciok
  isready                      readyok once kernels are compiled and pending changes applied
  setoption name <N> [value <V>]   set an option (names case-insensitive)
  ucinewgame                   forget the game and the hash
  position startpos|fen <FEN> [moves <m1> <m2> ...]
  go [searchmoves <m>...] [ponder] [wtime <ms>] [btime <ms>] [winc <ms>] [binc <ms>]
     [movestogo <n>] [depth <n>] [nodes <n>] [mate <n>] [movetime <ms>] [infinite]
  go perft <n>                 count leaf nodes per legal move
  stop | ponderhit | quit | debug on|off
  d                            board diagram, FEN, key, legal moves, game status
  eval                         static evaluation broken into terms
  bench [depth]                fixed-depth search benchmark
  help                         this text
Black (b) is the first mover: btime/binc are Black's clock, wtime/winc White's."""

_INT_KEYS = ("wtime", "btime", "winc", "binc", "movestogo", "depth", "nodes", "mate", "movetime")
_ASCII_INT = re.compile(r"[+-]?[0-9]+")
_GO_KEYS = set(_INT_KEYS) | {"searchmoves", "ponder", "infinite", "perft"}
_SETOPTION = re.compile(r"^\s*\S+\s+name\s+(?P<name>.*?)(?:\s+value(?:\s+(?P<value>.*?))?)?\s*$",
                        re.IGNORECASE | re.DOTALL)


def _clip(text: str, limit: int = MAX_ERROR_TEXT) -> str:
    """A single-line, printable, bounded version of ``text`` for an error message."""
    text = "".join(ch if ch.isprintable() else "?" for ch in text.replace("\n", " ").replace("\r", " "))
    return text if len(text) <= limit else text[:limit] + "..."


class ProtocolError(ValueError):
    """A command that cannot be executed as written (reported as ``info string error: ...``)."""


def _parse_ascii_int(text: str, what: str) -> int:
    """An integer written in ASCII digits (any length: the caller clamps it); ProtocolError otherwise."""
    if not _ASCII_INT.fullmatch(text):
        raise ProtocolError(f"{what} needs a whole number, not {_clip(text, 40)!r}")
    digits = text.lstrip("+-").lstrip("0") or "0"
    if len(digits) > 30:                 # beyond every bound; int() of 4,300+ digits would raise
        return -10 ** 30 if text.startswith("-") else 10 ** 30
    return int(text, 10)


def format_info(info: Any) -> str:
    """``info depth .. seldepth .. multipv .. score cp|mate .. [bound] nodes .. nps .. hashfull .. time .. pv ..``"""
    parts = ["info", "depth", str(int(info.depth)), "seldepth", str(int(getattr(info, "seldepth", info.depth))),
             "multipv", str(int(getattr(info, "multipv", 1)))]
    mate = getattr(info, "mate", None)
    if mate is not None:
        parts += ["score", "mate", str(int(mate))]
    else:
        parts += ["score", "cp", str(int(info.score))]
    bound = getattr(info, "bound", None)
    if bound in ("lowerbound", "upperbound"):
        parts.append(bound)
    parts += ["nodes", str(int(info.nodes)), "nps", str(int(getattr(info, "nps", 0))),
              "hashfull", str(int(getattr(info, "hashfull", 0))), "time", str(int(getattr(info, "time_ms", 0)))]
    if getattr(info, "tbhits", 0):
        parts += ["tbhits", str(int(info.tbhits))]
    pv = list(getattr(info, "pv", None) or [])
    if pv:
        parts.append("pv")
        parts += [str(m) for m in pv]
    return " ".join(parts)


def _option_line(spec: Any) -> str:
    parts = ["option", "name", spec.name, "type", spec.type]
    if spec.type == "check":
        parts += ["default", "true" if spec.default else "false"]
    elif spec.type == "spin":
        parts += ["default", str(spec.default), "min", str(spec.min), "max", str(spec.max)]
    elif spec.type == "combo":
        parts += ["default", str(spec.default)]
        for var in spec.vars:
            parts += ["var", var]
    elif spec.type == "string":
        parts += ["default", spec.default if spec.default else "<empty>"]
    return " ".join(parts)


def parse_position(tokens: list[str], apply: Callable[[Any, list[str]], None]) -> None:
    """``position startpos|fen <FEN> [moves <m>...]``: hands the start position and the move texts to ``apply``.

    A malformed command raises :class:`ProtocolError`; a bad FEN, or a bad move that ``apply``
    finds (a ``NotationError``), becomes ``position: <what is wrong> (position unchanged)``.
    """
    from ..rules.notation import NotationError
    from ..rules.position import Position

    if len(tokens) < 2:
        raise ProtocolError("position needs startpos or fen <FEN>")
    lowered = [t.lower() for t in tokens]
    moves_at = lowered.index("moves") if "moves" in lowered else len(tokens)
    kind = lowered[1]
    try:
        if kind == "startpos":
            if moves_at != 2:
                raise ProtocolError(f"position startpos: unexpected {_clip(' '.join(tokens[2:moves_at]), 60)!r}"
                                    " (expected moves or the end of the line)")
            start = Position.start()
        elif kind == "fen":
            fen = " ".join(tokens[2:moves_at])
            if not fen:
                raise ProtocolError("position fen needs a FEN, like B:W21-32:B1-12")
            start = Position.from_fen(fen)
        else:
            raise ProtocolError(f"position needs startpos or fen, not {_clip(tokens[1], 60)!r}")
        apply(start, tokens[moves_at + 1:])
    except NotationError as exc:
        raise ProtocolError(f"position: {exc} (position unchanged)") from None


def parse_go(tokens: list[str]) -> tuple[GoParams, Optional[int]]:
    """The parameters of a ``go`` line, or ``(params, n)`` for ``go perft n``; ProtocolError when malformed."""
    params = GoParams()
    lowered = [t.lower() for t in tokens]
    if "perft" in lowered:
        if len(tokens) == 2 and lowered[1] == "perft":
            raise ProtocolError("go: perft needs a number")
        if len(tokens) != 3 or lowered[1] != "perft":
            raise ProtocolError("go perft takes only a depth: go perft <n>")
        depth = _parse_ascii_int(tokens[2], "go perft: depth")
        if not 0 <= depth <= 40:
            raise ProtocolError(f"go perft: depth must be 0..40, not {_clip(tokens[2], 40)}")
        return params, depth
    i = 1
    while i < len(tokens):
        key = lowered[i]
        if key not in _GO_KEYS:
            raise ProtocolError(f"go: unknown parameter {_clip(tokens[i], 60)!r}")
        if key in ("ponder", "infinite"):
            setattr(params, key, True)
            i += 1
            continue
        if key == "searchmoves":
            j = i + 1
            while j < len(tokens) and lowered[j] not in _GO_KEYS:
                j += 1
            if j == i + 1:
                raise ProtocolError("go: searchmoves needs at least one move")
            params.searchmoves = tokens[i + 1:j]
            i = j
            continue
        if i + 1 >= len(tokens):
            raise ProtocolError(f"go: {key} needs a number")
        value = _parse_ascii_int(tokens[i + 1], f"go: {key}")
        low = GO_NUMBER_BOUNDS[key][0]
        if key in ("wtime", "btime"):
            pass                         # a flagged clock may show negative time: counts as 0
        elif value < low:
            raise ProtocolError(f"go: {key} must be >= {low}, not {value}")
        setattr(params, key, clamp_go_number(key, value))   # huge values: the documented maximum
        i += 2
    return params, None


class LineProtocol:
    """What every protocol.md front end shares: one locked, flushed writer, error lines, command dispatch.

    ``write`` receives one line at a time without its newline; calls are serialised by one
    lock (worker threads write too).  The default writer is stdout, flushed per line.
    A subclass fills ``_commands`` (command word -> method(tokens, line)); ``go`` is called
    as ``_go(tokens, line, received)`` so that its clock starts when the line arrived.
    """

    def __init__(self, write: Optional[Callable[[str], None]] = None) -> None:
        self._raw_write = write if write is not None else _stdout_writer
        self._write_lock = threading.Lock()
        self.debug = False
        self.abort = threading.Event()       # set when quit arrives: blocking waits give up
        self.finished = False
        self.host_gone = False
        # whether more input lines are queued behind the one being executed (main() wires its queue):
        # an isready waiting for the kernels then answers at once
        self.input_waiting: Callable[[], bool] = lambda: False
        self._commands: dict[str, Callable[[list[str], str], None]] = {}

    # --- output --------------------------------------------------------------------------------
    def write(self, line: str) -> None:
        """Write one protocol line (thread-safe, flushed)."""
        with self._write_lock:
            try:
                self._raw_write(line)
            except (BrokenPipeError, ValueError, OSError):
                self.host_gone = True        # stdout closed: the loop ends as on quit
                self.abort.set()


    def write_board(self, pos: Any) -> None:
        """``d``: the diagram, the FEN and the side to move of ``pos`` (each front end adds its own lines)."""
        for row in pos.diagram().splitlines():
            self.write(row)
        self.write(f"Fen: {pos.fen()}")
        self.write(f"Side to move: {pos.side_name}")

    def _debug(self, tokens: list[str], line: str) -> None:
        if len(tokens) != 2 or tokens[1].lower() not in ("on", "off"):
            raise ProtocolError("debug needs on or off")
        self.debug = tokens[1].lower() == "on"
    def info_string(self, text: str) -> None:
        self.write("info string " + _clip(text, 2000))

    def error(self, text: str) -> None:
        self.write("info string error: " + _clip(text, 400))

    # --- input ---------------------------------------------------------------------------------
    def handle(self, line: str, received: Optional[float] = None) -> bool:
        """Execute one command line; returns False once the session should end (quit).

        ``received`` is the ``time.monotonic()`` at which the line arrived (the clock of a
        ``go`` starts then); default: now.
        """
        if self.finished:
            return False
        received = received if received is not None else time.monotonic()
        tokens = line.split()
        if not tokens:
            return True
        name = tokens[0].lower()
        command = self._commands.get(name)
        if command is None:
            self.error(f"unknown command {_clip(tokens[0], 60)!r} (type help for the list)")
            return True
        try:
            if name == "go":
                self._go(tokens, line, received)
            else:
                command(tokens, line)
        except ProtocolError as exc:
            self.error(str(exc))
        except Exception as exc:  # never a traceback: one line, and carry on
            self.error(f"internal: {name}: {type(exc).__name__}: {exc}")
            if self.debug:                   # the details, for a developer who asked for them
                traceback.print_exc(file=sys.stderr)
        return not self.finished

    def _go(self, tokens: list[str], line: str, received: float) -> None:
        raise ProtocolError("go is not available here")


class Protocol(LineProtocol):
    """One engine session: feed it lines with :meth:`handle`, it writes reply lines through ``write``.

    ``write`` receives one line at a time without its newline; calls are serialised by one
    lock (the search worker writes too).  The default writer is stdout, flushed per line.
    """

    def __init__(self, write: Optional[Callable[[str], None]] = None, engine: Optional[Engine] = None) -> None:
        super().__init__(write)
        self.engine = engine if engine is not None else Engine()
        self.position_given = False
        self._commands = {
            "uci": self._uci, "isready": self._isready, "setoption": self._setoption,
            "ucinewgame": self._ucinewgame, "position": self._position, "go": self._go,
            "stop": self._stop, "ponderhit": self._ponderhit, "quit": self._quit, "debug": self._debug,
            "d": self._d, "eval": self._eval, "bench": self._bench, "help": self._help,
        }

    # --- commands ------------------------------------------------------------------------------
    def _uci(self, tokens: list[str], line: str) -> None:
        eng = self.engine
        self.write(f"id name {eng.name} {eng.version}")
        self.write(f"id author {eng.author}")
        for spec in eng.option_specs():
            self.write(_option_line(spec))
        self.write("uciok")
        eng.start_warmup()

    def _isready(self, tokens: list[str], line: str) -> None:
        eng = self.engine
        # after stop: readyok only once the stopped search wrote its bestmove (as in Stockfish)
        if not eng.wait_stopped(abort=self.abort) and self.abort.is_set():
            return
        if eng.searching:                    # answered at once (a search still waiting for the
            self.write("readyok")            # kernels plays a fallback move at its deadline)
            return
        if not eng.ready:
            eng.start_warmup()
            deadline = time.monotonic() + 1.0     # the warm-up thread decides within moments
            while (not kernels_compiling() and not eng.ready and not self.abort.is_set()
                   and not self.input_waiting() and time.monotonic() < deadline):
                time.sleep(0.01)
            if kernels_compiling():
                self.info_string("compiling the search kernels (the first start after an install or an "
                                 "upgrade takes several seconds; later starts load them from the cache)")
        deadline = time.monotonic() + READY_TIMEOUT_S
        while not eng.ensure_ready(timeout=0.02, abort=self.abort):
            if self.abort.is_set():
                return                       # quit arrived while waiting
            if self.input_waiting():
                # the host sent more without waiting for readyok: answer now, so that what it sent
                # (a go: its clock runs) is not held up by the compilation
                self.info_string("the search kernels are not ready yet: readyok now, as more commands "
                                 "arrived (a timed go before they are ready plays a fallback move on time)")
                break
            if time.monotonic() >= deadline:
                # answered all the same: a go now plays a fallback move at its deadline
                self.error(f"the kernels are still not ready after {READY_TIMEOUT_S:.0f} s")
                break
        if eng.ready and eng.warmup_error is not None:
            self.error(f"internal: warm-up failed: {type(eng.warmup_error).__name__}: {eng.warmup_error}")
        self.write("readyok")

    def _setoption(self, tokens: list[str], line: str) -> None:
        m = _SETOPTION.match(line)
        if len(tokens) < 3 or tokens[1].lower() != "name" or m is None or not m.group("name").strip():
            raise ProtocolError("setoption needs: setoption name <name> [value <value>]")
        name, value = m.group("name"), m.group("value")
        try:
            self.engine.set_option(name, value)
        except OptionError as exc:
            raise ProtocolError(f"setoption: {exc}") from None
        if self.debug:
            key = " ".join(name.split()).lower()
            spec = next(sp for sp in self.engine.option_specs() if sp.name.lower() == key)
            shown = "pressed" if spec.type == "button" else f"= {self.engine.get_option(spec.name)}"
            self.info_string(f"option {spec.name} {shown}")

    def _ucinewgame(self, tokens: list[str], line: str) -> None:
        if len(tokens) > 1:
            raise ProtocolError("ucinewgame takes no arguments")
        self.engine.new_game()
        self.position_given = False

    def _position(self, tokens: list[str], line: str) -> None:
        parse_position(tokens, self.engine.set_position)
        self.position_given = True

    def _go(self, tokens: list[str], line: str, received: float) -> None:
        from ..rules.notation import NotationError

        eng = self.engine
        params, perft = parse_go(tokens)
        # after stop, the stopped search reports its bestmove first (as in Stockfish)
        if not eng.wait_stopped(abort=self.abort):
            if self.abort.is_set():
                return
        if eng.searching:
            raise ProtocolError("go: a search is already running (send stop first); this go is ignored")
        if perft is not None:
            self._perft(perft)
            return
        params.start_time = received
        if not self.position_given:
            self.error("go before position: searching the start position")
            self.position_given = True
        game = eng.game
        turn = game.position.turn
        status = game.status()
        if status.is_over and game.position.has_legal_move():
            self.info_string(f"game already over: {status.value} (searching anyway)")

        def on_done(result: Any) -> None:
            if result.best is None:
                winner = "white" if turn == 0 else "black"
                self.write(f"info string result {winner} no legal moves")
                self.write("bestmove (none)")
            elif result.ponder is not None:
                self.write(f"bestmove {result.best} ponder {result.ponder}")
            else:
                self.write(f"bestmove {result.best}")

        def on_info(info: Any) -> None:
            try:
                self.write(format_info(info))
            except Exception as exc:  # a malformed report must not kill the search
                self.error(f"internal: info: {type(exc).__name__}: {exc}")

        def on_currmove(move: Any, number: int) -> None:
            self.write(f"info currmove {move} currmovenumber {number}")

        def on_plan(tm: Any) -> None:       # before the search starts: ahead of its bestmove
            self.info_string(tm.plan())

        try:
            eng.go(params, on_info, on_done, on_currmove=on_currmove, on_message=self.info_string,
                   on_plan=on_plan if self.debug else None)
        except NotationError as exc:
            raise ProtocolError(f"go searchmoves: {exc}") from None
        except EngineBusyError as exc:
            raise ProtocolError(f"go: {exc}") from None

    def _perft(self, depth: int) -> None:
        started = time.monotonic()

        def on_move(move: Any, count: int) -> None:
            self.write(f"{move}: {count}")

        def on_done(total: Optional[int]) -> None:
            if total is None:
                self.info_string("perft stopped")
                return
            self.write("")
            self.write(f"Nodes searched: {total}")
            if self.debug:
                self.info_string(f"perft {depth} took {int((time.monotonic() - started) * 1000)} ms")

        try:
            self.engine.perft(depth, on_move, on_done,
                              lambda exc: self.error(f"internal: perft: {type(exc).__name__}: {exc}"))
        except EngineBusyError as exc:
            raise ProtocolError(f"go perft: {exc}") from None

    def _stop(self, tokens: list[str], line: str) -> None:
        if not self.engine.searching:
            raise ProtocolError("stop: no search is running")
        self.engine.stop()

    def _ponderhit(self, tokens: list[str], line: str) -> None:
        if not self.engine.ponderhit():
            raise ProtocolError("ponderhit: no ponder search is running")

    def _quit(self, tokens: list[str], line: str) -> None:
        self.abort.set()
        self.engine.quit(timeout=1.0)
        self.finished = True

    def _d(self, tokens: list[str], line: str) -> None:
        game = self.engine.game
        pos = game.position
        self.write_board(pos)
        self.write(f"Key: {pos.zobrist() & 0xFFFFFFFFFFFFFFFF:016x}")
        self.write("Legal moves: " + (" ".join(str(m) for m in pos.legal_moves()) or "(none)"))
        status = game.status()
        if status.is_over and not pos.has_legal_move():
            text = f"{status.value} ({pos.side_name} has no legal moves)"
        else:
            text = status.value
        limit = game.no_progress_plies
        counter = f"{game.quiet_plies}/{limit}" if limit else f"{game.quiet_plies} (rule off)"
        self.write(f"Status: {text}; no-progress plies {counter}; repetitions {game.repetition_count()}; "
                   f"moves played {len(game.moves)}")
        verdict = self.engine.egdb_verdict()
        if verdict:
            self.write(f"Endgame database: {verdict}")

    def _eval(self, tokens: list[str], line: str) -> None:
        terms = self.engine.evaluate_terms()
        if not terms:
            raise ProtocolError("eval unavailable: no evaluation module")
        pos = self.engine.game.position
        self.write(f"Static evaluation of {pos.fen()} (centi-men; terms from Black's view)")
        width = max(len(k) for k in terms)
        for key, value in terms.items():
            if key != "total_stm":
                self.write(f"{key:<{width}} {value:>7}")
        if "total_stm" in terms:
            self.write(f"{'side to move':<{width}} {terms['total_stm']:>7} ({pos.side_name})")
        verdict = self.engine.egdb_verdict()
        if verdict:
            self.write(f"Endgame database: {verdict}")

    def _bench(self, tokens: list[str], line: str) -> None:
        import importlib.util

        if len(tokens) > 2:
            raise ProtocolError("bench takes at most a depth: bench [depth]")
        depth: Optional[int] = None
        if len(tokens) == 2:
            if not _ASCII_INT.fullmatch(tokens[1]):
                raise ProtocolError(f"bench: depth must be a whole number, not {_clip(tokens[1], 40)!r}")
            depth = _parse_ascii_int(tokens[1], "bench: depth")
            if not 1 <= depth <= 64:
                raise ProtocolError(f"bench: depth must be 1..64, not {depth}")
        if importlib.util.find_spec(f"{__package__.rpartition('.')[0]}.tools.bench") is None:
            raise ProtocolError("bench unavailable")

        def task(job: Any) -> Any:
            import importlib
            import inspect

            module = importlib.import_module(f"{__package__.rpartition('.')[0]}.tools.bench")
            run = getattr(module, "run_bench", None)
            if run is None:
                self.error("bench unavailable")
                return None
            params = inspect.signature(run).parameters
            kwargs: dict[str, Any] = {}
            if depth is not None:
                kwargs["depth"] = depth
            if "on_position" in params:
                def on_position(index: int, fen: str, nodes: int, seconds: float) -> None:
                    self.info_string(f"bench position {index} {fen} nodes {nodes} time {int(seconds * 1000)}")
                kwargs["on_position"] = on_position
            started = time.monotonic()
            result = run(**kwargs)
            return result, time.monotonic() - started

        def on_finish(outcome: Any) -> None:
            if outcome is not None:
                self._write_bench_result(*outcome)

        def on_error(exc: BaseException) -> None:
            self.error(f"internal: bench: {type(exc).__name__}: {exc}")

        try:
            self.engine.run_task("bench", task, on_error, on_finish)
        except EngineBusyError as exc:
            raise ProtocolError(f"bench: {exc}") from None

    def _write_bench_result(self, result: Any, seconds: float) -> None:
        """bench's summary: ``(nodes, seconds)`` from ``run_bench``, or an object/dict with nodes."""
        if isinstance(result, tuple) and len(result) >= 2:
            nodes, seconds = int(result[0]), float(result[1])
        elif isinstance(result, dict) and "nodes" in result:
            nodes = int(result["nodes"])
        elif hasattr(result, "nodes"):
            nodes = int(result.nodes)
        else:
            self.info_string(f"bench: {result}")
            return
        self.write(f"Total time (ms) : {int(seconds * 1000)}")
        self.write(f"Nodes searched  : {nodes}")
        self.write(f"Nodes/second    : {int(nodes / seconds) if seconds > 0 else 0}")

    def _help(self, tokens: list[str], line: str) -> None:
        for row in HELP_TEXT.splitlines():
            self.write(row)


# ------------------------------------------------------------------------------------------------
# The process: stdin/stdout
# ------------------------------------------------------------------------------------------------
_STDOUT_LOCK = threading.Lock()


def _stdout_writer(line: str) -> None:
    data = (line + "\n").encode("utf-8", "replace")
    with _STDOUT_LOCK:
        out = sys.stdout.buffer
        out.write(data)
        out.flush()


def read_line(stream: Any, limit: int = MAX_LINE_BYTES) -> tuple[Optional[str], int]:
    """One line from a binary stream: (text, 0), (None, 0) at end of input, or ("", n) for a line
    of ``n`` > ``limit`` bytes, which is read to its end and dropped."""
    data = stream.readline(limit + 1)
    if not data:
        return None, 0
    if len(data) > limit and not data.endswith(b"\n"):
        size = len(data)
        while True:
            chunk = stream.readline(1 << 16)
            size += len(chunk)
            if not chunk or chunk.endswith(b"\n"):
                break
        return "", size
    return data.decode("utf-8", "replace"), 0


class _Prepended:
    """A binary reader that yields ``head`` first, then the rest of ``stream`` (Hub hand-over)."""

    def __init__(self, head: bytes, stream: Any) -> None:
        import io

        self._head = io.BytesIO(head)
        self._stream = stream

    def readline(self, limit: int = -1) -> bytes:
        line = self._head.readline(limit)
        if line:
            return line
        return self._stream.readline(limit)

    def read(self, n: int = -1) -> bytes:
        data = self._head.read(n)
        if n is None or n < 0:
            return data + self._stream.read()
        return data if data else self._stream.read(n)

    def read1(self, n: int = -1) -> bytes:
        data = self._head.read(n if n and n > 0 else -1)
        return data if data else self._stream.read1(n)

    def readable(self) -> bool:
        return True

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def _hand_over_to_hub(first: bytes) -> int:
    """The first line was ``hub``: run the Hub front end on the same stdin (first line included)."""
    import importlib
    import io

    try:
        hub = importlib.import_module(f"{__package__}.hub")
    except ModuleNotFoundError:
        _stdout_writer('error message="Hub mode is not available in this version"')
        return EXIT_USAGE
    raw = _Prepended(first, sys.stdin.buffer)
    sys.stdin = io.TextIOWrapper(raw, encoding="utf-8", errors="replace")  # type: ignore[arg-type]
    return int(hub.main([]) or EXIT_OK)


def main(argv: Optional[list[str]] = None) -> int:
    """``uci-checkers [engine]``: the protocol loop on stdin/stdout until quit or end of input."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv:
        if argv[0] in ("-h", "--help"):
            print(HELP_TEXT)
            return EXIT_OK
        print(f"uci-checkers engine: unexpected argument {argv[0]!r} (the engine reads commands on stdin)",
              file=sys.stderr)
        return EXIT_USAGE
    proto = Protocol()
    proto.engine.start_warmup()              # compile in the background while we answer uci
    stdin = sys.stdin.buffer

    first, too_long = read_line(stdin)
    if first is not None and first.strip().lower() == "hub":
        code = _hand_over_to_hub(first.encode("utf-8"))
        _exit(code)

    lines: "CommandQueue" = queue.Queue()
    proto.input_waiting = lambda: not lines.empty()
    done = threading.Event()
    lines.put((first, too_long, time.monotonic()))
    if first is not None:
        threading.Thread(target=read_commands, args=(stdin, lines, proto.abort, done, _exit),
                         name="uci_checkers-stdin", daemon=True).start()
    try:
        run_commands(proto, lines)
    except KeyboardInterrupt:  # Ctrl-C at a terminal: leave quietly
        proto.engine.stop()
    done.set()
    _exit(EXIT_OK)
    return EXIT_OK  # pragma: no cover


CommandQueue = queue.Queue   # of (text or None at the end of input, size of a dropped overlong line, arrival time)


def read_commands(stdin: Any, lines: "CommandQueue", abort: threading.Event, done: threading.Event,
                  exit_now: Callable[[int], None]) -> None:
    """The input thread of a protocol loop: every line of ``stdin`` into ``lines``, stamped on arrival.

    On ``quit`` it sets ``abort`` (blocking waits give up; quit is next in the queue) and, if the
    main thread has not set ``done`` within 2 s (it is stuck, e.g. compiling), calls ``exit_now(0)``.
    """
    while True:
        try:
            text, size = read_line(stdin)
        except (OSError, ValueError):
            text, size = None, 0
        lines.put((text, size, time.monotonic()))
        if text is None:
            return
        if text.split()[:1] and text.split()[0].lower() == "quit":
            abort.set()
            if not done.wait(2.0):
                exit_now(EXIT_OK)
            return


def run_commands(proto: LineProtocol, lines: "CommandQueue") -> None:
    """Execute queued input lines in order until quit, end of input or a closed stdout."""
    while True:
        text, size, received = lines.get()
        if text is None:
            proto.handle("quit")             # end of input behaves as quit
            break
        if size:
            proto.error(f"line too long ({size} bytes; the limit is {MAX_LINE_BYTES}): ignored")
            continue
        if not proto.handle(text, received) or proto.host_gone:
            break


def _exit(code: int) -> None:
    """Flush and leave at once: compile or search threads may still be running (daemon threads);
    a compile child process is killed with its process group."""
    from ..engine.warmup import stop_warmup_children

    stop_warmup_children()
    try:
        if _STDOUT_LOCK.acquire(timeout=1.0):   # a writer stuck on a full pipe must not keep us here
            try:
                sys.stdout.flush()
            finally:
                _STDOUT_LOCK.release()
    except Exception:
        pass
    try:
        sys.stderr.flush()
    except Exception:
        pass
    os._exit(code)


if __name__ == "__main__":  # pragma: no cover
    main()
