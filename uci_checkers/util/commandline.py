"""What every command-line tool shares: the exit statuses, the argument parser that reports a usage error in
one line, ``--option NAME=VALUE`` parsing, the output-path check made before any work, and the notice printed
while a first run compiles the kernels.

Exit statuses, the same for every ``uci-checkers`` tool (named in :mod:`uci_checkers.util.exitcodes`, where
every module imports them from):

* ``0`` (:data:`EXIT_OK`): done;
* ``1`` (:data:`EXIT_FAILED`): the operation ran and failed, only where a tool documents it (``egdb verify``
  found bad slices, ``checkerboard build`` could not compile, ``analyse`` lost its engine, ``train-net``
  fitted a network beyond the kernels' integer ranges, ...);
* ``2`` (:data:`EXIT_USAGE`): a usage or input error (a bad flag or value, a missing or unreadable file, an
  engine that cannot start, a backend that is not installed), reported before any work where it can be;
* ``130`` (:data:`EXIT_INTERRUPTED`): interrupted by Ctrl-C or SIGTERM, finished work kept.

Every error is one line on stderr that names the tool (``uci-checkers TOOL: what is wrong``), never a traceback.
"""
from __future__ import annotations

import argparse
import os
import sys
import threading
from typing import Any, Callable, NoReturn, Optional, Union

from .exitcodes import EXIT_OK, EXIT_USAGE

__all__ = ["ToolParser", "parse_option_args", "COMPILING_NOTICE", "announce_if_slow", "check_output_path"]


class ToolParser(argparse.ArgumentParser):
    """``argparse`` with the tools' convention: a usage error is one line on stderr and exit status 2
    (argparse itself prints the whole usage first).  Sub-command parsers are of this class too."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: {message} (--help for usage)\n")

    def parse_or_status(self, argv: Optional[list[str]]) -> Union[argparse.Namespace, int]:
        """``parse_args``, but ``--help`` (0) or a usage error (2, its line printed) comes back as the exit
        status instead of raising SystemExit, for a ``main`` that returns its status (tests call it)."""
        try:
            return self.parse_args(argv)
        except SystemExit as exc:
            return int(exc.code or EXIT_OK)


def os_error_text(exc: OSError) -> str:
    """An OSError in one line for the user (``PATH: Permission denied``), never ``[Errno n] ...``."""
    where = f"{exc.filename}: " if exc.filename else ""
    return f"{where}{exc.strerror or exc}"


def parse_option_args(items: list[str]) -> dict[str, str]:
    """``--option NAME=VALUE`` arguments of the tool subcommands as a dict; ValueError names a bad one."""
    options = {}
    for item in items:
        if "=" not in item:
            raise ValueError(f"--option needs NAME=VALUE, not {item!r}")
        name, value = item.split("=", 1)
        options[name.strip()] = value.strip()
    return options


# The measured first-start compile time (README, "Two commands", says how it was measured); README.md and
# protocol.md quote the same words (tests/test_fresh_machine.py checks it).
FIRST_COMPILE_TIME = "about 30 s"
COMPILING_NOTICE = f"compiling the search kernels (a first run takes {FIRST_COMPILE_TIME})..."


def announce_if_slow(wait: Callable[[], Any], message: str, after: float = 1.0) -> Any:
    """``wait()``; print ``message`` on stderr if it has not returned after ``after`` seconds
    (so a cold compile is never a silent pause)."""
    timer = threading.Timer(after, lambda: print(message, file=sys.stderr, flush=True))
    timer.daemon = True
    timer.start()
    try:
        return wait()
    finally:
        timer.cancel()


def check_output_path(path: str, what: str) -> None:
    """Raise ValueError (one clear line) unless ``path`` can be written: call it before any work.

    The directory must exist and be writable, and ``path`` must not be a directory or a
    read-only file.  Nothing is created.
    """
    if not path:
        raise ValueError(f"{what}: empty file name")
    if os.path.isdir(path):
        raise ValueError(f"{what} {path!r} is a directory")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise ValueError(f"{what} {path!r}: directory {folder!r} does not exist")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise ValueError(f"{what} {path!r}: directory {folder!r} is not writable")
    if os.path.exists(path) and not os.access(path, os.W_OK):
        raise ValueError(f"{what} {path!r} is not writable")
