"""Hub protocol (version 2, as spoken by Scan and driven by Hub GUIs and pydraughts) for English checkers.

``uci-checkers hub`` runs it on stdin/stdout; the normal engine also hands over
to it when the first line it receives is ``hub`` (:func:`main` reads
``sys.stdin`` afresh, first line included).  :class:`HubSession` is the
front end itself: feed it lines, it calls the engine facade
(:class:`uci_checkers.engine.Engine`) and writes reply lines; it never blocks on
a search, so ``ping`` is answered with ``pong`` at once, also mid-search.

Commands understood: ``hub`` (-> ``id``, ``param`` lines, ``wait``),
``set-param name=.. value=..``, ``init`` (-> ``ready``), ``pos pos=<33 chars>
[moves="..."]`` and ``pos start [moves=...]``, ``level depth=|nodes=|move-time=|
[moves=] time= [inc=]|infinite``, ``go think|ponder|analyze``, ``ping``,
``ponder-hit``, ``stop``, ``new-game``, ``quit``.  Replies: ``info depth=..
score=<men> nodes=.. time=<s> nps=<Mn/s> pv="..."``, ``done move=.. [ponder=..]``,
``error message="..."``.  Unknown commands and arguments are ignored, as Hub asks (both sides
"should ignore commands and arguments that they don't understand"): nothing is written on
stdout for them, and each distinct one is noted once on stderr (``hub: ignored unknown command
'foo'``; at most 50 notes per session; pydraughts reads stderr with stdout and only logs such a
line as unexpected).  A command that is understood but cannot be executed (a bad ``pos``, a bad
number) is answered with ``error message=...``.

Positions and moves
-------------------
A position is the side to move (``W``/``B``) then 32 characters for squares 1-32
(``w``/``b`` men, ``W``/``B`` kings, ``e`` empty).  Moves use standard numbers;
a capture lists its start, its end and the captured squares (``15x31x19x27``:
from 15 to 31, capturing 19 and 27), in any order on input; on output they
come in the order they are jumped.

Orientation (the ``orientation`` param): pydraughts 0.6.x sends English
positions rotated and colour-swapped (character 0 ``W`` = *Black* to move,
character i = square 33-i, ``w``/``W`` = Black pieces) while its moves use the
normal numbers.  ``normal`` and ``pydraughts`` force a reading; ``auto`` (the
default) takes the reading in which the ``moves`` list is legal when only one
is; when both are (for instance no moves at all) it keeps the reading detected
earlier in the session, else takes the reading that puts Black to move in the
initial set-up (the game's real first move), else ``normal``.

Levels: ``time``/``inc`` are the engine's own clock in seconds; Hub adds the
increment before each move, so the clock given to the time manager is
``time + inc``.  A level lasts for one search (it resets at ``pos`` and ``go``);
without one, ``go think``/``go ponder`` use one second per move and ``go
analyze`` searches until ``stop``.  ``go ponder`` searches until ``ponder-hit``
(then the level's time applies) or ``stop``.  A ``go`` while a search runs
replaces it: the old search is stopped and, unless the GUI had sent ``stop``
for it, its ``done`` is not sent.

Scores are in men from the side to move's point of view; a forced win in n
plies is ``100 - n/100`` (``99.95``: win in 5 plies), a loss ``-(100 - n/100)``.
"""
from __future__ import annotations

import io
import re
import sys
import threading
from typing import Any, Callable, Iterable, Optional

from ..rules.notation import NotationError
from ..util.exitcodes import EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE

__all__ = ["HubSession", "HubError", "parse_hub_line", "format_hub_value", "parse_hub_position",
           "format_hub_position", "parse_hub_move", "format_hub_move", "run_hub", "main"]

ORIENTATIONS = ("auto", "normal", "pydraughts")
VARIANT_NAMES = ("english", "checkers", "american", "english-draughts", "english_draughts")
DEFAULT_MOVE_TIME_S = 1.0
INIT_TIMEOUT_S = 300.0          # init waits this long at most for the kernels (a first compile takes seconds)
STOP_WAIT_S = 10.0              # a stopped search hands in its move within milliseconds; this is the bound
_HIDDEN_OPTIONS = {"uci_analysemode", "clear hash"}   # Hub has go analyze and new-game for these
_HUB_INT = re.compile(r"[+-]?[0-9]+")                  # ASCII digits only
_HUB_FLOAT = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")   # no nan/inf


class HubError(ValueError):
    """A Hub command that cannot be executed as written (answered with ``error message=...``)."""


# The arguments and flags each command understands; anything else is ignored and noted on stderr.
KNOWN_ARGUMENTS: dict[str, frozenset[str]] = {
    "hub": frozenset(), "init": frozenset(), "ping": frozenset(), "ponder-hit": frozenset(),
    "stop": frozenset(), "new-game": frozenset(), "quit": frozenset(),
    "set-param": frozenset({"name", "value"}),
    "pos": frozenset({"pos", "moves", "start"}),
    "level": frozenset({"depth", "nodes", "moves", "move-time", "time", "inc", "infinite"}),
    "go": frozenset({"think", "ponder", "analyze", "analyse"}),
}
MAX_NOTES = 50                  # distinct unknown commands/arguments noted on stderr, then silence


# --------------------------------------------------------------------------------------------------
# Syntax
# --------------------------------------------------------------------------------------------------
_ARG = re.compile(r'\s*([^\s=]+)(?:=(?:"([^"]*)"|(\S*)))?')


def parse_hub_line(line: str) -> tuple[str, dict[str, str], list[str]]:
    """``command``, its ``name=value`` arguments (quotes removed) and its bare flags, in order."""
    text = line.strip()
    if not text:
        return "", {}, []
    parts = text.split(None, 1)
    command = parts[0]
    args: dict[str, str] = {}
    flags: list[str] = []
    rest = parts[1] if len(parts) > 1 else ""
    pos = 0
    while pos < len(rest):
        m = _ARG.match(rest, pos)
        if not m or m.end() == pos:
            break
        name = m.group(1)
        if m.group(2) is not None:
            args[name] = m.group(2)
        elif m.group(3) is not None and "=" in m.group(0):
            args[name] = m.group(3)
        else:
            flags.append(name)
        pos = m.end()
    return command, args, flags


def format_hub_value(value: Any) -> str:
    """A value as Hub writes it: double-quoted when empty or holding a space, '=' or quote."""
    text = str(value).replace('"', "'")
    return f'"{text}"' if (not text or any(c in text for c in ' =\t')) else text


def hub_line(command: str, *pairs: tuple[str, Any]) -> str:
    return " ".join([command] + [f"{k}={format_hub_value(v)}" for k, v in pairs])


# --------------------------------------------------------------------------------------------------
# Positions and moves
# --------------------------------------------------------------------------------------------------
def parse_hub_position(text: str, orientation: str = "normal") -> Any:
    """The :class:`Position` a 33-character Hub position string describes in ``orientation``."""
    from ..rules.position import Position

    s = text.strip()
    if s.lower() == "start":
        return Position.start()
    if len(s) != 33:
        raise HubError(f"position must be 33 characters (side to move + squares 1-32), got {len(s)}")
    side = s[0]
    if side not in "WB":
        raise HubError(f"position must start with W or B, not {side!r}")
    flipped = orientation == "pydraughts"
    black: list[str] = []
    white: list[str] = []
    for i, c in enumerate(s[1:], start=1):
        if c in "eE.":
            continue
        if c not in "wbWB":
            raise HubError(f"unknown character {c!r} at square {i} of the position")
        square = 33 - i if flipped else i
        is_white = (c in "wW") != flipped
        item = ("K" if c.isupper() else "") + str(square)
        (white if is_white else black).append(item)
    white_to_move = (side == "W") != flipped
    fen = f"{'W' if white_to_move else 'B'}:W{','.join(white)}:B{','.join(black)}"
    try:
        return Position.from_fen(fen)
    except NotationError as exc:
        raise HubError(f"impossible position: {exc}") from None


def format_hub_position(pos: Any, orientation: str = "normal") -> str:
    """The Hub position string of ``pos`` (``normal`` or pydraughts' ``pydraughts`` orientation)."""
    flipped = orientation == "pydraughts"
    out = []
    for i in range(1, 33):
        piece = pos.piece_at(33 - i if flipped else i)
        if piece is None:
            out.append("e")
        elif flipped:
            out.append(piece.translate(_SWAP_COLOURS))
        else:
            out.append(piece)
    white_to_move = pos.turn == 1
    return ("W" if white_to_move != flipped else "B") + "".join(out)


_SWAP_COLOURS = str.maketrans("bwBW", "wbWB")


def _square_rc(square: int) -> tuple[int, int]:
    row = (square - 1) // 4
    col = 2 * ((square - 1) % 4) + (1 if row % 2 == 0 else 0)
    return row, col


def _rc_square(row: int, col: int) -> int:
    return row * 4 + col // 2 + 1


def jumped_squares(move: Any) -> list[int]:
    """The squares a capture jumps, in the order it jumps them."""
    out = []
    for a, b in zip(move.squares, move.squares[1:]):
        (r1, c1), (r2, c2) = _square_rc(a), _square_rc(b)
        out.append(_rc_square((r1 + r2) // 2, (c1 + c2) // 2))
    if sorted(out) != sorted(move.captured_squares):   # never expected; the kernel's word is the truth
        return list(move.captured_squares)
    return out


def format_hub_move(move: Any) -> str:
    """``11-15`` or ``from x to x captured ...`` (captured squares in jump order)."""
    if not move.is_capture:
        return f"{move.squares[0]}-{move.squares[-1]}"
    return "x".join(str(s) for s in [move.squares[0], move.squares[-1]] + jumped_squares(move))


def parse_hub_move(pos: Any, text: str) -> Any:
    """The legal move of ``pos`` that Hub move text names (captured squares in any order).

    A capture whose squares do not read as Hub's from/to/captured list is tried as
    a landing path (``15x24x31``) before giving up.
    """
    t = text.strip()
    if not re.fullmatch(r"\d+([-x]\d+)+", t):
        raise HubError(f"cannot read move {t[:40]!r}")
    squares = [int(x) for x in re.split(r"[-x]", t)]
    legal = pos.legal_moves()
    if "x" in t and len(squares) >= 3:
        want = sorted(squares[2:])
        for m in legal:
            if m.is_capture and m.squares[0] == squares[0] and m.squares[-1] == squares[1] \
                    and sorted(m.captured_squares) == want:
                return m
    if "x" not in t and len(squares) == 2:
        for m in legal:
            if not m.is_capture and m.squares == (squares[0], squares[1]):
                return m
    try:
        return pos.parse_move(t)
    except NotationError as exc:
        raise HubError(f"illegal move {t!r} in {pos.fen()}: {exc}") from None


def _play_hub_moves(start: Any, moves: list[str]) -> list[Any]:
    pos = start
    out = []
    for i, text in enumerate(moves):
        try:
            mv = parse_hub_move(pos, text)
        except HubError as exc:
            raise HubError(f"move {i + 1} of moves: {exc}") from None
        out.append(mv)
        pos = pos.play(mv)
    return out


# --------------------------------------------------------------------------------------------------
# The session
# --------------------------------------------------------------------------------------------------
def _param_name(option_name: str) -> str:
    return "-".join(option_name.lower().split())


class HubSession:
    """One Hub conversation: :meth:`handle` each input line; replies go through ``write`` (one line each).

    ``write`` calls are serialised by a lock (the search worker writes ``info`` and ``done``).
    """

    def __init__(self, write: Callable[[str], None], engine: Any = None, orientation: str = "auto",
                 log: Optional[Callable[[str], None]] = None) -> None:
        if engine is None:
            from ..engine.facade import Engine

            engine = Engine()
        self.engine = engine
        self._raw_write = write
        self._log = log if log is not None else _stderr_note
        self._noted: set[str] = set()
        self._write_lock = threading.Lock()
        self.orientation = orientation
        self.detected: Optional[str] = None    # orientation seen in an unambiguous pos of this session
        self.level: dict[str, Any] = {}
        self._search_id = 0
        self._stopped: set[int] = set()
        self._discarded: set[int] = set()
        self._analyse_restore: Optional[bool] = None
        self._params = self._build_params()
        self.engine.start_warmup()

    # --- output --------------------------------------------------------------------------------
    def write(self, line: str) -> None:
        with self._write_lock:
            self._raw_write(line)

    def error(self, message: str) -> None:
        self.write(hub_line("error", ("message", message[:300])))

    def note_ignored(self, what: str) -> None:
        """Note on stderr, once per distinct ``what``, input that Hub says to ignore (never stdout)."""
        if what in self._noted or len(self._noted) > MAX_NOTES:
            return
        self._noted.add(what)
        if len(self._noted) > MAX_NOTES:
            self._log("hub: further unknown commands and arguments are ignored without a note")
        else:
            self._log(f"hub: ignored {what} (Hub ignores what it does not understand)")

    # --- params --------------------------------------------------------------------------------
    def _build_params(self) -> dict[str, Any]:
        """Hub param name -> facade OptionSpec, for the options that make sense under Hub."""
        return {_param_name(s.name): s for s in self.engine.option_specs()
                if s.type != "button" and s.name.lower() not in _HIDDEN_OPTIONS}

    def _param_lines(self) -> list[str]:
        lines = [hub_line("param", ("name", "variant"), ("value", "english"), ("type", "enum"),
                          ("values", "english")),
                 hub_line("param", ("name", "orientation"), ("value", self.orientation), ("type", "enum"),
                          ("values", " ".join(ORIENTATIONS)))]
        for name, spec in self._params.items():
            value = self.engine.get_option(spec.name)
            if spec.type == "spin":
                lines.append(hub_line("param", ("name", name), ("value", value), ("type", "int"),
                                      ("min", spec.min), ("max", spec.max)))
            elif spec.type == "check":
                lines.append(hub_line("param", ("name", name), ("value", "true" if value else "false"),
                                      ("type", "bool")))
            elif spec.type == "combo":
                lines.append(hub_line("param", ("name", name), ("value", value), ("type", "enum"),
                                      ("values", " ".join(spec.vars))))
            else:
                lines.append(hub_line("param", ("name", name), ("value", value or ""), ("type", "string")))
        return lines

    # --- dispatch ------------------------------------------------------------------------------
    def handle(self, line: str) -> bool:
        """Process one input line; False once the session should end (``quit``)."""
        command, args, flags = parse_hub_line(line)
        if not command:
            return True
        known = KNOWN_ARGUMENTS.get(command)
        handler = getattr(self, "_cmd_" + command.replace("-", "_"), None) if known is not None else None
        if handler is None:
            self.note_ignored(f"unknown command {command[:60]!r}")   # Hub: ignore what is not understood
            return True
        for name in list(args) + flags:
            if name not in known:
                self.note_ignored(f"unknown argument {name[:60]!r} of {command}")
        try:
            return handler(args, flags) is not False
        except (HubError, NotationError, ValueError) as exc:
            self.error(str(exc))
        except Exception as exc:  # never let one command kill the session
            self.error(f"internal error: {type(exc).__name__}: {exc}")
        return True

    def _cmd_hub(self, args: dict, flags: list) -> None:
        from .. import __version__

        self.write(hub_line("id", ("name", self.engine.name), ("version", __version__),
                            ("author", self.engine.author)))
        for line in self._param_lines():
            self.write(line)
        self.write("wait")

    def _cmd_set_param(self, args: dict, flags: list) -> None:
        name = args.get("name")
        if name is None:
            raise HubError("set-param needs name=...")
        value = args.get("value", "")
        key = name.lower()
        if key == "variant":
            if value.strip().lower() not in VARIANT_NAMES:
                raise HubError(f"variant {value!r} is not supported: this engine plays English checkers only")
            return
        if key == "orientation":
            if value.strip().lower() not in ORIENTATIONS:
                raise HubError(f"orientation must be one of {', '.join(ORIENTATIONS)}, not {value!r}")
            self.orientation = value.strip().lower()
            self.detected = None
            return
        spec = self._params.get(_param_name(name))
        if spec is None:
            raise HubError(f"unknown param {name!r}")
        self.engine.set_option(spec.name, value)

    def _cmd_init(self, args: dict, flags: list) -> None:
        if not self.engine.ensure_ready(timeout=INIT_TIMEOUT_S):
            self.error(f"the kernels did not load within {INIT_TIMEOUT_S:.0f} s")
            return
        if getattr(self.engine, "warmup_error", None) is not None:
            self.error(f"engine failed to start: {self.engine.warmup_error!r}")
        self.write("ready")

    def _cmd_ping(self, args: dict, flags: list) -> None:
        self.write("pong")

    def _cmd_new_game(self, args: dict, flags: list) -> None:
        if self.engine.searching:
            self._stop_current(discard=False)
        self.engine.new_game()

    def _cmd_quit(self, args: dict, flags: list) -> bool:
        self.engine.quit()
        return False

    def _cmd_stop(self, args: dict, flags: list) -> None:
        if self.engine.searching:
            self._stopped.add(self._search_id)
            self.engine.stop()

    def _cmd_ponder_hit(self, args: dict, flags: list) -> None:
        self.engine.ponderhit()

    # --- pos ---------------------------------------------------------------------------------
    def _cmd_pos(self, args: dict, flags: list) -> None:
        self.level = {}
        text = args.get("pos")
        if text is None:
            if "start" in flags:
                text = "start"
            else:
                raise HubError("pos needs pos=<position> or start")
        moves = args.get("moves", "").split()
        start, played = self._read_position(text, moves)
        self.engine.set_position(start, [m.text() for m in played])

    def _read_position(self, text: str, moves: list[str]) -> tuple[Any, list[Any]]:
        if text.strip().lower() == "start":
            start = parse_hub_position("start")
            return start, _play_hub_moves(start, moves)
        if self.orientation != "auto":
            start = parse_hub_position(text, self.orientation)
            return start, _play_hub_moves(start, moves)
        readings: dict[str, tuple[Any, list[Any]]] = {}
        errors: dict[str, str] = {}
        for orient in ("normal", "pydraughts"):
            try:
                start = parse_hub_position(text, orient)
                readings[orient] = (start, _play_hub_moves(start, moves))
            except HubError as exc:
                errors[orient] = str(exc)
        if not readings:
            if errors["normal"] == errors["pydraughts"]:
                raise HubError(errors["normal"])
            raise HubError(f"{errors['normal']} (and read as pydraughts' orientation: {errors['pydraughts']})")
        if len(readings) == 1:
            orient = next(iter(readings))
            if moves:
                self.detected = orient
            return readings[orient]
        if self.detected in readings:
            return readings[self.detected]
        from ..rules.position import Position

        initial = Position.start()
        for orient, (start, _) in readings.items():
            if start == initial:
                return readings[orient]
        return readings["normal"]

    # --- level and go --------------------------------------------------------------------------
    def _cmd_level(self, args: dict, flags: list) -> None:
        level: dict[str, Any] = {}

        def number(name: str, kind: type) -> Any:
            text = args[name].strip()
            try:
                if kind is int:
                    if not _HUB_INT.fullmatch(text):
                        raise ValueError(text)
                    # any length is accepted: go parameters are clamped (int() of 4,300+ digits raises)
                    value: Any = int(text) if len(text) <= 30 else float("inf")
                else:
                    if not _HUB_FLOAT.fullmatch(text):
                        raise ValueError(text)
                    value = float(text)          # huge values become inf, clamped below
            except ValueError:
                raise HubError(f"level {name} must be a {'whole ' if kind is int else ''}number, "
                               f"not {args[name][:40]!r}") from None
            if value < 0:
                raise HubError(f"level {name} must not be negative")
            return value

        if "infinite" in flags or "infinite" in args:
            level["infinite"] = True
        for name, kind in (("depth", int), ("nodes", int), ("moves", int), ("move-time", float),
                           ("time", float), ("inc", float)):
            if name in args:
                level[name] = number(name, kind)
        if not level:
            raise HubError("level needs depth=, nodes=, move-time=, time= [inc=] [moves=] or infinite")
        self.level = level

    def _go_params(self, mode: str) -> Any:
        from ..engine.timeman import GoParams, clamp_go_number

        level, self.level = self.level, {}
        params = GoParams(ponder=(mode == "ponder"))
        if level.get("infinite"):
            params.infinite = True
        # every number clamped into the engine's bounds here, so no deadline or node limit overflows
        if "depth" in level:
            params.depth = clamp_go_number("depth", level["depth"])
        if "nodes" in level:
            params.nodes = clamp_go_number("nodes", level["nodes"])
        if "move-time" in level:
            params.movetime = clamp_go_number("movetime", max(1.0, level["move-time"] * 1000))
        if "time" in level:
            inc = level.get("inc", 0.0)
            clock = clamp_go_number("btime", (level["time"] + inc) * 1000)
            inc_ms = clamp_go_number("binc", inc * 1000)
            if self.engine.game.position.turn == 0:
                params.btime, params.binc = clock, inc_ms
            else:
                params.wtime, params.winc = clock, inc_ms
            if level.get("moves"):
                params.movestogo = clamp_go_number("movestogo", level["moves"])
        timed = any(getattr(params, k) is not None for k in ("depth", "nodes", "movetime", "btime", "wtime"))
        if not timed and not params.infinite:
            if mode == "analyze":
                params.infinite = True
            else:
                params.movetime = int(DEFAULT_MOVE_TIME_S * 1000)
        return params

    def _stop_current(self, discard: bool) -> None:
        """Stop the running search and wait for it (its done is written unless discarded)."""
        sid = self._search_id
        if discard and sid not in self._stopped:
            self._discarded.add(sid)
        self._stopped.add(sid)
        self.engine.stop()
        # a search still waiting for the kernels answers with a fallback move at once
        if not self.engine.wait_stopped() or not self.engine.wait(STOP_WAIT_S):
            raise HubError("the previous search did not stop")

    def _cmd_go(self, args: dict, flags: list) -> None:
        mode = next((f for f in flags if f in ("think", "ponder", "analyze", "analyse")), None)
        if mode is None:
            mode = next((a for a in args if a in ("think", "ponder", "analyze", "analyse")), "think")
        mode = "analyze" if mode == "analyse" else mode
        if self.engine.searching:
            self._stop_current(discard=True)
        params = self._go_params(mode)
        self._set_analyse_mode(mode == "analyze")
        if not self.engine.game.position.has_legal_move():
            raise HubError("no legal move in this position: the game is over")
        self._search_id += 1
        sid = self._search_id

        def on_info(info: Any) -> None:
            if sid in self._discarded or getattr(info, "multipv", 1) != 1:
                return
            self.write(self._format_info(info))

        def on_done(result: Any) -> None:
            if sid in self._discarded:
                return
            best = getattr(result, "best", None)
            if best is None:
                self.error("no legal move")
                return
            pairs: list[tuple[str, Any]] = [("move", format_hub_move(best))]
            ponder = getattr(result, "ponder", None)
            if ponder is not None:
                pairs.append(("ponder", format_hub_move(ponder)))
            self.write(hub_line("done", *pairs))

        def on_message(text: str) -> None:
            if text.startswith("book ") and not text.startswith("book seed"):
                return          # a book move's note: Hub has no free text but errors; its info line follows
            self.error(text)

        self.engine.go(params, on_info, on_done, None, on_message)

    def _set_analyse_mode(self, on: bool) -> None:
        try:
            self.engine.set_option("UCI_AnalyseMode", "true" if on else "false")
        except (ValueError, KeyError):
            pass

    @staticmethod
    def _format_info(info: Any) -> str:
        pairs: list[tuple[str, Any]] = [("depth", int(info.depth))]
        seldepth = getattr(info, "seldepth", None)
        if seldepth:
            pairs.append(("seldepth", int(seldepth)))
        mate = getattr(info, "mate", None)
        if mate is not None:
            plies = 2 * mate - 1 if mate > 0 else -2 * mate
            men = 100.0 - plies / 100.0
            score = men if mate > 0 else -men
        else:
            score = int(info.score) / 100.0
        pairs.append(("score", f"{score:.2f}"))
        pairs.append(("nodes", int(info.nodes)))
        time_ms = int(getattr(info, "time_ms", 0) or 0)
        pairs.append(("time", f"{time_ms / 1000:.3f}"))
        nps = int(getattr(info, "nps", 0) or 0)
        pairs.append(("nps", f"{nps / 1e6:.3f}"))
        pv = [format_hub_move(m) for m in (getattr(info, "pv", None) or [])]
        if pv:
            pairs.append(("pv", " ".join(pv)))
        return hub_line("info", *pairs)

    def close(self) -> None:
        """End of input: stop any search and wait briefly for the worker."""
        self.engine.quit()


# --------------------------------------------------------------------------------------------------
# Running it
# --------------------------------------------------------------------------------------------------
def run_hub(lines: Iterable[str], write: Callable[[str], None], engine: Any = None,
            orientation: str = "auto") -> int:
    """Run a Hub session over ``lines`` (the first may be ``hub``); returns the exit status (``EXIT_OK``)."""
    session = HubSession(write, engine, orientation)
    try:
        for line in lines:
            if not session.handle(line):
                return EXIT_OK
    finally:
        session.close()
    return EXIT_OK


_STDOUT_LOCK = threading.Lock()
HUB_HELP = """\
usage: uci-checkers hub [--orientation auto|normal|pydraughts]

Speaks the Hub protocol (version 2, Scan's) on stdin/stdout, for Hub GUIs and pydraughts.
  --orientation  how position strings are read: normal (square 1 first), pydraughts
                 (pydraughts' English board), or auto (the default: whichever reading is legal)"""


def _stderr_note(line: str) -> None:
    try:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()
    except (ValueError, OSError):
        pass


def _stdout_write(line: str) -> None:
    try:
        with _STDOUT_LOCK:
            sys.stdout.write(line + "\n")
            sys.stdout.flush()
    except (BrokenPipeError, ValueError, OSError):
        pass


def _stdin_lines() -> Iterable[str]:
    stream = sys.stdin
    buffer = getattr(stream, "buffer", None)
    if buffer is not None:   # bytes in, undecodable bytes replaced rather than fatal
        stream = io.TextIOWrapper(buffer, encoding="utf-8", errors="replace")
    while True:
        try:
            line = stream.readline()
        except (OSError, ValueError):
            return
        if not line:
            return
        yield line


def main(argv: Optional[list[str]] = None) -> int:
    """``uci-checkers hub [--orientation auto|normal|pydraughts]``: the Hub protocol on stdin/stdout."""
    args = list(argv or [])
    orientation = "auto"
    while args:
        a = args.pop(0)
        if a in ("-h", "--help"):
            print(HUB_HELP)
            return EXIT_OK
        if a == "--orientation" and args:
            orientation = args.pop(0)
        elif a.startswith("--orientation="):
            orientation = a.split("=", 1)[1]
        elif a == "hub":      # clients append 'hub' themselves: 'uci-checkers hub hub' is fine
            continue
        else:
            print(f"uci-checkers hub: unexpected argument {a!r}", file=sys.stderr)
            return EXIT_USAGE
    if orientation not in ORIENTATIONS:
        print(f"uci-checkers hub: orientation must be one of {', '.join(ORIENTATIONS)}", file=sys.stderr)
        return EXIT_USAGE
    from ..engine.warmup import stop_warmup_children

    try:
        return run_hub(_stdin_lines(), _stdout_write, None, orientation)
    except KeyboardInterrupt:                # Ctrl-C at a terminal: leave quietly
        return EXIT_INTERRUPTED
    finally:
        stop_warmup_children()
