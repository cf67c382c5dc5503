"""Shared test setup: the repo root on sys.path and the shared data directory.

Tests run with or without an install (``python -m pytest`` from a fresh clone).
The shared reference data lives beside the repository as ``../shared/data``
(CI copies it there); tests that need it skip with a clear reason only when it
is truly absent.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))
TESTS_DIR = Path(__file__).resolve().parent
if str(TESTS_DIR) not in sys.path:
    sys.path.insert(0, str(TESTS_DIR))  # so test modules can `import reference`


def _find_shared_data() -> Path | None:
    """``$UCI_CHECKERS_SHARED_DATA``, else ``<repo>/../shared/data``, else ``<repo>/shared/data``."""
    candidates = []
    env = os.environ.get("UCI_CHECKERS_SHARED_DATA")
    if env:
        candidates.append(Path(env))
    candidates += [REPO_ROOT.parent / "shared" / "data", REPO_ROOT / "shared" / "data"]
    for c in candidates:
        if (c / "perft.tsv").is_file():
            return c
    return None


SHARED_DATA = _find_shared_data()

# Endgame databases a user built in the standard place must not change what the tests see
# (subprocess engines inherit this); tests that want databases set EGDB Path themselves.
os.environ["UCI_CHECKERS_EGDB_DIR"] = str(TESTS_DIR / "no-such-egdb-directory")


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The directory holding perft.tsv, ballots and puzzles (skips when absent)."""
    if SHARED_DATA is None:
        pytest.skip(f"shared data not found: expected {REPO_ROOT.parent / 'shared' / 'data'} "
                    "(or set UCI_CHECKERS_SHARED_DATA)")
    return SHARED_DATA


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT
