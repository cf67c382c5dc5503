#!/usr/bin/env python3
"""A fake engine that answers the handshake, then floods ``info`` lines after ``go`` and
never sends ``bestmove`` (``stop`` is ignored too): a host must still forfeit it on time.
``quit`` ends it.  Pure Python, no package import: starts in milliseconds."""
import sys
import threading

flooding = threading.Event()
lock = threading.Lock()


def say(line: str) -> None:
    with lock:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def flood() -> None:
    n = 0
    while True:
        flooding.wait()
        # Batches, written as fast as the pipe takes them: the host's queue never runs dry.
        say("\n".join(f"info depth {k % 60 + 1} score cp 0 nodes {k} pv 11-15" for k in range(n, n + 200)))
        n += 200


threading.Thread(target=flood, daemon=True).start()
for raw in sys.stdin:
    cmd = raw.split()[:1]
    if cmd == ["uci"]:
        say("id name info_flood")
        say("option name Hash type spin default 16 min 1 max 1024")
        say("uciok")
    elif cmd == ["isready"]:
        say("readyok")
    elif cmd == ["go"]:
        flooding.set()
    elif cmd == ["quit"]:
        break
