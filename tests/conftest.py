"""Shared test setup: the repo root on sys.path.

Tests run with or without an install (``python -m pytest`` from a fresh clone) and
are self-contained: the data they read lives in ``tests/data`` (small copies of the
project's reference files), fake engines in ``tests/engines``.
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


# Endgame databases a user built in the standard place must not change what the tests see
# (subprocess engines inherit this); tests that want databases set EGDB Path themselves.
os.environ["UCI_CHECKERS_EGDB_DIR"] = str(TESTS_DIR / "no-such-egdb-directory")


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT
