"""Run a ``uci-checkers`` tool in a child process and interrupt it (shared by the tools' interrupt tests)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def interrupt_tool(args: list[str], after: float, signum: int = signal.SIGINT,
                   timeout: float = 30) -> tuple[int, str, str]:
    """Start ``python -m uci_checkers ARGS``, send ``signum`` after ``after`` seconds; (returncode, out, err)."""
    proc = subprocess.Popen([sys.executable, "-m", "uci_checkers", *args], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(REPO)})
    try:
        time.sleep(after)
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return proc.returncode, out, err
