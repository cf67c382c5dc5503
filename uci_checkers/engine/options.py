"""The engine's options as ``uci`` announces them: :class:`OptionSpec` (type, bounds, parsing into a typed
value) and the list of specs the facade starts with.

Pure Python: importing it loads neither numpy nor numba.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any, Optional

from ..search.layouts import DEFAULT_NAME
from ..util.packagedata import data_path
from .timeman import DEFAULT_MOVE_OVERHEAD_MS

BOOK_MAX_VARIETY = 1000
EGDB_MAX_PIECES = 8             # uci_checkers.egdb.build.MAX_BUILD_PIECES (not imported: it loads numpy)
# search.weights.default_path(), the shipped network (weights itself is not imported: it loads numpy)
DEFAULT_EVAL_FILE = str(data_path(DEFAULT_NAME))
_ASCII_INT = re.compile(r"[+-]?[0-9]+")


class OptionError(ValueError):
    """An unknown option, or a value the option does not accept (the message says which and why)."""


# --------------------------------------------------------------------------------------------------
# Options
# --------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class OptionSpec:
    """One engine option as ``uci`` announces it."""

    name: str
    type: str                       # spin, check, combo, button, string
    default: Any = None
    min: Optional[int] = None
    max: Optional[int] = None
    vars: tuple[str, ...] = ()
    help: str = ""

    def parse(self, value: Optional[str]) -> Any:
        """The typed value for ``value`` text; raises :class:`OptionError`."""
        if self.type == "button":
            return None
        if value is None or (self.type != "string" and not value.strip()):
            raise OptionError(f"option {self.name} needs a value")
        text = value.strip()
        if self.type == "spin":
            if not _ASCII_INT.fullmatch(text):      # ASCII digits only: no '1_000', no Arabic-Indic digits
                raise OptionError(f"option {self.name} needs a whole number, not {text[:40]!r}")
            digits = text.lstrip("+-").lstrip("0")
            if len(digits) > 30:                     # far out of range (and int() of 4,300+ digits raises)
                raise OptionError(f"option {self.name} value {text[:40]}... is out of range {self.min}..{self.max}")
            number = int(text, 10)
            if not (self.min <= number <= self.max):
                raise OptionError(f"option {self.name} value {number} is out of range {self.min}..{self.max}")
            return number
        if self.type == "check":
            low = text.lower()
            if low not in ("true", "false"):
                raise OptionError(f"option {self.name} needs true or false, not {text[:40]!r}")
            return low == "true"
        if self.type == "combo":
            for var in self.vars:
                if var.lower() == text.lower():
                    return var
            raise OptionError(f"option {self.name} needs one of {', '.join(self.vars)}, not {text[:40]!r}")
        return value  # string: kept verbatim


# search.MAX_THREADS and search.tt.MAX_MB, repeated here because importing search loads numba,
# which must not happen before `uci` is answered.
_SEARCH_MAX_THREADS = 64
MAX_HASH_MB = 4096           # the Hash option's maximum, also the tools' --hash limit
MAX_CONTEMPT = 100           # search.alphabeta.MAX_CONTEMPT


def build_option_specs() -> list[OptionSpec]:
    specs = [
        OptionSpec("Hash", "spin", 16, 1, MAX_HASH_MB, help="transposition table size in MB"),
        OptionSpec("Clear Hash", "button", help="forget everything the search has learnt"),
        OptionSpec("Ponder", "check", False, help="the host may send go ponder (informational)"),
        OptionSpec("MultiPV", "spin", 1, 1, 64, help="number of best lines reported"),
        OptionSpec("Skill Level", "spin", 20, 0, 20, help="0 = random legal move ... 20 = full strength"),
        OptionSpec("Seed", "spin", 0, 0, 2**31 - 1, help="makes skill-level choices reproducible"),
        OptionSpec("Move Overhead", "spin", DEFAULT_MOVE_OVERHEAD_MS, 0, 10000,
                   help="ms kept back from the clock per move for communication delays"),
        OptionSpec("NoProgressPlies", "spin", 80, 0, 1000,
                   help="plies without a capture or man move that draw the game; 0 = rule off"),
        OptionSpec("UCI_AnalyseMode", "check", False, help="the host is analysing, not playing"),
        OptionSpec("Contempt", "spin", 0, -MAX_CONTEMPT, MAX_CONTEMPT,
                   help="centi-men a draw costs the engine in games (< 0: it seeks draws); 0 in analysis"),
        OptionSpec("EGDB Path", "string", "", help="endgame database directory (uci-checkers egdb build); "
                   "empty: the standard cache directory, used when present"),
        OptionSpec("EGDB Pieces", "spin", EGDB_MAX_PIECES, 0, EGDB_MAX_PIECES,
                   help="probe endgame databases up to this many pieces; 0 = off"),
        OptionSpec("EvalFile", "string", DEFAULT_EVAL_FILE,
                   help="evaluation weights file (uci-checkers train --out); its header says which evaluation "
                        "it is for; empty: the shipped file"),
        OptionSpec("OwnBook", "check", True, help="play moves from the opening book in games (see protocol.md)"),
        OptionSpec("BookFile", "string", "", help="opening book file (uci-checkers book build); "
                   "empty: the book in the package"),
        OptionSpec("BookVariety", "spin", 0, 0, BOOK_MAX_VARIETY,
                   help="centi-men below the best book move that a book move may be (chosen with Seed)"),
        OptionSpec("SearchParams", "string", "",
                   help="for tuning: search constants as NAME=VALUE entries (uci-checkers tune --list names "
                        "them); empty: the engine's own values"),
    ]
    specs.insert(1, OptionSpec("Threads", "spin", 1, 1, max(1, min(_SEARCH_MAX_THREADS, (os.cpu_count() or 1) * 2)),
                               help="search threads (lazy SMP); 1 keeps fixed-depth searches deterministic"))
    return specs
