"""Slice files: the compressed, checksummed format, atomic writes, and loading a directory for probing.

One file per slice, ``<dir>/<slice name>.egdb`` (e.g. ``1m1k-0m2k.egdb``)::

    header (little-endian, HEADER.size bytes)
        magic "UCEGDB1\\n", format version, bm bk wm wk, flags (1: win/loss/draw only,
        no distances), number of positions,
        CRC-32 of the raw codes, CRC-32 and length of the payload,
        longest distance, wins, losses, draws, build seconds
    payload: the one-byte codes in index order, zlib-compressed (a slice without
        distances holds only 0, WLD_LOSS and WLD_WIN: well under a bit a position)

zlib's LZ77 + Huffman coding does the run-length work over the index order
(long runs of draws and of equal distances).  A file is written to a temporary
name, fsynced and renamed, so a crash leaves either the old file or the new one.
A truncated or corrupt file (wrong size, magic, slice, checksum) raises
:class:`EgdbFileError` naming the file and the reason.
"""
from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import numpy as np

from ..util.atomicfile import atomic_output
from ..util.cachedir import user_cache_dir
from .index import Slice, men_offsets, slice_size, slices_up_to
from .probe import assemble_table, empty_table

MAGIC = b"UCEGDB1\n"
FORMAT_VERSION = 1
HEADER = struct.Struct("<8sHBBBBHqIIqqqqqd")
SUFFIX = ".egdb"
ZLIB_LEVEL = 9
FLAG_NO_DISTANCES = 1


class EgdbFileError(Exception):
    """A slice file that is missing, truncated or corrupt; the message names the file and the reason."""


@dataclass(frozen=True)
class SliceInfo:
    """What a slice file's header says."""

    slice: Slice
    positions: int
    max_distance: int
    wins: int
    losses: int
    draws: int
    seconds: float
    file_bytes: int
    distances: bool                  # False: win/loss/draw only


def default_directory() -> Path:
    """``$UCI_CHECKERS_EGDB_DIR``, else ``$XDG_CACHE_HOME/uci_checkers/egdb`` (``~/.cache/...``)."""
    return user_cache_dir("egdb", "UCI_CHECKERS_EGDB_DIR")


def slice_path(directory: Path, s: Slice) -> Path:
    return Path(directory) / f"{s.name}{SUFFIX}"


def write_slice(directory: Path, s: Slice, codes: np.ndarray, max_distance: int, results: tuple[int, int, int],
                seconds: float, distances: bool = True) -> Path:
    """Compress and write one slice atomically (tmp + fsync + rename); returns the path."""
    raw = np.ascontiguousarray(codes, dtype=np.uint8).tobytes()
    payload = zlib.compress(raw, ZLIB_LEVEL)
    flags = 0 if distances else FLAG_NO_DISTANCES
    header = HEADER.pack(MAGIC, FORMAT_VERSION, s.bm, s.bk, s.wm, s.wk, flags, len(raw), zlib.crc32(raw),
                         zlib.crc32(payload), len(payload), int(max_distance), *(int(x) for x in results),
                         float(seconds))
    path = slice_path(directory, s)
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_output(path) as fh:
        fh.write(header)
        fh.write(payload)
    return path


def _parse_header(path: Path, data: bytes, expect: Optional[Slice]) -> tuple[SliceInfo, int, int, int]:
    if len(data) < HEADER.size:
        raise EgdbFileError(f"{path}: truncated ({len(data)} bytes, header needs {HEADER.size})")
    (magic, version, bm, bk, wm, wk, flags, positions, raw_crc, payload_crc, payload_len, max_d, wins, losses, draws,
     seconds) = HEADER.unpack_from(data)
    if magic != MAGIC:
        raise EgdbFileError(f"{path}: not an endgame database file (bad magic)")
    if version != FORMAT_VERSION:
        raise EgdbFileError(f"{path}: format version {version}, this program reads {FORMAT_VERSION}")
    s = Slice(bm, bk, wm, wk)
    if expect is not None and s != expect:
        raise EgdbFileError(f"{path}: holds slice {s}, expected {expect}")
    if len(data) != HEADER.size + payload_len:
        raise EgdbFileError(f"{path}: truncated or padded ({len(data)} bytes, expected {HEADER.size + payload_len})")
    info = SliceInfo(s, positions, max_d, wins, losses, draws, seconds, len(data), not flags & FLAG_NO_DISTANCES)
    return info, raw_crc, payload_crc, payload_len


def read_info(path: Path) -> SliceInfo:
    """The header of a slice file (checks magic, version and size, not the checksums)."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise EgdbFileError(f"{path}: cannot read ({exc.strerror or exc})") from None
    return _parse_header(path, data, None)[0]


def read_slice(directory: Path, s: Slice) -> tuple[np.ndarray, SliceInfo]:
    """The verified codes of slice ``s`` (uint8, index order) and its header; raises EgdbFileError."""
    path = slice_path(directory, s)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise EgdbFileError(f"{path}: missing") from None
    except OSError as exc:
        raise EgdbFileError(f"{path}: cannot read ({exc.strerror or exc})") from None
    info, raw_crc, payload_crc, _ = _parse_header(path, data, s)
    payload = memoryview(data)[HEADER.size:]
    if zlib.crc32(payload) != payload_crc:
        raise EgdbFileError(f"{path}: corrupt (payload checksum mismatch)")
    try:
        raw = zlib.decompress(payload)
    except zlib.error as exc:
        raise EgdbFileError(f"{path}: corrupt ({exc})") from None
    if len(raw) != info.positions or info.positions != slice_size(s):
        raise EgdbFileError(f"{path}: holds {len(raw)} positions, slice {s} has {slice_size(s)}")
    if zlib.crc32(raw) != raw_crc:
        raise EgdbFileError(f"{path}: corrupt (checksum of the values does not match)")
    return np.frombuffer(raw, dtype=np.uint8), info


@dataclass
class LoadedDatabase:
    """A probe table and what went into it."""

    table: np.ndarray
    pieces: int                      # largest complete piece count loaded (0: nothing)
    slices: list[Slice]
    problems: list[str]              # one line per file that could not be used


def load_directory(directory: Path, max_pieces: int) -> LoadedDatabase:
    """Load every slice with up to ``max_pieces`` pieces found in ``directory``.

    Loading stops below the first piece count with a missing or bad slice (a
    partial piece count would leave holes the search cannot tell from "not
    stored"); the bad files are listed in ``problems``.  Files simply absent at
    the first piece count give no problem: nothing was built there.
    """
    directory = Path(directory)
    loaded: dict[Slice, tuple[np.ndarray, np.ndarray]] = {}
    problems: list[str] = []
    complete = 0
    if not directory.is_dir():
        return LoadedDatabase(empty_table(), 0, [], [f"{directory}: no such directory"] if max_pieces else [])
    for pieces in range(2, max_pieces + 1):
        wanted = [s for s in slices_up_to(pieces) if s.pieces == pieces]
        present = [s for s in wanted if slice_path(directory, s).exists()]
        if not present:
            break
        batch = {}
        for s in wanted:
            try:
                codes, _ = read_slice(directory, s)
            except EgdbFileError as exc:
                problems.append(str(exc))
                continue
            batch[s] = (codes, men_offsets(s))
        if len(batch) != len(wanted):
            break
        loaded.update(batch)
        complete = pieces
    table = assemble_table(loaded) if loaded else empty_table()
    return LoadedDatabase(table, complete, list(loaded), problems)
