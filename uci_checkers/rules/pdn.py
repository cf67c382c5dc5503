"""PDN (Portable Draughts Notation) for English checkers: read and write game collections.

Reading is tolerant: every game of a file is read independently, a broken game
becomes a :class:`PdnError` that names the game (1-based), its line and the
reason, and the games after it are still read::

    doc = read_pdn_file("games.pdn")
    for game in doc.games:
        print(game.tags.get("Event"), len(game.moves), game.result)
    for err in doc.errors:
        print(err)            # game 3 (line 41): move 12... 7x16: illegal move ...

What the reader understands
---------------------------
* tag pairs ``[Name "value"]`` (``\\"`` and ``\\\\`` escapes; an unquoted value is
  accepted), among them ``GameType`` (must be 21, English checkers, when present;
  ``21,Black,8,8,...`` is fine), ``FEN`` (the start position) and ``Result``;
* move numbers ``1.``, ``1...`` (also glued to the move: ``1.11-15``), ignored
  apart from the first one, which is kept for writing;
* moves ``11-15``, full capture paths ``15x24x31`` and short captures ``15x31``
  (resolved with :meth:`Position.parse_move`; a short capture that could mean
  moves leading to different positions is an error for that game), ``:`` as a
  capture mark, and ``!``/``?`` suffixes (kept as NAGs);
* comments ``{...}`` (may span lines) and ``;`` to the end of the line,
  ``%`` escape lines, NAGs ``$n``, variations ``(...)`` (nested; kept as their
  text and checked only when :meth:`PdnGame.variation_moves` is asked for);
* results ``1-0`` (the first player, Black, won), ``0-1``, ``1/2-1/2``, ``*``,
  and the 2-point forms ``2-0``, ``1-1``, ``0-2`` (stored in the 1-point form);
* a UTF-8 (with or without BOM) or Latin-1 file, CRLF line ends.

A game ends at its result token, or where a new tag section starts after
movetext.  An unclosed ``{`` or ``(`` is cut at the next line that starts a tag
pair, so one broken comment cannot swallow the rest of the file.  A game whose
movetext stops without a result token (a file cut off while a game was being
written) is read as far as it goes with ``complete`` False, so a program that
appends games as they finish can tell a cut-off game from a finished one; its
``result`` then comes from the ``Result`` tag.

Writing (:func:`write_game`) gives the tags in the order of ``PdnGame.tags``
(``Result`` set from the game, ``FEN`` added when the start is not the initial
position; either stays where the dict has it), then the movetext with full
capture paths, ``N.``/``N...`` numbers (``1...`` first when White starts, and
again after a comment or variation), NAGs, comments (``comments[k]`` after the
k-th move: e.g. an engine's score and time per move) and variations, wrapped at
80 columns.  Reading what was written gives the same game back, and writing it
again gives the same text.
"""
from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator, Optional, Union, overload

from ..util.atomicfile import write_text_atomic
from .bitboard import BLACK
from .notation import NotationError
from .position import Game, Move, Position

__all__ = ["PdnError", "PdnGame", "PdnDocument", "parse_pdn", "read_game", "read_pdn_file", "iter_games",
           "write_game", "write_games", "write_pdn_file", "normalize_result", "RESULTS"]

RESULTS = ("1-0", "0-1", "1/2-1/2", "*")
_RESULT_FORMS = {"1-0": "1-0", "0-1": "0-1", "1/2-1/2": "1/2-1/2", "*": "*", "2-0": "1-0", "0-2": "0-1",
                 "1-1": "1/2-1/2", "½-½": "1/2-1/2", "0.5-0.5": "1/2-1/2", "1/2": "1/2-1/2"}


class PdnError(ValueError):
    """One game of a PDN text could not be read.

    ``game_index`` is 0-based (its position among all games of the text, broken
    ones included); the message shows it 1-based with the line number.
    """

    def __init__(self, reason: str, game_index: int = 0, line: int = 0) -> None:
        self.reason = reason
        self.game_index = game_index
        self.line = line
        where = f"game {game_index + 1}" + (f" (line {line})" if line else "")
        super().__init__(f"{where}: {reason}")


def normalize_result(text: str) -> Optional[str]:
    """``1-0``, ``0-1``, ``1/2-1/2`` or ``*`` for any accepted result text, else None."""
    return _RESULT_FORMS.get(text.strip())


@dataclass
class PdnGame:
    """One game: tags, start position, moves and annotations.

    Annotation keys count plies: ``comments[k]`` are the comments written after
    the k-th move (``comments[0]``: before the first move), ``nags[k]`` the NAGs
    (``$1``, ``!``, ``??``) of the k-th move, ``variations[k]`` the texts of the
    variations that replace the k-th move (without their parentheses).
    """

    tags: dict[str, str] = field(default_factory=dict)
    start: Position = field(default_factory=Position.start)
    moves: list[Move] = field(default_factory=list)
    result: str = "*"
    comments: dict[int, list[str]] = field(default_factory=dict)
    nags: dict[int, list[str]] = field(default_factory=dict)
    variations: dict[int, list[str]] = field(default_factory=dict)
    first_move_number: int = 1
    index: int = 0           # position in the file it was read from (0-based)
    line: int = 0            # line where it starts in that file
    complete: bool = True    # False: read from a movetext that stops without a result token

    # --- construction -------------------------------------------------------
    @classmethod
    def from_game(cls, game: Game, tags: Optional[dict[str, str]] = None,
                  result: Optional[str] = None) -> "PdnGame":
        """A PDN game from a :class:`Game`; the result defaults to the game's status."""
        res = result if result is not None else game.status().pdn_result
        norm = normalize_result(res)
        if norm is None:
            raise ValueError(f"unknown result {res!r}")
        all_tags = {"GameType": "21"}
        all_tags.update(tags or {})
        return cls(tags=all_tags, start=game.start, moves=list(game.moves), result=norm)

    @classmethod
    def from_moves(cls, moves: Iterable[Union[str, Move]], start: Optional[Position] = None,
                   tags: Optional[dict[str, str]] = None, result: str = "*") -> "PdnGame":
        """A PDN game from move texts (or moves), checked for legality."""
        pos = start if start is not None else Position.start()
        played = []
        for m in moves:
            mv = pos.parse_move(m) if isinstance(m, str) else pos.parse_move(m.text())
            played.append(mv)
            pos = pos.play(mv)
        norm = normalize_result(result)
        if norm is None:
            raise ValueError(f"unknown result {result!r}")
        return cls(tags=dict(tags or {}), start=start if start is not None else Position.start(),
                   moves=played, result=norm)

    # --- views ---------------------------------------------------------------
    def tag(self, name: str, default: str = "") -> str:
        """The value of tag ``name`` (the case of the name is ignored), or ``default``."""
        value = _tag(self.tags, name)
        return default if value is None else value

    def game(self, no_progress_plies: Optional[int] = None) -> Game:
        """The moves replayed as a :class:`Game` (for status, repetitions, an engine)."""
        g = Game(self.start) if no_progress_plies is None else Game(self.start, no_progress_plies)
        for m in self.moves:
            g.push(m)
        return g

    def positions(self) -> list[Position]:
        """The start position and the position after every move."""
        out = [self.start]
        for m in self.moves:
            out.append(out[-1].play(m))
        return out

    def move_label(self, ply: int) -> str:
        """``'7.'`` or ``'7...'``: the number PDN gives the move at 0-based ``ply``."""
        offset = 0 if self.start.turn == BLACK else 1
        number = self.first_move_number + (ply + offset) // 2
        return f"{number}." if (self.start.turn + ply) % 2 == BLACK else f"{number}..."

    def variation_moves(self, ply: int, index: int = 0) -> list[Move]:
        """The main line of ``variations[ply][index]`` as moves, played from before move ``ply``.

        Raises :class:`PdnError` when a move of the variation is illegal.
        """
        text = self.variations[ply][index]
        pos = self.positions()[ply - 1]
        moves = []
        for tok in _tokenize(text):
            if tok.kind == "move":
                try:
                    mv = pos.parse_move(tok.text)
                except NotationError as exc:
                    raise PdnError(f"variation {index + 1} at move {self.move_label(ply - 1)}: {exc}",
                                   self.index, self.line) from None
                moves.append(mv)
                pos = pos.play(mv)
            elif tok.kind in ("error", "result"):
                if tok.kind == "error":
                    raise PdnError(f"variation {index + 1}: {tok.text}", self.index, self.line)
                break
        return moves

    def pdn(self, width: int = 80) -> str:
        """This game as PDN text (see :func:`write_game`)."""
        return write_game(self, width)


@dataclass
class PdnDocument:
    """What a PDN text held: the games that could be read and one error per broken game.

    It behaves as the sequence of its readable games: ``len(doc)``, ``doc[0]``,
    ``doc[-1]``, ``doc[2:5]`` and iteration all look at ``games``.
    """

    games: list[PdnGame]
    errors: list[PdnError]

    def __iter__(self) -> Iterator[PdnGame]:
        return iter(self.games)

    def __len__(self) -> int:
        return len(self.games)

    @overload
    def __getitem__(self, index: int) -> PdnGame: ...

    @overload
    def __getitem__(self, index: slice) -> list[PdnGame]: ...

    def __getitem__(self, index: Union[int, slice]) -> Union[PdnGame, list[PdnGame]]:
        return self.games[index]


# --------------------------------------------------------------------------
# Tokenizer
# --------------------------------------------------------------------------
@dataclass
class _Token:
    kind: str        # tag, comment, variation, nag, number, move, result, error
    text: str
    pos: int
    value: str = ""  # tag value


_TAG = re.compile(r'\[[ \t]*([A-Za-z0-9_]+)[ \t]*"((?:[^"\\\n]|\\.)*)"[ \t]*\]')
_BARE_TAG = re.compile(r'\[[ \t]*([A-Za-z0-9_]+)[ \t]+([^\]"\n]*?)[ \t]*\]')
# Real files put unescaped quotes inside values: take everything up to the line's last quote.
_LOOSE_TAG = re.compile(r'\[[ \t]*([A-Za-z0-9_]+)[ \t]*"(.*)"[ \t]*\][ \t]*(?=\r?\n|$)')
_TAG_LINE_START = re.compile(r'\n[ \t]*\[[ \t]*[A-Za-z0-9_]+[ \t]+"')
_WORD_END = re.compile(r"[ \t\r\n{}()\[\];$]")     # a word runs up to one of these
_DIGITS = re.compile(r"[0-9]*")
# ASCII digits only (``\d`` would take Arabic-Indic or fullwidth digits too).
_NUMBER = re.compile(r"^([0-9]+)(\.+)(.*)$", re.DOTALL)
_MOVE = re.compile(r"^([0-9]+(?:[-xX:×][0-9]+)+)([!?]*)$")
_ALPHA_MOVE = re.compile(r"^[a-hA-H][1-8](?:[-xX:][a-hA-H][1-8])+[!?]*$")
_UNESCAPE = re.compile(r"\\(.)")
MAX_MOVE_NUMBER_DIGITS = 6       # a longer move number is an error for its game, never an int() of 5,000 digits


class _TagLines:
    """Offsets of the lines that start a tag pair, found once, so that bounding a
    broken comment or variation costs a bisection instead of a rescan of the file."""

    def __init__(self, text: str) -> None:
        self.starts = [m.start() + 1 for m in _TAG_LINE_START.finditer(text)]

    def next_in(self, start: int, end: int) -> int:
        """Offset of the first tag line starting within (start, end), or -1."""
        k = bisect.bisect_right(self.starts, start)
        return self.starts[k] if k < len(self.starts) and self.starts[k] < end else -1


def _tokenize(text: str) -> Iterator[_Token]:
    """Tokens of a PDN text.  Every branch consumes at least one character, so the
    loop ends on any input; a broken ``{`` or ``(`` never looks past the next tag line."""
    i, n = 0, len(text)
    tag_lines = _TagLines(text)
    while i < n:
        c = text[i]
        if c in " \t\r\n\f\v":
            i += 1
        elif c == "%" and (i == 0 or text[i - 1] == "\n"):
            j = text.find("\n", i)
            i = n if j < 0 else j + 1
        elif c == "[":
            m = _TAG.match(text, i) or _LOOSE_TAG.match(text, i)
            if m:
                value = _UNESCAPE.sub(r"\1", m.group(2))
            else:
                m = _BARE_TAG.match(text, i)
                value = m.group(2).strip() if m else ""
            if m:
                yield _Token("tag", m.group(1), i, value)
                i = m.end()
            else:
                j = text.find("\n", i)
                j = n if j < 0 else j
                yield _Token("tagerror", f"cannot read tag {text[i:j].strip()[:60]!r}", i)
                i = max(j, i + 1)
        elif c == "]":
            yield _Token("error", "']' outside a tag pair", i)
            i += 1
        elif c == "{":
            limit = tag_lines.next_in(i, n)
            close = text.find("}", i + 1, n if limit < 0 else limit)
            if close < 0:
                yield _Token("error", "comment '{' is never closed", i)
                i = n if limit < 0 else limit
            else:
                yield _Token("comment", text[i + 1:close].strip(), i)
                i = close + 1
        elif c == ";":
            j = text.find("\n", i)
            j = n if j < 0 else j
            yield _Token("comment", text[i + 1:j].strip(), i)
            i = j
        elif c == "(":
            limit = tag_lines.next_in(i, n)
            end = _match_paren(text, i, n if limit < 0 else limit)
            if end < 0:
                yield _Token("error", "variation '(' is never closed", i)
                i = n if limit < 0 else limit
            else:
                yield _Token("variation", " ".join(text[i + 1:end].split()), i)
                i = end + 1
        elif c == ")":
            yield _Token("error", "')' without a variation to close", i)
            i += 1
        elif c == "}":
            yield _Token("error", "'}' without a comment to close", i)
            i += 1
        elif c == "$":
            j = _DIGITS.match(text, i + 1).end()
            if j == i + 1:
                yield _Token("error", "'$' without a NAG number", i)
            elif j - i - 1 > MAX_MOVE_NUMBER_DIGITS:
                yield _Token("error", f"NAG number of {j - i - 1} digits", i)
            else:
                yield _Token("nag", text[i:j], i)
            i = j
        elif c == "*":
            yield _Token("result", "*", i)
            i += 1
        else:
            m = _WORD_END.search(text, i + 1)
            j = m.start() if m else n
            yield from _classify_word(text[i:j], i)
            i = j


def _classify_word(word: str, pos: int) -> Iterator[_Token]:
    while word:
        result = normalize_result(word) if len(word) <= 8 else None
        if result is not None:
            yield _Token("result", word, pos)
            return
        m = _NUMBER.match(word)
        if m:
            if len(m.group(1)) > MAX_MOVE_NUMBER_DIGITS:
                yield _Token("error", f"move number of {len(m.group(1))} digits", pos)
                return
            yield _Token("number", m.group(1) + m.group(2), pos)
            pos += len(word) - len(m.group(3))
            word = m.group(3)
            continue
        if set(word) == {"."}:          # "1. ..." style: a bare ellipsis
            return
        m = _MOVE.match(word)
        if m:
            yield _Token("move", m.group(1), pos)
            if m.group(2):
                yield _Token("nag", m.group(2), pos + len(m.group(1)))
            return
        if word in ("!", "?", "!!", "??", "!?", "?!"):
            yield _Token("nag", word, pos)
            return
        if _ALPHA_MOVE.match(word):
            yield _Token("error", f"alphanumeric move {word!r}: only numeric English notation is supported", pos)
            return
        odd = next((ch for ch in word if ord(ch) > 127), None)
        why = f" (non-ASCII character U+{ord(odd):04X}: moves take ASCII digits only)" if odd else ""
        yield _Token("error", f"unexpected text {word[:40]!r}{why}", pos)
        return


def _match_paren(text: str, i: int, end: int) -> int:
    """Index of the ')' closing the '(' at i (skipping comments) before ``end``, or -1."""
    depth, j = 0, i
    while j < end:
        c = text[j]
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return j
        elif c == "{":
            k = text.find("}", j + 1, end)
            if k < 0:
                return -1
            j = k
        elif c == ";":
            k = text.find("\n", j, end)
            if k < 0:
                return -1
            j = k
        j += 1
    return -1


# --------------------------------------------------------------------------
# Reader
# --------------------------------------------------------------------------
class _LineIndex:
    def __init__(self, text: str) -> None:
        self.starts = [0] + [m.end() for m in re.finditer("\n", text)]

    def line(self, pos: int) -> int:
        return bisect.bisect_right(self.starts, pos)


def _split_games(tokens: Iterable[_Token]) -> Iterator[tuple[list[_Token], list[_Token]]]:
    """Group tokens into (tags, movetext) per game; movetext ends with its result token if any."""
    tags: list[_Token] = []
    body: list[_Token] = []
    for tok in tokens:
        if tok.kind in ("tag", "tagerror") and body:
            yield tags, body
            tags, body = [], []
        if tok.kind in ("tag", "tagerror"):
            tags.append(tok)
        else:
            body.append(tok)
            if tok.kind == "result":
                yield tags, body
                tags, body = [], []
    if tags or body:
        yield tags, body


def _build_game(tags: list[_Token], body: list[_Token], index: int, lines: _LineIndex) -> PdnGame:
    first = (tags or body)[0]
    start_line = lines.line(first.pos)

    def fail(reason: str, tok: Optional[_Token] = None) -> PdnError:
        return PdnError(reason, index, lines.line(tok.pos) if tok is not None else start_line)

    tag_dict: dict[str, str] = {}
    for tok in tags:
        if tok.kind == "tagerror":
            raise fail(tok.text, tok)
        tag_dict[tok.text] = tok.value
    for tok in body:
        if tok.kind == "error":
            raise fail(tok.text, tok)
    game_type = _tag(tag_dict, "GameType")
    if game_type is not None and game_type.strip():
        kind = game_type.split(",")[0].strip()
        if kind != "21":
            raise fail(f"GameType {game_type!r} is not English checkers (21)")
    start = Position.start()
    fen = _tag(tag_dict, "FEN")
    if fen is not None and fen.strip():
        try:
            start = Position.from_fen(fen)
        except NotationError as exc:
            raise fail(f"bad FEN tag: {exc}") from None
    game = PdnGame(tags=tag_dict, start=start, index=index, line=start_line)
    tag_result = _tag(tag_dict, "Result")
    result = normalize_result(tag_result) if tag_result else None
    pos = start
    first_number: Optional[int] = None
    game.complete = bool(body) and body[-1].kind == "result"
    for tok in body:
        ply = len(game.moves)
        if tok.kind == "number":
            if first_number is None and not game.moves:
                first_number = int(tok.text.rstrip("."))
        elif tok.kind == "move":
            try:
                mv = pos.parse_move(tok.text)
            except NotationError as exc:
                label = game.move_label(ply) if first_number is None else \
                    _label(first_number, start.turn, ply)
                raise fail(f"move {label} {tok.text}: {exc}", tok) from None
            game.moves.append(mv)
            pos = pos.play(mv)
        elif tok.kind == "comment":
            game.comments.setdefault(ply, []).append(tok.text)
        elif tok.kind == "nag":
            if ply == 0:
                raise fail(f"NAG {tok.text} before the first move", tok)
            game.nags.setdefault(ply, []).append(tok.text)
        elif tok.kind == "variation":
            if ply == 0:
                raise fail("variation before the first move", tok)
            game.variations.setdefault(ply, []).append(tok.text)
        elif tok.kind == "result":
            result = normalize_result(tok.text)
    if first_number is not None:
        game.first_move_number = max(1, first_number)
    game.result = result or "*"
    return game


def _label(first_number: int, turn: int, ply: int) -> str:
    offset = 0 if turn == BLACK else 1
    number = first_number + (ply + offset) // 2
    return f"{number}." if (turn + ply) % 2 == BLACK else f"{number}..."


def _tag(tags: dict[str, str], name: str) -> Optional[str]:
    """Tag lookup ignoring the case of the name (real files write 'Gametype', 'fen')."""
    if name in tags:
        return tags[name]
    low = name.lower()
    for k, v in tags.items():
        if k.lower() == low:
            return v
    return None


def iter_games(text: str) -> Iterator[Union[PdnGame, PdnError]]:
    """Each game of ``text`` in order: a :class:`PdnGame`, or a :class:`PdnError` when broken."""
    if text.startswith("\ufeff"):
        text = text[1:]
    lines = _LineIndex(text)
    for index, (tags, body) in enumerate(_split_games(_tokenize(text))):
        try:
            yield _build_game(tags, body, index, lines)
        except PdnError as exc:
            yield exc


def parse_pdn(text: str) -> PdnDocument:
    """Read every game of a PDN text; broken games are listed in ``errors``."""
    games, errors = [], []
    for item in iter_games(text):
        (errors if isinstance(item, PdnError) else games).append(item)
    return PdnDocument(games, errors)


def read_game(text: str) -> PdnGame:
    """Exactly one game from ``text``; raises :class:`PdnError` if it is broken or not alone."""
    items = list(iter_games(text))
    if not items:
        raise PdnError("no game in the text")
    if len(items) > 1:
        raise PdnError(f"expected one game, found {len(items)}")
    if isinstance(items[0], PdnError):
        raise items[0]
    return items[0]


def decode_pdn_bytes(data: bytes) -> str:
    """UTF-8 (BOM optional), falling back to Latin-1 (many old PDN files are cp1252/latin-1)."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return data.decode("latin-1")


def read_pdn_file(path: Union[str, Path]) -> PdnDocument:
    """Read every game of a PDN file (see :func:`parse_pdn`)."""
    return parse_pdn(decode_pdn_bytes(Path(path).read_bytes()))


# --------------------------------------------------------------------------
# Writer
# --------------------------------------------------------------------------
def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ")


def _comment(text: str) -> str:
    return "{" + text.replace("}", ")") + "}"


def write_game(game: PdnGame, width: int = 80) -> str:
    """PDN text of one game, ending with a newline (see the module docstring)."""
    tags = dict(game.tags)
    # Keep the names a reader will look up in one canonical spelling.
    for canon in ("Result", "FEN", "GameType"):
        for k in list(tags):
            if k != canon and k.lower() == canon.lower():
                tags.setdefault(canon, tags.pop(k))
    tags["Result"] = game.result
    if game.start != Position.start():
        tags["FEN"] = game.start.fen()
    elif "FEN" in tags:
        tags["FEN"] = game.start.fen()
    out = [f'[{k} "{_escape(v)}"]' for k, v in tags.items()]
    tokens: list[str] = [_comment(c) for c in game.comments.get(0, [])]
    interrupted = True
    for i, mv in enumerate(game.moves):
        label = game.move_label(i)
        if label.endswith("...") and not interrupted:
            label = ""
        ply = i + 1
        nags = game.nags.get(ply, [])
        glued = "".join(n for n in nags if not n.startswith("$"))
        tokens.append((label + " " if label else "") + mv.text() + glued)
        tokens.extend(n for n in nags if n.startswith("$"))
        interrupted = False
        for c in game.comments.get(ply, []):
            tokens.append(_comment(c))
            interrupted = True
        for v in game.variations.get(ply, []):
            tokens.append("(" + v + ")")
            interrupted = True
    tokens.append(game.result)
    lines, cur = [], ""
    for tok in tokens:
        if cur and len(cur) - (cur.rfind("\n") + 1) + 1 + len(tok.split("\n")[0]) > width:
            lines.append(cur)
            cur = tok
        else:
            cur = f"{cur} {tok}" if cur else tok
    if cur:
        lines.append(cur)
    return "\n".join(out + [""] + lines) + "\n"


def write_games(games: Iterable[PdnGame], width: int = 80) -> str:
    """PDN text of many games, separated by blank lines."""
    return "\n".join(write_game(g, width) for g in games)


def write_pdn_file(path: Union[str, Path], games: Iterable[PdnGame], width: int = 80) -> None:
    """Write games to a UTF-8 PDN file, atomically: the file holds the old text or the new, never a part."""
    write_text_atomic(path, write_games(games, width))
