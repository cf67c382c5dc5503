#!/usr/bin/env python3
"""A tiny, self-contained engine for the arena tests: plays a random legal move.

Pure Python (its own move generator, no numba, no package import) so it starts in
milliseconds.  ``--fault`` turns it into a deliberately broken engine:

  illegal      answers a well-formed but illegal move (``9-10``)
  malformed    answers text that is not a move (``zz``)
  none         answers ``bestmove (none)`` although moves exist
  short        answers a capture by its start and end square only (``15x13``)
  crash        exits with status 3 instead of answering ``go``
  hang         stops answering anything from that ``go`` on (keeps reading input)
  nouciok      never answers ``uci``
  slow         sleeps ``--slow-ms`` before each answer
  async        searches in a thread like a real engine: ``bestmove`` comes ``--slow-ms``
               after ``go`` (30 ms after ``stop``) while ``isready`` is answered at once

Options: ``Hash``, ``NoProgressPlies`` and ``Move Overhead`` (default 50) are declared; a
``setoption`` whose value is not a whole number is refused with ``info string error``.

``--score CP`` reports that score with every move (default: a random one within +-50).

``--fault-at N`` (default 1): the fault hits at the N-th ``go`` of each game (the
``go`` count restarts at ``ucinewgame``).  ``--log FILE`` appends every input line.
"""
from __future__ import annotations

import argparse
import random
import sys
import threading
import time


def rc(sq: int) -> tuple[int, int]:
    r, i = divmod(sq - 1, 4)
    return r, 2 * i + (1 if r % 2 == 0 else 0)


def sq(r: int, c: int) -> int:
    if not (0 <= r < 8 and 0 <= c < 8) or (r + c) % 2 == 0:
        return 0
    return r * 4 + c // 2 + 1


def parse_fen(text: str) -> tuple[dict[int, str], int]:
    """{square: 'b'|'w'|'B'|'W'} and the side to move (0 Black, 1 White)."""
    fields = text.strip().rstrip(".").split(":")
    turn = 0 if fields[0].strip().upper() == "B" else 1
    board: dict[int, str] = {}
    for f in fields[1:]:
        f = f.strip()
        if not f or f[0].upper() not in "BW":
            continue
        colour = f[0].lower()
        for item in f[1:].split(","):
            item = item.strip()
            if not item:
                continue
            king = item.upper().startswith("K")
            item = item.lstrip("Kk")
            if "-" in item:
                a, b = item.split("-")
                squares = range(int(a), int(b.lstrip("Kk")) + 1)
            else:
                squares = [int(item)]
            for s in squares:
                board[s] = colour.upper() if king else colour
    return board, turn


START = "B:W21-32:B1-12"


def legal_moves(board: dict[int, str], turn: int) -> list[tuple[int, ...]]:
    me = "b" if turn == 0 else "w"
    fwd = 1 if turn == 0 else -1
    caps: list[tuple[int, ...]] = []
    quiet: list[tuple[int, ...]] = []
    for s, p in board.items():
        if p.lower() != me:
            continue
        king = p.isupper()
        dirs = [(dr, dc) for dr in (1, -1) for dc in (1, -1) if king or dr == fwd]
        r, c = rc(s)
        for dr, dc in dirs:
            t = sq(r + dr, c + dc)
            if t and t not in board:
                quiet.append((s, t))

        def chains(at: int, taken: frozenset, path: tuple[int, ...]) -> None:
            r0, c0 = rc(at)
            found = False
            for dr, dc in dirs:
                over = sq(r0 + dr, c0 + dc)
                land = sq(r0 + 2 * dr, c0 + 2 * dc)
                if not over or not land or over in taken:
                    continue
                if board.get(over, "").lower() in ("", me):
                    continue
                if land in board and land != s:
                    continue
                found = True
                crown_row = 7 if turn == 0 else 0
                if not king and rc(land)[0] == crown_row:
                    caps.append(path + (land,))          # crowning ends the move
                else:
                    chains(land, taken | {over}, path + (land,))
            if not found and len(path) > 1:
                caps.append(path)

        chains(s, frozenset(), (s,))
    return sorted(caps) if caps else sorted(quiet)


def play(board: dict[int, str], turn: int, path: tuple[int, ...]) -> None:
    p = board.pop(path[0])
    for a, b in zip(path, path[1:]):
        ra, ca = rc(a)
        rb, cb = rc(b)
        if abs(ra - rb) == 2:
            board.pop(sq((ra + rb) // 2, (ca + cb) // 2), None)
    end = path[-1]
    if p.islower() and rc(end)[0] == (7 if turn == 0 else 0):
        p = p.upper()
    board[end] = p


def text(path: tuple[int, ...]) -> str:
    capture = abs(rc(path[0])[0] - rc(path[1])[0]) == 2
    return ("x" if capture else "-").join(str(s) for s in path)


def find(moves: list[tuple[int, ...]], mtext: str) -> tuple[int, ...]:
    squares = tuple(int(x) for x in mtext.replace("x", "-").split("-"))
    for m in moves:
        if m == squares:
            return m
    for m in moves:
        if m[0] == squares[0] and m[-1] == squares[-1]:
            return m
    raise ValueError(mtext)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--name", default="random_mover")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--fault", default="")
    ap.add_argument("--fault-at", type=int, default=1)
    ap.add_argument("--slow-ms", type=int, default=500)
    ap.add_argument("--log", default="")
    ap.add_argument("--score", type=int, default=None, help="report this score (cp) with every move")
    args = ap.parse_args()
    log = open(args.log, "a", encoding="utf-8") if args.log else None
    out = sys.stdout
    board, turn = parse_fen(START)
    rng = random.Random(args.seed)
    gos = 0
    hung = False

    lock = threading.Lock()
    stop = threading.Event()

    def say(line: str) -> None:
        with lock:
            out.write(line + "\n")
            out.flush()

    def answer_later(move: str, delay: float) -> None:
        if stop.wait(delay):
            time.sleep(0.03)      # a stopped search still takes a moment to unwind
        say(f"bestmove {move}")

    for raw in sys.stdin:
        line = raw.strip()
        if log:
            log.write(line + "\n")
            log.flush()
        words = line.split()
        if not words or hung:
            continue
        cmd = words[0]
        if cmd == "uci":
            if args.fault == "nouciok":
                continue
            say(f"id name {args.name}")
            say("id author arena tests")
            say("option name Hash type spin default 16 min 1 max 1024")
            say("option name NoProgressPlies type spin default 80 min 0 max 1000")
            say("option name Move Overhead type spin default 50 min 0 max 5000")
            say("uciok")
        elif cmd == "isready":
            say("readyok")
        elif cmd == "setoption":
            # Spin options take whole numbers: anything else is refused as a real engine does.
            name, _, value = line.partition(" name ")[2].partition(" value ")
            if value and not value.strip().lstrip("-").isdigit():
                say(f"info string error: setoption: option {name.strip()} needs a whole number, not {value!r}")
        elif cmd == "ucinewgame":
            gos = 0
            rng = random.Random(args.seed)
        elif cmd == "position":
            if len(words) > 1 and words[1] == "startpos":
                board, turn = parse_fen(START)
                rest = words[2:]
            else:
                i = words.index("moves") if "moves" in words else len(words)
                board, turn = parse_fen(" ".join(words[2:i]))
                rest = words[i:]
            if rest and rest[0] == "moves":
                for m in rest[1:]:
                    play(board, turn, find(legal_moves(board, turn), m))
                    turn = 1 - turn
        elif cmd == "go":
            gos += 1
            fault = args.fault if gos == args.fault_at or args.fault == "slow" else ""
            moves = legal_moves(board, turn)
            if fault == "crash":
                return 3
            if fault == "hang":
                hung = True           # from now on, silence: a truly stuck engine
                continue
            if args.fault == "async" and moves:
                stop.clear()
                threading.Thread(target=answer_later, args=(text(rng.choice(moves)), args.slow_ms / 1000),
                                 daemon=True).start()
                continue
            if fault == "slow":
                time.sleep(args.slow_ms / 1000)
            if fault == "illegal":
                say("bestmove 9-10")
            elif fault == "malformed":
                say("bestmove zz")
            elif fault == "none" or not moves:
                say("bestmove (none)")
            elif fault == "short":
                m = rng.choice(moves)
                say(f"bestmove {m[0]}x{m[-1]}")
            else:
                cp = rng.randint(-50, 50) if args.score is None else args.score
                say(f"info depth 1 score cp {cp} nodes {len(moves)}")
                say(f"bestmove {text(rng.choice(moves))}")
        elif cmd == "stop":
            stop.set()
        elif cmd == "quit":
            return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
