"""One match as the page sees it: its setup, whole turns made jump by jump, undo, pause, resign, the result.

The rules come only from :mod:`uci_checkers.rules.position`: a jump is accepted when some
legal move of the position starts with the path made so far, and a turn ends when
that path *is* a legal move (a legal move is never the start of another one, since
a capture that can go on must go on and crowning ends the move).  The page gets, in
:meth:`Match.state`, the pieces it may ring and the squares it may mark; it decides
nothing itself.

The first mover is called Red and the second White, as on the seed page (Red is
Black in PDN and in the engine protocol).

The *casual* computer is a uniformly random mover: one ``random.Random`` seeded
with the replay seed draws an index into the legal move list (sorted by squares,
so the order is fixed) for every computer turn.  Undo restores the generator's
state together with the position, so the same move gets the same reply.
"""
from __future__ import annotations

import hashlib
import random
from collections import deque
from dataclasses import dataclass
from typing import Any, Optional

from ..rules.bitboard import BLACK, WHITE
from ..rules.notation import NotationError
from ..rules.pdn import PdnError, PdnGame, read_game, write_game
from ..rules.position import Game, GameStatus, Move, Position

RED, WHITE_SIDE = BLACK, WHITE
SIDE_LABELS = ("Red", "White")
SIDE_KEYS = ("red", "white")
PRACTICE_FEN = "B:W14,23:B9"        # the double-jump exercise: Red's man on 9, White's men on 14 and 23
DEFAULT_SEED = "checkers-1"
MAX_SEED_CHARS = 96
UNDO_LIMIT = 100
MODES = ("computer", "two-players", "analysis")
LEVELS = ("casual", "easy", "normal", "hard")
POSITIONS = ("standard", "practice", "setup")
_PIECE_CODES = {"b": "r", "B": "R", "w": "w", "W": "W"}


class MatchError(ValueError):
    """A request the match refuses; the message is shown to the player as it is."""


class StaleRequestError(MatchError):
    """A request made on a board that has changed since the page last saw it."""


@dataclass(frozen=True)
class Setup:
    """What the setup form chose (validated)."""

    mode: str                     # computer | two-players | analysis
    level: str                    # casual | easy | normal | hard (computer mode)
    human_side: int               # RED or WHITE_SIDE; in two-player mode it only orients the board
    position: str                 # standard | practice | setup
    start: Position
    premoves: tuple[Move, ...]    # moves of a PDN set-up, played before the match starts
    seed: str
    setup_text: str = ""
    loaded: Optional[PdnGame] = None   # a PDN set-up as read: its tags, result and annotations are saved again

    def as_dict(self) -> dict[str, Any]:
        return {"mode": self.mode, "level": self.level, "side": SIDE_KEYS[self.human_side],
                "position": self.position, "seed": self.seed, "setup_text": self.setup_text}


def engine_seed(seed: str) -> int:
    """The replay seed as the engine's ``Seed`` option (0 .. 2^31-1), the same on every machine."""
    return int.from_bytes(hashlib.sha256(seed.encode("utf-8")).digest()[:4], "big") & 0x7FFFFFFF


def check_seed(raw: Any) -> str:
    if not isinstance(raw, str):
        raise MatchError("The replay seed must be text.")
    seed = raw.strip()
    if not 1 <= len(seed) <= MAX_SEED_CHARS:
        raise MatchError(f"The replay seed must contain 1 to {MAX_SEED_CHARS} characters after surrounding "
                         "spaces are removed.")
    return seed


def read_setup_text(text: str) -> tuple[Position, tuple[Move, ...], Optional[PdnGame]]:
    """A set-up given as a FEN (``B:W21-32:B1-12``, or a ``[FEN "..."]`` tag) or as one PDN game.

    Returns the start, the moves played from it and, for a PDN game, the game as read."""
    text = (text or "").strip()
    if not text:
        raise MatchError("Enter a FEN (like B:W21-32:B1-12) or a PDN game for the set-up position.")
    looks_like_fen = text[:2].upper() in ("B:", "W:") and "\n" not in text
    if looks_like_fen:
        try:
            return Position.from_fen(text), (), None
        except NotationError as exc:
            raise MatchError(f"Cannot read the FEN: {exc}.") from None
    try:
        game = read_game(text)
    except PdnError as exc:
        raise MatchError(f"Cannot read the PDN: {exc}.") from None
    return game.start, tuple(game.moves), game


def parse_setup(data: Any) -> Setup:
    """Validate the JSON sent by the setup form; :class:`MatchError` names the first problem."""
    if not isinstance(data, dict):
        raise MatchError("The setup must be a JSON object.")
    mode = data.get("mode", "computer")
    if mode not in MODES:
        raise MatchError(f"Unknown opponent {mode!r}: choose one of {', '.join(MODES)}.")
    level = data.get("level", "casual")
    if level not in LEVELS:
        raise MatchError(f"Unknown level {level!r}: choose one of {', '.join(LEVELS)}.")
    side = data.get("side", "red")
    if side not in SIDE_KEYS:
        raise MatchError("Your side must be red or white.")
    position = data.get("position", "standard")
    if position not in POSITIONS:
        raise MatchError(f"Unknown position {position!r}: choose one of {', '.join(POSITIONS)}.")
    seed = check_seed(data.get("seed", DEFAULT_SEED))
    premoves: tuple[Move, ...] = ()
    loaded: Optional[PdnGame] = None
    text = ""
    if position == "standard":
        start = Position.start()
    elif position == "practice":
        start = Position.from_fen(PRACTICE_FEN)
    else:
        text = str(data.get("setup_text", ""))
        start, premoves, loaded = read_setup_text(text)
    return Setup(mode, level, SIDE_KEYS.index(side), position, start, premoves, seed, text.strip(), loaded)


# --- board geometry (display only: where a square is drawn, which square a jump passes over) -------------
def square_row_col(square: int) -> tuple[int, int]:
    """Row 0 holds squares 1-4 (Red's back row); dark squares are at odd columns on even rows."""
    row = (square - 1) // 4
    col = 2 * ((square - 1) % 4) + (1 if row % 2 == 0 else 0)
    return row, col


def jumped_square(a: int, b: int) -> int:
    """The square between two squares two diagonal steps apart."""
    (ra, ca), (rb, cb) = square_row_col(a), square_row_col(b)
    row, col = (ra + rb) // 2, (ca + cb) // 2
    return row * 4 + col // 2 + 1


def move_label(side: int, move: Move) -> str:
    """``Red 11–15``, ``White 23×14×5 (king)``: numbered squares, en dash or multiplication sign."""
    joiner = "×" if move.is_capture else "–"
    text = f"{SIDE_LABELS[side]} {joiner.join(str(s) for s in move.squares)}"
    return text + " (king)" if move.promotes else text


@dataclass(frozen=True)
class UndoPoint:
    plies: int                 # game length before the turn that can be taken back
    rng_state: Any             # the casual computer's generator before that turn


class Match:
    """The state of one match (or one analysis board) and the requests that change it.

    Every change increments ``version``; a request carries the version it was made on
    and is refused as stale when the board has changed since.
    """

    def __init__(self, match_id: str, setup: Setup) -> None:
        self.id = match_id
        self.setup = setup
        self.game = Game(setup.start)
        for move in setup.premoves:
            self.game.push(move)
        self.line: list[Move] = list(self.game.moves)      # analysis: the whole loaded line (cursor may be back)
        self.partial: list[int] = []                        # squares of the turn being made, jump by jump
        self.rng = random.Random(setup.seed)
        self.undo_points: deque[UndoPoint] = deque(maxlen=UNDO_LIMIT)
        self.paused = False
        self.resigned: Optional[int] = None
        self.version = 0
        self.thinking = False
        self.engine_error: Optional[str] = None
        self.reply_token = 0                  # a computer reply is applied only if this is unchanged
        self.pending_reply: Optional[Move] = None
        self.last_move: Optional[Move] = None

    # --- who moves -----------------------------------------------------------------------------------
    @property
    def computer_side(self) -> Optional[int]:
        return 1 - self.setup.human_side if self.setup.mode == "computer" else None

    @property
    def turn(self) -> int:
        return self.game.position.turn

    def status(self) -> GameStatus:
        return self.game.status()

    def is_over(self) -> bool:
        return self.resigned is not None or self.status().is_over

    def needs_computer_move(self) -> bool:
        return (self.computer_side is not None and self.turn == self.computer_side and not self.is_over()
                and not self.paused and not self.thinking and self.engine_error is None
                and self.pending_reply is None and not self.partial)

    def human_may_move(self) -> bool:
        if self.is_over() and self.setup.mode != "analysis":
            return False
        if self.paused or self.thinking:
            return False
        return self.computer_side is None or self.turn != self.computer_side

    def _touch(self) -> None:
        self.version += 1

    def _check_version(self, version: Any) -> None:
        if version is not None and version != self.version:
            raise StaleRequestError("That request was made on an out-of-date board, so nothing was changed; "
                                    "the board now shows the current position.")

    # --- a turn, jump by jump --------------------------------------------------------------------------
    def _candidates(self) -> list[Move]:
        n = len(self.partial)
        return [m for m in self.game.position.legal_moves() if list(m.squares[:n]) == self.partial]

    def targets(self) -> dict[int, list[int]]:
        """For every piece that may be moved now, the squares its next step may land on."""
        if not self.human_may_move() or self.status().is_over or self.resigned is not None:
            return {}
        n = len(self.partial)
        out: dict[int, set[int]] = {}
        for m in self._candidates():
            origin = m.squares[n - 1] if n else m.squares[0]
            out.setdefault(origin, set()).add(m.squares[n] if n else m.squares[1])
        return {k: sorted(v) for k, v in sorted(out.items())}

    def step(self, frm: Any, to: Any, version: Any = None) -> None:
        """Move the piece on ``frm`` one step (an ordinary move or one jump) to ``to``."""
        self._check_version(version)
        if not isinstance(frm, int) or not isinstance(to, int) or not (1 <= frm <= 32 and 1 <= to <= 32):
            raise MatchError("A move names two squares numbered 1 to 32.")
        if self.resigned is not None or (self.status().is_over and self.setup.mode != "analysis"):
            raise MatchError("The match is over: choose Replay same seed, New seed or Change setup.")
        if self.status().is_over:
            raise MatchError("The game is over in this position: step back to try another move.")
        if self.paused:
            raise MatchError("The match is paused: choose Resume to continue.")
        if self.thinking or (self.computer_side is not None and self.turn == self.computer_side):
            raise MatchError("Wait for the computer's move.")
        side = SIDE_LABELS[self.turn]
        if self.partial and frm != self.partial[-1]:
            raise MatchError(f"{side}: continue jumping from {self.partial[-1]} with the same piece.")
        targets = self.targets()
        capture = self.game.position.is_capture_pending()
        if frm not in targets:
            piece = self.game.position.piece_at(frm)
            if piece is None or (piece.lower() == "b") != (self.turn == RED):
                raise MatchError(f"Square {frm} holds no {side} piece: select a ringed piece.")
            if capture:
                raise MatchError(f"Capture required: the piece on {frm} cannot jump. Select a ringed piece.")
            raise MatchError(f"The piece on {frm} cannot move. Select a ringed piece.")
        if to not in targets[frm]:
            marked = ", ".join(str(s) for s in targets[frm])
            what = "jump" if capture else "move"
            raise MatchError(f"{frm} to {to} is not a legal {what}. From {frm} the marked squares are: {marked}.")
        path = (self.partial or [frm]) + [to]
        done = [m for m in self._candidates() if list(m.squares) == path]
        if done:
            self.partial = []
            self._complete_turn(done[0], by_human=True)
        else:
            self.partial = path
            self._touch()

    def _complete_turn(self, move: Move, by_human: bool) -> None:
        plies = len(self.game.moves)
        if by_human and self.setup.mode != "analysis":
            self.undo_points.append(UndoPoint(plies, self.rng.getstate()))
        if self.setup.mode == "analysis":
            cursor = plies
            if cursor < len(self.line) and self.line[cursor] == move:
                pass                                   # the loaded line's own next move: keep the rest
            else:
                self.line = self.line[:cursor] + [move]
        else:
            self.line.append(move)
        self.game.push(move)
        self.last_move = move
        self._touch()

    # --- the computer ------------------------------------------------------------------------------
    def casual_move(self) -> Move:
        """The casual computer's choice: uniform over the legal moves (in their fixed order), seeded."""
        legal = self.game.position.legal_moves()
        return legal[self.rng.randrange(len(legal))]

    def begin_reply(self) -> int:
        """Mark the computer as thinking; the token identifies this reply."""
        self.thinking = True
        self.reply_token += 1
        self._touch()
        return self.reply_token

    def apply_reply(self, token: int, move: Move) -> bool:
        """The computer's move arrived: play it (or hold it while paused); False when no longer wanted."""
        if token != self.reply_token or not self.thinking:
            return False
        self.thinking = False
        if move not in self.game.position.legal_moves():
            self.engine_error = f"The engine answered an illegal move ({move}); restart it to try again."
            self._touch()
            return True
        if self.paused:
            self.pending_reply = move
            self._touch()
            return True
        self._complete_turn(move, by_human=False)
        return True

    def reply_failed(self, token: int, message: str) -> bool:
        if token != self.reply_token or not self.thinking:
            return False
        self.thinking = False
        self.engine_error = message
        self._touch()
        return True

    def clear_engine_error(self) -> None:
        self.engine_error = None
        self._touch()

    # --- controls ----------------------------------------------------------------------------------
    def pause(self, version: Any = None) -> None:
        if self.is_over():
            raise MatchError("The match is over: there is nothing to pause.")
        if not self.paused:
            self.paused = True
            self._touch()

    def resume(self, version: Any = None) -> None:
        if self.paused:
            self.paused = False
            if self.pending_reply is not None:
                move, self.pending_reply = self.pending_reply, None
                self._complete_turn(move, by_human=False)
            self._touch()

    def resign(self, version: Any = None) -> None:
        """The side to move concedes; against the computer, on the computer's turn, the player does."""
        self._check_version(version)
        if self.setup.mode == "analysis":
            raise MatchError("There is nothing to resign in analysis.")
        if self.is_over():
            raise MatchError("The match is already over.")
        side = self.turn
        if self.computer_side is not None and side == self.computer_side:
            side = self.setup.human_side
        self.resigned = side
        self.partial = []
        self.paused = False
        self.thinking = False
        self.reply_token += 1
        self.pending_reply = None
        self._touch()

    def undo(self, version: Any = None) -> None:
        """Take back the player's last turn (and the computer's reply), or the turn being made."""
        self._check_version(version)
        if self.setup.mode == "analysis":
            raise MatchError("In analysis, step back through the moves instead.")
        if self.is_over():
            raise MatchError("A completed match cannot be undone.")
        if self.paused:
            raise MatchError("The match is paused: choose Resume to continue.")
        if self.partial:
            self.partial = []                       # back to the start of the turn being made
            self._touch()
            return
        if not self.undo_points:
            raise MatchError("There is no turn to undo yet.")
        point = self.undo_points.pop()
        while len(self.game.moves) > point.plies:
            self.game.pop()
        self.line = list(self.game.moves)
        self.rng.setstate(point.rng_state)
        self.thinking = False
        self.reply_token += 1
        self.pending_reply = None
        self.engine_error = None
        self.last_move = self.game.moves[-1] if self.game.moves else None
        self._touch()

    def goto(self, ply: Any, version: Any = None) -> None:
        """Analysis: show the position after ``ply`` moves of the loaded line."""
        if self.setup.mode != "analysis":
            raise MatchError("Stepping through moves is for analysis mode.")
        if not isinstance(ply, int) or not 0 <= ply <= len(self.line):
            raise MatchError(f"There is no move {ply} in this game (it has {len(self.line)}).")
        while len(self.game.moves) > ply:
            self.game.pop()
        while len(self.game.moves) < ply:
            self.game.push(self.line[len(self.game.moves)])
        self.partial = []
        self.last_move = self.game.moves[-1] if self.game.moves else None
        self._touch()

    # --- views -------------------------------------------------------------------------------------
    def position_id(self, version: Optional[int] = None) -> str:
        """Names the board the page shows (this match at this version): analysis output carries the id
        of the board it was computed for, so the page shows only output for the board on screen."""
        return f"{self.id}/{self.version if version is None else version}"

    def board(self) -> list[str]:
        """32 piece codes (``r``/``R`` Red man/king, ``w``/``W`` White, ``""`` empty), the turn so far applied."""
        pos = self.game.position
        cells = [_PIECE_CODES.get(pos.piece_at(sq) or "", "") for sq in range(1, 33)]
        if self.partial:
            piece = cells[self.partial[0] - 1]
            cells[self.partial[0] - 1] = ""
            for a, b in zip(self.partial, self.partial[1:]):
                cells[jumped_square(a, b) - 1] = ""
            cells[self.partial[-1] - 1] = piece
        return cells

    def result(self) -> Optional[dict[str, Any]]:
        if self.resigned is not None:
            winner = 1 - self.resigned
            return {"winner": SIDE_KEYS[winner], "title": f"{SIDE_LABELS[winner]} wins",
                    "reason": f"{SIDE_LABELS[self.resigned]} resigned.", "pdn": "1-0" if winner == RED else "0-1"}
        status = self.status()
        if not status.is_over:
            return None
        if status in (GameStatus.BLACK_WINS, GameStatus.WHITE_WINS):
            loser = self.turn
            winner = 1 - loser
            if self.game.position.piece_count(loser) == 0:
                reason = f"{SIDE_LABELS[loser]} has no pieces left."
            else:
                reason = f"{SIDE_LABELS[loser]} is blocked: none of its pieces can move."
            return {"winner": SIDE_KEYS[winner], "title": f"{SIDE_LABELS[winner]} wins", "reason": reason,
                    "pdn": status.pdn_result}
        if status is GameStatus.DRAW_REPETITION:
            reason = "The same position came up for the third time with the same side to move."
        else:
            reason = "40 moves each without a capture or a man advancing."
        return {"winner": None, "title": "Draw", "reason": reason, "pdn": status.pdn_result}

    def steps_played(self) -> int:
        """Single board moves by both sides: an ordinary move is one, a capture one per jump."""
        done = sum(len(m.squares) - 1 for m in self.game.moves)
        return done + (len(self.partial) - 1 if self.partial else 0)

    def turn_text(self) -> str:
        side = SIDE_LABELS[self.turn]
        result = self.result()
        if result is not None:
            return result["title"]
        if self.paused:
            return "Paused"
        if self.engine_error:
            return "The engine stopped"
        if self.thinking:
            return f"{side} (computer) is thinking…"
        if self.partial:
            return f"{side}: continue jumping from {self.partial[-1]}"
        if self.game.position.is_capture_pending():
            return f"{side}: capture required"
        return f"{side} to move"

    def history(self) -> list[dict[str, Any]]:
        out = []
        turn = self.setup.start.turn
        for i, move in enumerate(self.line):
            out.append({"ply": i + 1, "side": SIDE_KEYS[turn], "text": move_label(turn, move),
                        "move": move.text(), "capture": move.is_capture, "crown": move.promotes})
            turn = 1 - turn
        return out

    def state(self) -> dict[str, Any]:
        pos = self.game.position
        board = self.board()
        targets = self.targets()
        orientation = self.setup.human_side
        return {
            "id": self.id, "version": self.version, "setup": self.setup.as_dict(),
            "orientation": SIDE_KEYS[orientation],
            "computer": SIDE_KEYS[self.computer_side] if self.computer_side is not None else None,
            "board": board, "turn": SIDE_KEYS[pos.turn], "turn_text": self.turn_text(),
            "capture_required": bool(self.partial) or pos.is_capture_pending(),
            "selectable": sorted(targets), "targets": {str(k): v for k, v in targets.items()},
            "partial": list(self.partial),
            "counts": {"red": sum(c in "rR" and c != "" for c in board),
                       "white": sum(c in "wW" and c != "" for c in board)},
            "history": self.history(), "cursor": len(self.game.moves), "steps": self.steps_played(),
            "result": self.result(), "paused": self.paused, "thinking": self.thinking,
            "engine_error": self.engine_error,
            "can_undo": self.setup.mode != "analysis" and not self.is_over() and not self.paused
            and (bool(self.partial) or bool(self.undo_points)),
            "last_move": list(self.last_move.squares) if self.last_move is not None else [],
            "fen": pos.fen(), "position_id": self.position_id(),
        }

    def pdn(self) -> str:
        """The whole game (analysis: the whole line) as PDN text.

        A loaded PDN game keeps its tags, and its comments, NAGs and variations for the moves that the
        line still shares with it; its result is kept while the line is the loaded one.  Otherwise the
        result is the rules' verdict on the end of the line (or a resignation), else ``*``."""
        loaded = self.setup.loaded
        tags = dict(loaded.tags) if loaded is not None else {}
        tags.setdefault("Event", "uci-checkers gui")
        if self.computer_side is not None:
            names = ["Player", "Player"]
            names[self.computer_side] = f"Computer ({self.setup.level})"
            tags["Black"], tags["White"] = names
        game = PdnGame(tags={"GameType": "21", **{k: v for k, v in tags.items() if k.lower() != "result"}},
                       start=self.setup.start, moves=list(self.line), result=self._pdn_result())
        if loaded is not None:
            shared = 0                       # plies the line has in common with the loaded game
            while shared < min(len(loaded.moves), len(self.line)) and loaded.moves[shared] == self.line[shared]:
                shared += 1
            for source, target in ((loaded.comments, game.comments), (loaded.nags, game.nags),
                                   (loaded.variations, game.variations)):
                target.update({ply: list(v) for ply, v in source.items() if ply <= shared})
            game.first_move_number = loaded.first_move_number
        if self.setup.start != Position.start():
            game.tags["FEN"] = self.setup.start.fen()
        return write_game(game)

    def _pdn_result(self) -> str:
        if self.resigned is not None:
            return "1-0" if self.resigned != RED else "0-1"
        loaded = self.setup.loaded
        if loaded is not None and loaded.result != "*" and self.line == list(loaded.moves):
            return loaded.result                 # e.g. a game the loser resigned: the rules cannot know
        whole = Game(self.setup.start)
        for move in self.line:
            whole.push(move)
        return whole.status().pdn_result
