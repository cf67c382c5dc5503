"""``uci-checkers gui``: the Starlette application (JSON API, server-sent events, the page) and ``main``.

Every change to a match happens on the event loop: requests change it directly,
and an engine's reply (computed on the engine host's thread) is handed back with
``call_soon_threadsafe``.  Pages follow a match through ``/events`` (server-sent
events: the whole state after every change) and an analysis through
``/analysis`` (the engine's reports, streamed as they come, each tagged with the
``position_id`` of the board it was computed for, as in the state).

API (JSON; a refused request answers ``{"error": sentence, "state": ...}`` and changes nothing):

======================================  =======================================================
``POST /api/matches``                   start a match from a setup (see ``match.parse_setup``)
``GET  /api/matches/{id}``              its state
``POST /api/matches/{id}/step``         ``{"from", "to", "version"}``: one move or one jump
``POST /api/matches/{id}/<control>``    ``undo``, ``pause``, ``resume``, ``resign``, ``restart-engine``
``POST /api/matches/{id}/goto``         analysis: ``{"ply"}`` shows the position after that many moves
``POST /api/matches/{id}/replay``       a new match, same setup and seed (Restart, Replay same seed)
``POST /api/matches/{id}/new-seed``     a new match, same setup, another seed
``GET  /api/matches/{id}/pdn``          the game as PDN
``GET  /api/matches/{id}/events``       server-sent events: the state after every change
``GET  /api/matches/{id}/analysis``     server-sent events: the engine's live analysis (``?multipv=N``)
======================================  =======================================================
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import socket
import sys
import threading
import webbrowser
from collections import OrderedDict
from concurrent.futures import Future
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, AsyncIterator, Callable, Optional

from ..util.exitcodes import EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE
from ..util.commandline import ToolParser

try:
    from starlette.applications import Starlette
    from starlette.middleware import Middleware
    from starlette.middleware.trustedhost import TrustedHostMiddleware
    from starlette.requests import Request
    from starlette.responses import FileResponse, JSONResponse, Response, StreamingResponse
    from starlette.routing import Mount, Route
    from starlette.staticfiles import StaticFiles
except ModuleNotFoundError as missing:       # an install from before the gui: say what to do, no traceback
    print(f"uci-checkers gui: the web server package {missing.name!r} is missing: "
          "reinstall uci_checkers (pip install -e .) to get its dependencies", file=sys.stderr)
    raise SystemExit(EXIT_USAGE) from None     # an input (installation) error, as the tools' convention has it

from ..client import Info
from .host import EngineCommand, EngineFailure, EngineHost
from .match import DEFAULT_SEED, PRACTICE_FEN, SIDE_KEYS, Match, MatchError, StaleRequestError, engine_seed, move_label, parse_setup

STATIC_DIR = Path(__file__).resolve().parent / "static"
MAX_MATCHES = 64                 # matches kept in memory (the oldest is forgotten first)
KEEPALIVE_SECONDS = 15.0
MATE_CP = 10_000


class Gui:
    """The server's state: the matches and the two engine hosts (one plays, one analyses)."""

    def __init__(self, command: EngineCommand, warm_up: bool = True) -> None:
        self.command = command
        self.player = EngineHost(command)
        self.analyst = EngineHost(command)
        self.matches: "OrderedDict[str, Match]" = OrderedDict()
        self._changed: dict[str, asyncio.Event] = {}
        self.loop: Optional[asyncio.AbstractEventLoop] = None
        self.warm_up = warm_up
        self.closing = False                 # set on shutdown: event streams end so the server can stop
        self.rules_ready: Optional[asyncio.Event] = None     # set once the rules kernels are loaded

    # --- matches -------------------------------------------------------------------------------
    def add(self, match: Match) -> Match:
        self.matches[match.id] = match
        while len(self.matches) > MAX_MATCHES:
            old, _ = self.matches.popitem(last=False)
            self._changed.pop(old, None)
        self.advance(match)
        return match

    def new_match(self, setup_data: Any) -> Match:
        return self.add(Match(secrets.token_hex(8), parse_setup(setup_data)))

    def get(self, match_id: str) -> Match:
        try:
            return self.matches[match_id]
        except KeyError:
            raise LookupError("This match is no longer on the server (was it restarted?): "
                              "choose Change setup to start a new one.") from None

    def changed_event(self, match: Match) -> asyncio.Event:
        event = self._changed.get(match.id)
        if event is None:
            event = self._changed[match.id] = asyncio.Event()
        return event

    def notify(self, match: Match) -> None:
        event = self._changed.pop(match.id, None)
        if event is not None:
            event.set()

    # --- the computer ---------------------------------------------------------------------------
    def advance(self, match: Match) -> None:
        """Let the computer move if it is its turn (the casual mover at once, an engine in the background)."""
        while match.needs_computer_move():
            token = match.begin_reply()
            if match.setup.level == "casual":
                match.apply_reply(token, match.casual_move())
                continue
            future = self.player.play(match.game, match.setup.level, engine_seed(match.setup.seed))
            future.add_done_callback(self._in_loop(lambda f, m=match, t=token: self._reply_done(m, t, f)))
            break
        self.notify(match)

    def _in_loop(self, fn: Callable[[Future], None]) -> Callable[[Future], None]:
        loop = self.loop

        def callback(future: Future) -> None:
            if loop is not None and not loop.is_closed():
                try:
                    loop.call_soon_threadsafe(fn, future)
                except RuntimeError:
                    pass                                # the server is shutting down
        return callback

    def _reply_done(self, match: Match, token: int, future: Future) -> None:
        try:
            move = future.result()
        except EngineFailure as exc:
            match.reply_failed(token, str(exc))
        except Exception as exc:                        # a bug must not leave the page waiting forever
            match.reply_failed(token, f"The engine host failed: {type(exc).__name__}: {exc}")
        else:
            match.apply_reply(token, move)
        self.advance(match)

    def end_streams(self) -> None:
        """Shutdown: wake every event stream so that it ends."""
        self.closing = True
        for event in list(self._changed.values()):
            event.set()
        self._changed.clear()

    def close(self) -> None:
        self.player.close()
        self.analyst.close()


# --- helpers ------------------------------------------------------------------------------------------
def _gui(request: Request) -> Gui:
    return request.app.state.gui


async def _ready_gui(request: Request) -> Gui:
    """The server's state once the rules kernels are loaded (only the first requests after start-up wait)."""
    gui = _gui(request)
    if gui.rules_ready is not None and not gui.rules_ready.is_set():
        await gui.rules_ready.wait()
    return gui


async def _body(request: Request) -> dict[str, Any]:
    raw = await request.body()
    if not raw:
        return {}
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        raise MatchError("The request body must be JSON.") from None
    if not isinstance(data, dict):
        raise MatchError("The request body must be a JSON object.")
    return data


def _refused(exc: Exception, match: Optional[Match], status: int) -> JSONResponse:
    payload: dict[str, Any] = {"error": str(exc)}
    if match is not None:
        payload["state"] = match.state()
    return JSONResponse(payload, status_code=status)


def _score_for_red(info: Info, turn: int) -> tuple[str, int]:
    """The score as text from Red's side (``+0.35``, ``#5``, ``#-3``) and as centi-men for the bar."""
    score = info.score if turn == 0 else -info.score  # type: ignore[operator]
    if score.mate is not None:
        cp = MATE_CP if score.mate > 0 else -MATE_CP
    else:
        cp = score.cp or 0
    return str(score), cp


# --- endpoints ---------------------------------------------------------------------------------------
async def index(request: Request) -> Response:
    return FileResponse(STATIC_DIR / "index.html", headers={"Cache-Control": "no-cache"})


async def info(request: Request) -> Response:
    gui = _gui(request)
    return JSONResponse({"engine": gui.player.name, "default_seed": DEFAULT_SEED, "practice_fen": PRACTICE_FEN,
                         "rules_ready": gui.rules_ready is not None and gui.rules_ready.is_set()})


async def create_match(request: Request) -> Response:
    gui = await _ready_gui(request)
    try:
        match = gui.new_match(await _body(request))
    except MatchError as exc:
        return _refused(exc, None, 400)
    return JSONResponse(match.state(), status_code=201)


async def get_match(request: Request) -> Response:
    try:
        match = _gui(request).get(request.path_params["match_id"])
    except LookupError as exc:
        return _refused(exc, None, 404)
    return JSONResponse(match.state())


async def act(request: Request) -> Response:
    """Every request that changes one match: step, undo, pause, resume, resign, restart-engine, goto."""
    gui = await _ready_gui(request)
    action = request.path_params["action"]
    try:
        match = gui.get(request.path_params["match_id"])
    except LookupError as exc:
        return _refused(exc, None, 404)
    try:
        data = await _body(request)
        version = data.get("version")
        if action == "step":
            match.step(data.get("from"), data.get("to"), version)
        elif action == "undo":
            match.undo(version)
        elif action == "pause":
            match.pause(version)
        elif action == "resume":
            match.resume(version)
        elif action == "resign":
            match.resign(version)
        elif action == "goto":
            match.goto(data.get("ply"), version)
        elif action == "restart-engine":
            match.clear_engine_error()
        elif action in ("replay", "new-seed"):
            setup = match.setup.as_dict()
            if action == "new-seed":
                setup["seed"] = f"seed-{secrets.token_hex(3)}"
            return JSONResponse(gui.new_match(setup).state(), status_code=201)
        else:
            return _refused(MatchError(f"Unknown action {action!r}."), match, 404)
    except StaleRequestError as exc:
        return _refused(exc, match, 409)
    except MatchError as exc:
        return _refused(exc, match, 400)
    gui.advance(match)
    return JSONResponse(match.state())


async def pdn(request: Request) -> Response:
    try:
        match = _gui(request).get(request.path_params["match_id"])
    except LookupError as exc:
        return _refused(exc, None, 404)
    return Response(match.pdn(), media_type="application/x-pdn; charset=utf-8",
                    headers={"Content-Disposition": f'attachment; filename="checkers-{match.id}.pdn"'})


def _sse(data: Any, event: Optional[str] = None) -> str:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(data, ensure_ascii=False)}\n\n"


async def events(request: Request) -> Response:
    gui = _gui(request)
    try:
        match = gui.get(request.path_params["match_id"])
    except LookupError as exc:
        return _refused(exc, None, 404)

    async def stream() -> AsyncIterator[str]:
        sent = None
        while not gui.closing and not await request.is_disconnected():
            if match.version != sent:
                sent = match.version
                yield _sse(match.state())
            try:
                await asyncio.wait_for(gui.changed_event(match).wait(), KEEPALIVE_SECONDS)
            except asyncio.TimeoutError:
                yield ": keep-alive\n\n"

    return StreamingResponse(stream(), media_type="text/event-stream", headers={"Cache-Control": "no-cache"})


async def analysis(request: Request) -> Response:
    """The engine's analysis of the match's current position, restarted whenever the position changes."""
    gui = _gui(request)
    try:
        match = gui.get(request.path_params["match_id"])
    except LookupError as exc:
        return _refused(exc, None, 404)
    try:
        multipv = max(1, min(8, int(request.query_params.get("multipv", "1"))))
    except ValueError:
        multipv = 1
    loop = asyncio.get_running_loop()

    async def stream() -> AsyncIterator[str]:
        reports: asyncio.Queue = asyncio.Queue()
        analysed = None
        try:
            while not gui.closing and not await request.is_disconnected():
                if match.version != analysed:
                    analysed = match.version
                    gui.analyst.stop_analysis()
                    game = match.game
                    turn = game.position.turn
                    position_id = match.position_id(analysed)
                    yield _sse({"version": analysed, "position_id": position_id, "fen": game.position.fen()},
                               "position")
                    if not game.status().is_over:
                        def on_info(report: Info, v: int = analysed, t: int = turn, pos=game.position,
                                    pid: str = position_id) -> None:
                            if report.score is None:
                                return
                            text, cp = _score_for_red(report, t)
                            line, p = [], pos
                            for mv in report.pv:
                                line.append(move_label(p.turn, mv).split(" ", 1)[1])
                                p = p.play(mv)
                            payload = {"version": v, "position_id": pid, "depth": report.depth, "multipv": report.multipv,
                                       "score": text, "red_cp": cp, "pv": line, "nodes": report.nodes,
                                       "nps": report.nps, "time_ms": report.time_ms,
                                       "side": SIDE_KEYS[t]}
                            try:
                                loop.call_soon_threadsafe(reports.put_nowait, ("info", payload))
                            except RuntimeError:
                                pass
                        future = gui.analyst.analyse(game, multipv, on_info)
                        future.add_done_callback(gui._in_loop(
                            lambda f, v=analysed, pid=position_id: reports.put_nowait(
                                ("done", {"version": v, "position_id": pid, "error": _error(f)}))))
                waiter = asyncio.ensure_future(gui.changed_event(match).wait())
                getter = asyncio.ensure_future(reports.get())
                done, _ = await asyncio.wait({waiter, getter}, timeout=KEEPALIVE_SECONDS,
                                             return_when=asyncio.FIRST_COMPLETED)
                waiter.cancel()
                if getter in done:
                    kind, payload = getter.result()
                    if payload.get("version") == analysed:
                        yield _sse(payload, kind)
                else:
                    getter.cancel()
                    if not done:
                        yield ": keep-alive\n\n"
        finally:
            gui.analyst.stop_analysis()

    return StreamingResponse(stream(), media_type="text/event-stream", headers={"Cache-Control": "no-cache"})


def _error(future: Future) -> Optional[str]:
    exc = future.exception()
    if exc is None:
        return None
    return str(exc) if isinstance(exc, EngineFailure) else f"{type(exc).__name__}: {exc}"


def _report_warm_up(future: Future) -> None:
    exc = future.exception()
    if exc is not None:
        print(f"uci-checkers gui: {exc} (Easy, Normal, Hard and analysis need it; casual and two-player "
              "games work without)", file=sys.stderr, flush=True)


def _warm_rules_core() -> None:
    from ..rules.position import Position

    Position.start().legal_moves()


def create_app(command: Optional[EngineCommand] = None, warm_up: bool = True) -> Starlette:
    """The application; ``command`` names the engine (default: this package's)."""
    gui = Gui(command or EngineCommand(), warm_up)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        gui.loop = asyncio.get_running_loop()
        gui.rules_ready = asyncio.Event()
        loop = gui.loop

        def warm() -> None:
            # the rules kernels first (loaded, or compiled on the very first start) without blocking the
            # server, then the engine process, which finds those kernels in the shared compile cache
            try:
                _warm_rules_core()
            finally:
                loop.call_soon_threadsafe(gui.rules_ready.set)
            if gui.warm_up:
                gui.player.warm_up().add_done_callback(_report_warm_up)

        threading.Thread(target=warm, name="gui-warm-up", daemon=True).start()
        try:
            yield
        finally:
            gui.close()

    app = Starlette(routes=[
        Route("/", index),
        Route("/api/info", info),
        Route("/api/matches", create_match, methods=["POST"]),
        Route("/api/matches/{match_id}", get_match),
        Route("/api/matches/{match_id}/pdn", pdn),
        Route("/api/matches/{match_id}/events", events),
        Route("/api/matches/{match_id}/analysis", analysis),
        Route("/api/matches/{match_id}/{action}", act, methods=["POST"]),
        Mount("/static", StaticFiles(directory=STATIC_DIR), name="static"),
    ], lifespan=lifespan,
        # only pages served from this machine's own address (a rebinding DNS name gets 400)
        middleware=[Middleware(TrustedHostMiddleware, allowed_hosts=["127.0.0.1", "localhost"])])
    app.state.gui = gui
    return app


# --- command line -------------------------------------------------------------------------------------
def _open_browser(url: str) -> None:
    """The desktop's browser; on a Linux machine without a display, only the printed address."""
    headless = sys.platform.startswith("linux") and not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))
    if headless or not webbrowser.open(url):
        print(f"uci-checkers gui: no browser to open here: open {url} yourself", flush=True)


def build_parser() -> argparse.ArgumentParser:
    p = ToolParser(prog="uci-checkers gui", description="Play checkers in a browser against an "
                   "engine or a friend, or analyse a game (served on 127.0.0.1).")
    p.add_argument("--port", type=int, default=0, help="port to serve on (default: a free one)")
    p.add_argument("--no-browser", action="store_true", help="do not open a browser; just print the address")
    p.add_argument("--engine", nargs="+", default=[], metavar="KEY=VALUE",
                   help='the opponent: cmd="COMMAND" [dir=DIR] [option.NAME=VALUE ...] (default: this package)')
    return p


def main(argv: Optional[list[str]] = None) -> int:
    try:
        return _serve(build_parser().parse_args(argv))
    except KeyboardInterrupt:                # Ctrl-C before the server took over its signals
        return EXIT_INTERRUPTED


def _serve(args: argparse.Namespace) -> int:
    try:
        command = EngineCommand.parse(args.engine)
    except ValueError as exc:
        print(f"uci-checkers gui: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if not 0 <= args.port <= 65535:
        print(f"uci-checkers gui: --port must be 0..65535, not {args.port}", file=sys.stderr)
        return EXIT_USAGE
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.bind(("127.0.0.1", args.port))
    except OSError as exc:
        sock.close()
        print(f"uci-checkers gui: cannot serve on 127.0.0.1:{args.port}: {exc.strerror}", file=sys.stderr)
        return EXIT_USAGE
    sock.listen(64)
    port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}/"

    import uvicorn

    app = create_app(command)
    config = uvicorn.Config(app, log_level="warning", lifespan="on",
                            timeout_graceful_shutdown=2)     # event streams never end by themselves
    server = uvicorn.Server(config)
    print(f"uci-checkers gui: serving on {url} (Ctrl-C to stop)", flush=True)
    if not args.no_browser:
        threading.Timer(0.5, _open_browser, args=(url,)).start()
    interrupted = threading.Event()
    original = server.handle_exit

    def handle_exit(sig: int, frame: Any) -> None:
        interrupted.set()
        app.state.gui.end_streams()
        original(sig, frame)

    server.handle_exit = handle_exit  # type: ignore[method-assign]
    try:
        server.run(sockets=[sock])
    except KeyboardInterrupt:
        interrupted.set()
    finally:
        sock.close()
    return EXIT_INTERRUPTED if interrupted.is_set() else EXIT_OK
