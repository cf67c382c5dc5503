#!/usr/bin/env python3
"""A fake engine that answers ``uci`` and ``isready`` but ignores ``go``, ``stop`` and ``quit``,
and keeps running after its input ends: only a kill ends it.  With ``DEAF_PID_FILE`` set it
writes its process id there, so a test can check that nothing outlived the host."""
import os
import sys
import time

if os.environ.get("DEAF_PID_FILE"):
    with open(os.environ["DEAF_PID_FILE"], "w") as f:
        f.write(str(os.getpid()))
for raw in sys.stdin:
    cmd = raw.split()[:1]
    if cmd == ["uci"]:
        print("id name deaf\nuciok", flush=True)
    elif cmd == ["isready"]:
        print("readyok", flush=True)
while True:                     # input closed: still alive, still holding stdout
    time.sleep(1)
