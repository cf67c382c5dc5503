"""Evaluation weights files: the versioned, checksummed data the evaluation kernels sum.

The package ships one file, ``uci_checkers/data/eval.weights``, written by
``uci-checkers train`` and loaded once per process (:func:`default_weights`);
the engine's ``EvalFile`` option and the tools' ``--weights`` load another
(:func:`load_weights`).  A missing, truncated, corrupt or mismatched file raises
:class:`WeightsError` with one clear sentence; there is no silent fallback to
other weights.

File layout (little-endian)::

    b"UCKWEIGHTS\\n"                 magic (11 bytes)
    uint32                          length of the header
    header                          UTF-8 JSON: format, layout, nf, unit, provenance
    int32 * (2 * nf)                opening weights, then endgame weights (1/unit centi-men)
    32 bytes                        SHA-256 of everything before it

The header's ``layout`` says which evaluation the file is for: :data:`EVALUATIONS`
maps every layout this version has to its evaluation (today one: ``"pattern"``,
the feature layout named in :mod:`uci_checkers.search.layouts`), and
a file with any other layout is refused.  An evaluation of another kind (a network)
adds its layout there and reads its own payload; the framing, the checksum and
the header are the same for all.  :func:`read_weights` checks a file without
loading numba (the engine does it when ``setoption name EvalFile`` arrives, while
its kernels may still compile); :func:`load_weights` also checks it against the
evaluation code itself.  The header's ``provenance`` records what the weights came
from (data shards and their digest, positions, seed, commit, losses), so a set can
be reproduced.
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
import struct
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from ..util.atomicfile import write_bytes_atomic
from .layouts import PATTERN_LAYOUT

MAGIC = b"UCKWEIGHTS\n"
FORMAT_VERSION = 1
DEFAULT_NAME = "eval.weights"

# The evaluations this version has, by the layout their weights files name.
EVALUATIONS: dict[str, str] = {PATTERN_LAYOUT: "pattern"}


class WeightsError(ValueError):
    """An evaluation weights file that cannot be used (missing, corrupt, other layout)."""


@dataclass(frozen=True)
class EvalWeights:
    """Weights as the kernels take them (``table``: int64, opening then endgame) and their header."""

    table: np.ndarray
    header: dict[str, Any] = field(default_factory=dict)
    checksum: str = ""             # SHA-256 (hex) stored in the file
    path: str = ""
    kind: str = "pattern"          # the evaluation the file is for (EVALUATIONS)

    def describe(self) -> str:
        """``/path/eval.weights (pattern evaluation, sha256 1a2b3c4d5e6f)``"""
        return f"{self.path} ({self.kind} evaluation, sha256 {self.checksum[:12]})"


def default_path() -> Path:
    return Path(str(resources.files("uci_checkers").joinpath("data", DEFAULT_NAME)))


def check_file(path: str | os.PathLike) -> tuple[dict[str, Any], bytes, str]:
    """Read a weights file and verify its framing and checksum (no numba needed: the engine calls
    this before it answers anything); returns (header, weight bytes, checksum)."""
    p = Path(path)
    try:
        data = p.read_bytes()
    except FileNotFoundError:
        raise WeightsError(f"evaluation weights file {p} is missing") from None
    except OSError as exc:
        raise WeightsError(f"evaluation weights file {p} cannot be read: {exc.strerror}") from None
    if not data.startswith(MAGIC):
        raise WeightsError(f"{p} is not an evaluation weights file (bad magic)")
    if len(data) < len(MAGIC) + 4 + 32:
        raise WeightsError(f"evaluation weights file {p} is truncated")
    body, stored = data[:-32], data[-32:]
    digest = hashlib.sha256(body).digest()
    if digest != stored:
        raise WeightsError(f"evaluation weights file {p} is corrupt (checksum mismatch)")
    (hlen,) = struct.unpack_from("<I", data, len(MAGIC))
    hstart = len(MAGIC) + 4
    try:
        header = json.loads(data[hstart:hstart + hlen].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise WeightsError(f"evaluation weights file {p} has an unreadable header") from None
    if not isinstance(header, dict) or header.get("format") != FORMAT_VERSION:
        raise WeightsError(f"evaluation weights file {p} has format {header.get('format')!r}, "
                           f"this version reads {FORMAT_VERSION}")
    return header, data[hstart + hlen:-32], digest.hex()


def read_weights(path: str | os.PathLike) -> EvalWeights:
    """Read and verify a weights file: framing, checksum, an evaluation this version has (by the header's
    layout) and a payload of the size the header gives.  Needs no numba; :class:`WeightsError` says what
    is wrong."""
    p = Path(path)
    if p.is_dir():
        raise WeightsError(f"evaluation weights file {p} is a directory")
    header, payload, checksum = check_file(p)
    layout, nf, unit = header.get("layout"), header.get("nf"), header.get("unit")
    kind = EVALUATIONS.get(layout) if isinstance(layout, str) else None
    if kind is None:
        raise WeightsError(f"evaluation weights file {p} was made for another evaluation, which this version "
                           f"does not have (layout {layout!r}, {nf} features)")
    if not (isinstance(nf, int) and nf > 0 and isinstance(unit, int) and unit > 0):
        raise WeightsError(f"evaluation weights file {p} has a bad header (nf {nf!r}, unit {unit!r})")
    if len(payload) != 2 * nf * 4:
        raise WeightsError(f"evaluation weights file {p} holds {len(payload)} bytes of weights, "
                           f"expected {2 * nf * 4}")
    table = np.frombuffer(payload, dtype="<i4").astype(np.int64)
    return EvalWeights(table, header, checksum, str(p), kind)


def check_usable(weights: EvalWeights) -> None:
    """Raise :class:`WeightsError` unless ``weights`` fit the evaluation code (layout, size, unit)."""
    from .evaluate import FEATURE_LAYOUT, NF, UNIT
    header = weights.header
    if header.get("layout") != FEATURE_LAYOUT or header.get("nf") != NF or header.get("unit") != UNIT \
            or weights.table.shape != (2 * NF,):
        raise WeightsError(f"evaluation weights file {weights.path} was made for another evaluation "
                           f"(layout {header.get('layout')!r}, {header.get('nf')} features)")


def load_weights(path: str | os.PathLike) -> EvalWeights:
    """Read and verify a weights file for this evaluation; :class:`WeightsError` says what is wrong."""
    weights = read_weights(path)
    check_usable(weights)
    return weights


def save_weights(path: str | os.PathLike, table: np.ndarray, provenance: dict[str, Any]) -> EvalWeights:
    """Write ``table`` (2*NF integers, 1/UNIT centi-men) atomically with its header and checksum."""
    from .evaluate import FEATURE_LAYOUT, NF, UNIT
    arr = np.asarray(table)
    if arr.shape != (2 * NF,):
        raise ValueError(f"weights table must have shape ({2 * NF},), not {arr.shape}")
    if np.abs(arr).max(initial=0) >= 2**31:
        raise ValueError("weights out of int32 range")
    header = {"format": FORMAT_VERSION, "layout": FEATURE_LAYOUT, "nf": NF, "unit": UNIT,
              "provenance": provenance}
    hbytes = json.dumps(header, sort_keys=True, indent=1).encode("utf-8")
    body = MAGIC + struct.pack("<I", len(hbytes)) + hbytes + arr.astype("<i4").tobytes()
    data = body + hashlib.sha256(body).digest()
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    write_bytes_atomic(p, data)
    return load_weights(p)


@functools.lru_cache(maxsize=1)
def default_weights() -> EvalWeights:
    """The package's weights (loaded and verified once per process)."""
    return load_weights(default_path())
