#!/usr/bin/env python3
"""A fake engine for the start position: ``go infinite`` reports ``info`` lines until ``stop``
and then answers ``bestmove 11-15``; any other ``go`` answers ``bestmove 9-13`` at once.
It logs every command it receives to ``ANALYSER_LOG`` when that is set."""
import os
import sys
import threading

lock = threading.Lock()
stop = threading.Event()
log = open(os.environ["ANALYSER_LOG"], "a") if os.environ.get("ANALYSER_LOG") else None


def say(line: str) -> None:
    with lock:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def analyse() -> None:
    depth = 0
    while not stop.wait(0.02):
        depth += 1
        say(f"info depth {depth} score cp 5 nodes {depth * 10} pv 11-15")
    say("bestmove 11-15")


for raw in sys.stdin:
    if log:
        log.write(raw)
        log.flush()
    words = raw.split()
    if not words:
        continue
    if words[0] == "uci":
        say("id name analyser\noption name Hash type spin default 16 min 1 max 1024\nuciok")
    elif words[0] == "isready":
        say("readyok")
    elif words[0] == "go" and "infinite" in words:
        stop.clear()
        threading.Thread(target=analyse, daemon=True).start()
    elif words[0] == "go":
        say("info depth 1 score cp 0 pv 9-13\nbestmove 9-13")
    elif words[0] == "stop":
        stop.set()
    elif words[0] == "quit":
        break
