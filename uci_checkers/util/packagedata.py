"""Where the files the package ships live (``uci_checkers/data/``): the one place that turns a data file's
name into its path, so a tool, the engine and the tests agree on it (``uci_checkers/data/README.md`` lists
the files and where each comes from)."""
from __future__ import annotations

from importlib import resources
from pathlib import Path


def data_path(name: str) -> Path:
    """The path of the shipped data file ``name`` (it need not exist: callers say what is missing)."""
    return Path(str(resources.files("uci_checkers").joinpath("data", name)))
