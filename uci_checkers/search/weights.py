"""Evaluation weights files: the versioned, checksummed data the evaluation kernels sum.

The package ships two files in ``uci_checkers/data``: the network written by ``uci-checkers train-net``
(named by :data:`uci_checkers.search.layouts.DEFAULT_NAME`), the default evaluation, loaded once per
process (:func:`default_weights`); and ``eval-w5.weights``, the pattern tables written by
``uci-checkers train`` (:func:`pattern_path`, :func:`pattern_weights`), which the eleven-man deck is made
with and any user may select.
The engine's ``EvalFile`` option and the tools' ``--weights`` load either, or another file
(:func:`load_weights`).  A missing, truncated, corrupt or mismatched file raises
:class:`WeightsError` with one clear sentence; there is no silent fallback to other weights.

File layout (little-endian; the framing of :mod:`uci_checkers.util.framedfile`)::

    b"UCKWEIGHTS\\n"                 magic (11 bytes)
    uint32                          length of the header
    header                          UTF-8 JSON: format, layout, nf, unit, provenance
    int32 * n                       the weights (see below)
    32 bytes                        SHA-256 of everything before it

The header's ``layout`` says which evaluation the file is for, and so its kind:
:data:`EVALUATIONS` maps every layout this version has (named in :mod:`uci_checkers.search.layouts`)
to its kind, and a file with any other layout is refused.

* ``pattern``: the pattern tables of :mod:`uci_checkers.search.evaluate` (header ``nf`` and
  ``unit``): ``2 * nf`` weights, opening and endgame interleaved, in 1/unit centi-men;
* ``network``: the network of :mod:`uci_checkers.search.nnue` (header ``size``): its quantised weights
  in the order that module gives, ``nnue.NET_SIZES[layout]`` of them (one first layer, or one per
  game phase).

:func:`read_weights` checks a file without loading numba (the engine does it when
``setoption name EvalFile`` arrives, while its kernels may still compile); :func:`load_weights`
also checks it against the evaluation code itself.  The header's ``provenance`` records what the
weights came from (data shards and their digest, positions, seed, commit, losses), so a set can
be reproduced.
"""
from __future__ import annotations

import functools
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..util.atomicfile import write_bytes_atomic
from ..util.framedfile import Framed, Framing
from ..util.packagedata import data_path
from .layouts import DEFAULT_NAME, NETWORK_LAYOUT, PATTERN_LAYOUT, PATTERN_NAME, PHASE_NETWORK_LAYOUT

MAGIC = b"UCKWEIGHTS\n"
FORMAT_VERSION = 1
KIND_PATTERN = "pattern"
KIND_NETWORK = "network"

# The evaluations this version has, by the layout their weights files name.
EVALUATIONS: dict[str, str] = {PATTERN_LAYOUT: KIND_PATTERN, NETWORK_LAYOUT: KIND_NETWORK,
                                PHASE_NETWORK_LAYOUT: KIND_NETWORK}


class WeightsError(ValueError):
    """An evaluation weights file that cannot be used (missing, corrupt, other layout)."""


# The magic, header, checksum and format-version checks of the file (util.framedfile); the payload is the weights.
_FRAMING = Framing(MAGIC, FORMAT_VERSION, "evaluation weights file", WeightsError)


@dataclass(frozen=True)
class EvalWeights:
    """Weights as the kernels take them and their header.

    ``kind`` ``patterns``: ``table`` is int64 (opening and endgame interleaved); ``network``:
    ``table`` is the int32 net array of :mod:`uci_checkers.search.nnue`."""

    table: np.ndarray
    header: dict[str, Any] = field(default_factory=dict)
    checksum: str = ""             # SHA-256 (hex) stored in the file
    path: str = ""
    kind: str = KIND_PATTERN       # the evaluation the file is for (EVALUATIONS)

    def describe(self) -> str:
        """``/path/eval-w5.weights (pattern evaluation, sha256 1a2b3c4d5e6f)``"""
        return f"{self.path} ({self.kind} evaluation, sha256 {self.checksum[:12]})"


def default_path() -> Path:
    """The shipped network (kind network), the default evaluation."""
    return data_path(DEFAULT_NAME)


def pattern_path() -> Path:
    """The shipped pattern tables (kind pattern): ``load_weights`` it to search with them."""
    return data_path(PATTERN_NAME)


def existing_output(path: str | os.PathLike) -> str:
    """Why a training tool must not write ``path`` without being told to ("" when the file does not exist):
    the same sentence for ``train`` and ``train-net``, naming the shipped files as such."""
    p = Path(path)
    if not p.exists():
        return ""
    shipped = " (the shipped weights)" if p.resolve() in (default_path().resolve(), pattern_path().resolve()) else ""
    return f"--out {p} exists{shipped}: give another file, or --overwrite to replace it"


def check_file(path: str | os.PathLike) -> Framed:
    """Read a weights file and verify its framing and checksum (no numba needed: the engine calls
    this before it answers anything); returns (header, weight bytes, checksum)."""
    return _FRAMING.read(path)


def read_weights(path: str | os.PathLike) -> EvalWeights:
    """Read and verify a weights file: framing, checksum, an evaluation this version has (by the header's
    layout) and a payload of the size the header gives.  Needs no numba; :class:`WeightsError` says what
    is wrong."""
    p = Path(path)
    header, payload, checksum = check_file(p)
    layout = header.get("layout")
    kind = EVALUATIONS.get(layout) if isinstance(layout, str) else None
    if kind is None:
        raise WeightsError(f"evaluation weights file {p} was made for another evaluation, which this version "
                           f"does not have (layout {layout!r})")
    if kind == KIND_NETWORK:
        size = header.get("size")
        if not (isinstance(size, int) and size > 0):
            raise WeightsError(f"evaluation weights file {p} has a bad header (size {size!r})")
        if len(payload) != size * 4:
            raise WeightsError(f"evaluation weights file {p} holds {len(payload) // 4} network weights, "
                               f"expected {size}")
        return EvalWeights(np.frombuffer(payload, dtype="<i4").astype(np.int32), header, checksum, str(p), kind)
    nf, unit = header.get("nf"), header.get("unit")
    if not (isinstance(nf, int) and nf > 0 and isinstance(unit, int) and unit > 0):
        raise WeightsError(f"evaluation weights file {p} has a bad header (nf {nf!r}, unit {unit!r})")
    if len(payload) != 2 * nf * 4:
        raise WeightsError(f"evaluation weights file {p} holds {len(payload)} bytes of weights, "
                           f"expected {2 * nf * 4}")
    table = np.frombuffer(payload, dtype="<i4").astype(np.int64)
    return EvalWeights(table, header, checksum, str(p), kind)


def check_usable(weights: EvalWeights) -> None:
    """Raise :class:`WeightsError` unless ``weights`` fit the evaluation code (layout, size, unit; a
    network's weights also the bounds that keep the kernels' arithmetic exact)."""
    header = weights.header
    if weights.kind == KIND_NETWORK:
        from . import nnue
        size = nnue.NET_SIZES[header.get("layout")]
        if header.get("size") != size or weights.table.shape != (size,):
            raise WeightsError(f"evaluation weights file {weights.path} holds {weights.table.size} network "
                               f"weights, expected {size}")
        try:
            nnue.check_ranges(weights.table)
        except ValueError as exc:
            raise WeightsError(f"evaluation weights file {weights.path} holds an unusable network: {exc}") from None
        return
    from .evaluate import FEATURE_LAYOUT, NF, UNIT
    if header.get("layout") != FEATURE_LAYOUT or header.get("nf") != NF or header.get("unit") != UNIT \
            or weights.table.shape != (2 * NF,):
        raise WeightsError(f"evaluation weights file {weights.path} was made for another evaluation "
                           f"(layout {header.get('layout')!r}, {header.get('nf')} features)")


def load_weights(path: str | os.PathLike) -> EvalWeights:
    """Read and verify a weights file of either kind; :class:`WeightsError` says what is wrong."""
    weights = read_weights(path)
    check_usable(weights)
    return weights


def _write(path: str | os.PathLike, header: dict[str, Any], arr: np.ndarray) -> EvalWeights:
    if np.abs(arr.astype(np.int64)).max(initial=0) >= 2**31:
        raise ValueError("weights out of int32 range")
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    write_bytes_atomic(p, _FRAMING.encode(header, arr.astype("<i4").tobytes()))
    return load_weights(p)


def save_weights(path: str | os.PathLike, table: np.ndarray, provenance: dict[str, Any]) -> EvalWeights:
    """Write a pattern ``table`` (2*NF integers, 1/UNIT centi-men) atomically with its header and checksum."""
    from .evaluate import FEATURE_LAYOUT, NF, UNIT
    arr = np.asarray(table)
    if arr.shape != (2 * NF,):
        raise ValueError(f"weights table must have shape ({2 * NF},), not {arr.shape}")
    header = {"layout": FEATURE_LAYOUT, "nf": NF, "unit": UNIT, "provenance": provenance}
    return _write(path, header, arr)


def save_network(path: str | os.PathLike, net: np.ndarray, provenance: dict[str, Any]) -> EvalWeights:
    """Write a quantised network (one first layer or one per game phase: ``nnue.net_size``) atomically with
    its header and checksum; ValueError if the weights do not fit the kernels' exact arithmetic
    (``nnue.check_ranges``)."""
    from . import nnue
    arr = np.asarray(net)
    nnue.check_ranges(arr)
    layout = nnue.LAYOUT if nnue.first_layers(arr) == 1 else nnue.PHASE_LAYOUT
    header = {"layout": layout, "size": arr.size, "provenance": provenance}
    return _write(path, header, arr)


@functools.lru_cache(maxsize=1)
def default_weights() -> EvalWeights:
    """The package's default evaluation, the network (loaded and verified once per process)."""
    return load_weights(default_path())


@functools.lru_cache(maxsize=1)
def pattern_weights() -> EvalWeights:
    """The package's pattern tables (loaded and verified once per process)."""
    return load_weights(pattern_path())
