"""The exit statuses of every ``uci-checkers`` tool, as names (their one home); :mod:`uci_checkers.util.commandline`
states the policy.

Constants only, in a module of their own, so that a kernel module can name them (``rules.perft`` does):
whatever a kernel module imports keys the compile cache, and the command-line helpers are edited too often
for that.
"""
from __future__ import annotations

__all__ = ["EXIT_OK", "EXIT_FAILED", "EXIT_USAGE", "EXIT_INTERRUPTED"]

EXIT_OK = 0             # done
EXIT_FAILED = 1         # the operation ran and failed (only where a tool documents it)
EXIT_USAGE = 2          # a usage or input error
EXIT_INTERRUPTED = 130  # Ctrl-C or SIGTERM (128 + SIGINT), finished work kept
