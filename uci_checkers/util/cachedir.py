"""Where the package keeps what it builds for this user: ``$XDG_CACHE_HOME/uci_checkers`` (``~/.cache/...``).

The compile cache, the endgame databases and the built wine host each live in a folder below it, unless
their own environment variable names another place.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Mapping, Optional


def user_cache_dir(name: str, override_var: Optional[str] = None, environ: Optional[Mapping[str, str]] = None) -> Path:
    """``$<override_var>`` when it is set, else ``$XDG_CACHE_HOME/uci_checkers/<name>`` (``~/.cache/...``)."""
    environ = os.environ if environ is None else environ
    if override_var and environ.get(override_var):
        return Path(environ[override_var])
    xdg = environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(xdg) / "uci_checkers" / name
