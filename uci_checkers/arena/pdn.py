"""PDN for the arena: write each finished game, read games back (resume, opening files).

A written game looks like::

    [Event "arena"]
    [Site "host"]
    [Date "2026.11.29"]
    [Round "7"]
    [Black "new"]
    [White "old"]
    [Result "1-0"]
    [GameType "21"]
    [Opening "ACF 12: 9-13 23-19 11-16"]
    [Termination "no legal moves"]
    [PlyCount "57"]
    [TimeControl "10+0.1"]

    1. 9-13 23-19 2. 11-16 ... 29. 5x14x23 1-0

The result is from the first player's (Black's) side.  A game that started from
a set-up position carries ``[SetUp "1"]`` and ``[FEN "..."]``; when White moves
first the move text starts ``1... 22-17``.  Opening moves (a ballot) are part of
the move text, so the record replays from its own start.

The reader is deliberately small: tags, move text with move numbers, ``{}``
comments, ``()`` variations, ``;`` line comments and NAGs are understood; moves
are returned as text for the rules core to check.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator, Optional

RESULTS = ("1-0", "0-1", "1/2-1/2", "*")
_ALT_RESULTS = {"2-0": "1-0", "0-2": "0-1", "1-1": "1/2-1/2"}   # PDN's 2-point results
_TAG = re.compile(r'^\[\s*([A-Za-z0-9_]+)\s+"((?:[^"\\]|\\.)*)"\s*\]\s*$')
_MOVE = re.compile(r"^\d{1,2}(?:[-x]\d{1,2})+$")
_NUMBER = re.compile(r"^\d+\.(?:\.\.)?")


class PdnError(ValueError):
    """A PDN file that cannot be read."""


@dataclass
class PdnGame:
    """Tags (in order), the moves as text, the result token and the comments found."""

    tags: dict[str, str] = field(default_factory=dict)
    moves: list[str] = field(default_factory=list)
    result: str = "*"
    complete: bool = False       # the move text ended with a result token
    error: str = ""              # (lenient reading) what was wrong with this game's move text

    def tag(self, name: str, default: str = "") -> str:
        return self.tags.get(name, default)


def escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"')


def format_game(tags: Iterable[tuple[str, str]], moves: list[str], result: str, first_turn: int,
                comments: Optional[list[Optional[str]]] = None, final_comment: Optional[str] = None,
                width: int = 79) -> str:
    """PDN text of one game, ending with a blank line.

    ``first_turn`` is 0 when Black makes the first move of the text, 1 when White does.
    ``comments[i]``, when given, is written in braces after move ``i``.
    """
    out = [f'[{name} "{escape(str(value))}"]' for name, value in tags]
    tokens: list[str] = []
    number = 1
    turn = first_turn
    for i, move in enumerate(moves):
        if turn == 0:
            tokens.append(f"{number}.")
        elif i == 0:
            tokens.append(f"{number}...")
        tokens.append(move)
        if comments and i < len(comments) and comments[i]:
            tokens.append("{" + comments[i].replace("}", ")") + "}")
        if turn == 1:
            number += 1
        turn = 1 - turn
    if final_comment:
        tokens.append("{" + final_comment.replace("}", ")") + "}")
    tokens.append(result)
    lines: list[str] = []
    line = ""
    for tok in tokens:
        if line and len(line) + 1 + len(tok) > width:
            lines.append(line)
            line = tok
        else:
            line = f"{line} {tok}" if line else tok
    if line:
        lines.append(line)
    return "\n".join(out) + "\n\n" + "\n".join(lines) + "\n\n"


def read_games(text: str, strict: bool = True) -> Iterator[PdnGame]:
    """Every game in ``text``; a truncated last game is returned with ``complete=False``.

    ``strict`` raises :class:`PdnError` on a token that is not PDN; otherwise the
    game gets ``error`` set and reading goes on (resume uses this: a game cut off
    mid-move is simply played again).
    """
    game: Optional[PdnGame] = None
    in_moves = False
    depth_comment = 0
    depth_variation = 0
    for raw in text.splitlines():
        line = raw.strip()
        if depth_comment == 0 and depth_variation == 0:
            m = _TAG.match(line)
            if m:
                if game is None or in_moves:
                    if game is not None:
                        yield game
                    game = PdnGame()
                    in_moves = False
                game.tags[m.group(1)] = re.sub(r"\\(.)", r"\1", m.group(2))
                continue
            if not line:
                continue
        if game is None:
            game = PdnGame()
        in_moves = True
        for tok in _tokens(line):
            if tok == "{":
                depth_comment += 1
                continue
            if tok == "}":
                depth_comment = max(0, depth_comment - 1)
                continue
            if depth_comment:
                continue
            if tok == "(":
                depth_variation += 1
                continue
            if tok == ")":
                depth_variation = max(0, depth_variation - 1)
                continue
            if depth_variation:
                continue
            if tok == ";":
                break
            if tok in RESULTS or tok in _ALT_RESULTS:
                game.result = _ALT_RESULTS.get(tok, tok)
                game.complete = True
                yield game
                game = None
                in_moves = False
                break
            tok = _NUMBER.sub("", tok)
            tok = tok.rstrip("!?*")
            if not tok or tok.startswith("$"):
                continue
            if _MOVE.match(tok):
                game.moves.append(tok)
            elif re.fullmatch(r"\d+", tok):
                continue
            elif strict:
                raise PdnError(f"unexpected token {tok!r} in the move text")
            elif not game.error:
                game.error = f"unexpected token {tok!r} in the move text"
    if game is not None and (game.moves or game.tags):
        yield game


def _tokens(line: str) -> Iterator[str]:
    for tok in re.findall(r"\{|\}|\(|\)|;|[^\s{}();]+", line):
        yield tok


def read_file(path: str | Path, strict: bool = True) -> list[PdnGame]:
    return list(read_games(Path(path).read_text(encoding="utf-8", errors="replace"), strict))
