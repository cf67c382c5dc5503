"""Slice files: the block-compressed, checksummed format, atomic writes, and opening a directory for probing.

One file per slice, ``<dir>/<slice name>.egdb`` (e.g. ``1m1k-0m2k.egdb``)::

    header (little-endian, HEADER.size bytes)
        magic "UCEGDB2\\n", format version, bm bk wm wk, flags (FLAG_NO_DISTANCES: win/loss/draw
        only; FLAG_NO_CAPTURES: capture positions left out), log2 positions per block,
        positions, blocks, CRC-32 of the values (every position, index order), CRC-32 of the
        block index, CRC-32 of the block data, bytes of block data, longest distance, wins,
        losses, draws, build seconds (wall, CPU), CRC-32 of the header itself
    block index at INDEX_AT: blocks + 1 int64 byte offsets into the block data
    block data: one zlib stream per block of 2**shift positions (the last one shorter),
        black to move first inside a block (:mod:`uci_checkers.egdb.codec`)

A position with a capture pending is not stored: its place holds the value
before it (a longer run for DEFLATE), and the probe computes it from its
captures (:func:`uci_checkers.egdb.probe.probe`).  The values' checksum covers
every position, so a file read back in full (:func:`read_slice`) proves those
computed values too.

Opening a file (:func:`open_slice`) maps it and checks its header, its size and
its block index: milliseconds, whatever its size; a block's own Adler-32 is
checked each time a probe decodes it.  ``egdb verify`` and the builder read
files in full and check everything.  A file is written to a temporary name,
fsynced and renamed, so a crash leaves either the old file or the new one.  A
truncated or corrupt file raises :class:`EgdbFileError` naming the file and the
reason.
"""
from __future__ import annotations

import mmap
import os
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import numpy as np

from ..rules import movegen as mg
from ..util.atomicfile import atomic_output
from ..util.cachedir import user_cache_dir
from ..util.jit import kernel
from .codec import deinterleave, encode_block
from .index import Slice, king_set_counts, men_offsets, slice_size, slices_up_to, unrank_position
from .probe import DEFAULT_CACHE_BYTES, FLAG_NO_CAPTURES, FLAG_NO_DISTANCES, NOT_FOUND, MappedSlice, \
    assemble_table, capture_value, empty_table, probe_indices

MAGIC = b"UCEGDB2\n"
FORMAT_VERSION = 2
HEADER = struct.Struct("<8sHBBBBHBBqqIIIqqqqqddI")
INDEX_AT = (HEADER.size + 7) & ~7
SUFFIX = ".egdb"
# 4,096 positions a block (a few hundred bytes to 2 kB compressed, 4 kB in the cache).  Measured on searches
# of 6-8 piece positions with 5 pieces: 4,096 gave 2.1 M nodes/CPU-s, 8,192 2.0 M, 16,384 1.7 M (a miss decodes
# a whole block), for files 9% and 4% larger than with 16,384
BLOCK_SHIFT = 12
RESOLVE_CHUNK = 1 << 20


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
    cpu_seconds: float = 0.0
    blocks: int = 0
    block_shift: int = BLOCK_SHIFT
    flags: int = 0
    values_crc: int = 0
    index_crc: int = 0
    data_crc: int = 0
    data_bytes: int = 0


def default_directory() -> Path:
    """``$UCI_CHECKERS_EGDB_DIR``, else ``$XDG_CACHE_HOME/uci_checkers/egdb`` (``~/.cache/...``)."""
    return user_cache_dir("egdb", "UCI_CHECKERS_EGDB_DIR")


def slice_path(directory: Path, s: Slice) -> Path:
    return Path(directory) / f"{s.name}{SUFFIX}"


# =============================================================================
# Kernels
# =============================================================================
@kernel
def capture_positions(bm, bk, wm, wk, offsets, nbk_sets, nwk_sets, out):
    """``out[i]`` = 1 where the side to move of index ``i`` has a capture (those are not stored)."""
    for i in range(out.shape[0]):
        black, white, kings, stm = unrank_position(np.int64(i), bm, bk, wm, wk, offsets, nbk_sets, nwk_sets)
        out[i] = 1 if mg.has_capture(black, white, kings, stm) else 0


@kernel
def stored_stream(codes, captures, shift, out):
    """The values as a file stores them: block order (black to move first), and a capture position's
    value replaced by the value stored before it in its block (the first stored one at a block's start)."""
    n = codes.shape[0]
    size = np.int64(1) << shift
    for start in range(0, n, size):
        count = min(size, n - start)
        half = (count + 1) >> 1
        prev = -1
        for p in range(count):
            o = start + (2 * p if p < half else 2 * (p - half) + 1)
            if captures[o] == 0:
                prev = codes[o]
                break
        if prev < 0:
            prev = 0
        for p in range(count):
            o = start + (2 * p if p < half else 2 * (p - half) + 1)
            if captures[o] == 0:
                prev = codes[o]
            out[start + p] = prev


@kernel
def resolve_range(lo, hi, bm, bk, wm, wk, offsets, nbk_sets, nwk_sets, eg, codes, wld):
    """Fill in the capture positions of ``codes[lo:hi]`` from their captures (``eg`` holds the smaller
    slices); returns the first index that could not be computed, or -1."""
    for i in range(lo, hi):
        black, white, kings, stm = unrank_position(np.int64(i), bm, bk, wm, wk, offsets, nbk_sets, nwk_sets)
        if mg.has_capture(black, white, kings, stm):
            code = capture_value(eg, black, white, kings, stm, wld)
            if code == NOT_FOUND:
                return i
            codes[i] = code
    return -1


# =============================================================================
# Writing
# =============================================================================
def write_slice(directory: Path, s: Slice, codes: np.ndarray, max_distance: int, results: tuple[int, int, int],
                seconds: float, distances: bool = True, cpu_seconds: float = 0.0,
                block_shift: int = BLOCK_SHIFT) -> Path:
    """Compress and write one slice atomically (tmp + fsync + rename); returns the path."""
    codes = np.ascontiguousarray(codes, dtype=np.uint8)
    n = codes.shape[0]
    offsets = men_offsets(s)
    nbk, nwk = king_set_counts(s)
    captures = np.zeros(n, dtype=np.uint8)
    capture_positions(s.bm, s.bk, s.wm, s.wk, offsets, nbk, nwk, captures)
    stream = np.empty(n, dtype=np.uint8)
    stored_stream(codes, captures, block_shift, stream)
    del captures
    size = 1 << block_shift
    blocks = [encode_block(stream[lo:lo + size]) for lo in range(0, n, size)]
    index = np.zeros(len(blocks) + 1, dtype="<i8")
    np.cumsum([len(b) for b in blocks], out=index[1:])
    data_crc = 0
    for b in blocks:
        data_crc = zlib.crc32(b, data_crc)
    flags = FLAG_NO_CAPTURES | (0 if distances else FLAG_NO_DISTANCES)
    fields = (MAGIC, FORMAT_VERSION, s.bm, s.bk, s.wm, s.wk, flags, block_shift, 0, n, len(blocks),
              zlib.crc32(codes), zlib.crc32(index.tobytes()), data_crc, int(index[-1]), int(max_distance),
              *(int(x) for x in results), float(seconds), float(cpu_seconds))
    header = HEADER.pack(*fields, 0)
    header = HEADER.pack(*fields, zlib.crc32(header[:-4]))
    path = slice_path(directory, s)
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_output(path) as fh:
        fh.write(header.ljust(INDEX_AT, b"\0"))
        fh.write(index.tobytes())
        for b in blocks:
            fh.write(b)
    return path


# =============================================================================
# Reading
# =============================================================================
def _parse_header(path: Path, data, size: int, expect: Optional[Slice]) -> SliceInfo:
    if size < INDEX_AT:
        raise EgdbFileError(f"{path}: truncated ({size} bytes, header needs {INDEX_AT})")
    raw = bytes(data[:HEADER.size])
    (magic, version, bm, bk, wm, wk, flags, shift, _, positions, blocks, values_crc, index_crc, data_crc,
     data_bytes, max_d, wins, losses, draws, seconds, cpu, header_crc) = HEADER.unpack(raw)
    if magic != MAGIC:
        if magic[:6] == MAGIC[:6]:
            raise EgdbFileError(f"{path}: format version {magic[6:7].decode(errors='replace')}, this program "
                                f"reads {FORMAT_VERSION} (build the databases again)")
        raise EgdbFileError(f"{path}: not an endgame database file (bad magic)")
    if version != FORMAT_VERSION:
        raise EgdbFileError(f"{path}: format version {version}, this program reads {FORMAT_VERSION}")
    if zlib.crc32(raw[:-4]) != header_crc:
        raise EgdbFileError(f"{path}: corrupt (header checksum mismatch)")
    s = Slice(bm, bk, wm, wk)
    if expect is not None and s != expect:
        raise EgdbFileError(f"{path}: holds slice {s}, expected {expect}")
    if not 4 <= shift <= 24 or positions != slice_size(s) or blocks != (positions + (1 << shift) - 1) >> shift:
        raise EgdbFileError(f"{path}: corrupt (header: {positions} positions in {blocks} blocks of 2**{shift}, "
                            f"slice {s} has {slice_size(s)})")
    expected = INDEX_AT + 8 * (blocks + 1) + data_bytes
    if size != expected:
        raise EgdbFileError(f"{path}: truncated or padded ({size} bytes, expected {expected})")
    return SliceInfo(s, positions, max_d, wins, losses, draws, seconds, size, not flags & FLAG_NO_DISTANCES, cpu,
                     blocks, shift, flags, values_crc, index_crc, data_crc, data_bytes)


def read_info(path: Path) -> SliceInfo:
    """The header of a slice file (checks magic, version, header checksum and size, not the data)."""
    path = Path(path)
    try:
        with open(path, "rb") as fh:
            head = fh.read(INDEX_AT)
            size = os.fstat(fh.fileno()).st_size
    except OSError as exc:
        raise EgdbFileError(f"{path}: cannot read ({exc.strerror or exc})") from None
    return _parse_header(path, head, size, None)


def _block_index(path: Path, data: np.ndarray, info: SliceInfo) -> np.ndarray:
    index = data[INDEX_AT:INDEX_AT + 8 * (info.blocks + 1)].view("<i8")
    if zlib.crc32(index) != info.index_crc:
        raise EgdbFileError(f"{path}: corrupt (block index checksum mismatch)")
    if index[0] != 0 or index[-1] != info.data_bytes or np.any(np.diff(index) < 6):
        raise EgdbFileError(f"{path}: corrupt (block index out of order)")
    return index


def _open_bytes(path: Path) -> tuple[mmap.mmap, np.ndarray]:
    try:
        with open(path, "rb") as fh:
            if os.fstat(fh.fileno()).st_size == 0:
                raise EgdbFileError(f"{path}: truncated (0 bytes)")
            mapping = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    except FileNotFoundError:
        raise EgdbFileError(f"{path}: missing") from None
    except OSError as exc:
        raise EgdbFileError(f"{path}: cannot read ({exc.strerror or exc})") from None
    return mapping, np.frombuffer(mapping, dtype=np.uint8)


def open_slice(directory: Path, s: Slice) -> tuple[MappedSlice, SliceInfo]:
    """Map the file of slice ``s`` for probing after checking its header, size and block index."""
    path = slice_path(directory, s)
    mapping, data = _open_bytes(path)
    info = _parse_header(path, data, data.shape[0], s)
    _block_index(path, data, info)
    index_at = INDEX_AT
    return MappedSlice(s, data, mapping, index_at, index_at + 8 * (info.blocks + 1), info.blocks, info.block_shift,
                       info.flags, info.positions, men_offsets(s)), info


def check_file(directory: Path, s: Slice) -> SliceInfo:
    """Check the file of slice ``s`` without decoding it: header, size, block index, block data checksum."""
    path = slice_path(directory, s)
    mapping, data = _open_bytes(path)
    try:
        info = _parse_header(path, data, data.shape[0], s)
        _block_index(path, data, info)
        if zlib.crc32(data[INDEX_AT + 8 * (info.blocks + 1):]) != info.data_crc:
            raise EgdbFileError(f"{path}: corrupt (block data checksum mismatch)")
    finally:
        del data
        try:
            mapping.close()
        except BufferError:
            pass
    return info


def probe_slice(directory: Path, s: Slice, smaller: dict[Slice, tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    """Every value of slice ``s`` read the way the search reads it: its file mapped, each position
    probed (capture positions computed through ``smaller``, the raw values of the slices they lead into)."""
    mapped, info = open_slice(directory, s)
    eg = assemble_table(smaller, [mapped])
    out = np.empty(info.positions, dtype=np.int64)
    nbk, nwk = king_set_counts(s)
    for lo in range(0, info.positions, RESOLVE_CHUNK):
        hi = min(info.positions, lo + RESOLVE_CHUNK)
        probe_indices(eg, s.bm, s.bk, s.wm, s.wk, mapped.offsets, nbk, nwk, np.arange(lo, hi, dtype=np.int64),
                      out[lo:hi])
    if np.any(out < 0):
        raise EgdbFileError(f"{slice_path(directory, s)}: corrupt (a block does not decode)")
    return out.astype(np.uint8)


def read_stored(directory: Path, s: Slice) -> tuple[np.ndarray, SliceInfo]:
    """The stored values of slice ``s`` in index order (capture positions hold fillers), every checksum
    but the values' checked; raises EgdbFileError."""
    path = slice_path(directory, s)
    mapping, data = _open_bytes(path)
    try:
        info = _parse_header(path, data, data.shape[0], s)
        index = _block_index(path, data, info)
        blocks = data[INDEX_AT + 8 * (info.blocks + 1):]
        if zlib.crc32(blocks) != info.data_crc:
            raise EgdbFileError(f"{path}: corrupt (block data checksum mismatch)")
        out = np.empty(info.positions, dtype=np.uint8)
        size = 1 << info.block_shift
        for b in range(info.blocks):
            lo = b * size
            count = min(size, info.positions - lo)
            try:
                block = zlib.decompress(blocks[index[b]:index[b + 1]])
            except zlib.error as exc:
                raise EgdbFileError(f"{path}: corrupt (block {b}: {exc})") from None
            if len(block) != count:
                raise EgdbFileError(f"{path}: corrupt (block {b} holds {len(block)} positions, not {count})")
            out[lo:lo + count] = deinterleave(np.frombuffer(block, dtype=np.uint8))
        del blocks, index, data
    finally:
        try:
            mapping.close()
        except BufferError:
            pass   # a view is still alive somewhere: the mapping goes with it
    return out, info


def read_slice(directory: Path, s: Slice, eg: np.ndarray) -> tuple[np.ndarray, SliceInfo]:
    """Every value of slice ``s`` (uint8, index order) and its header, checked against the values'
    checksum.  ``eg`` must hold the slices its captures lead into (those compute the capture positions);
    raises EgdbFileError."""
    codes, info = read_stored(directory, s)
    if info.flags & FLAG_NO_CAPTURES:
        offsets = men_offsets(s)
        nbk, nwk = king_set_counts(s)
        wld = not info.distances
        for lo in range(0, info.positions, RESOLVE_CHUNK):
            bad = resolve_range(lo, min(info.positions, lo + RESOLVE_CHUNK), s.bm, s.bk, s.wm, s.wk, offsets, nbk,
                                nwk, eg, codes, wld)
            if bad >= 0:
                raise EgdbFileError(f"{slice_path(directory, s)}: position {bad} leads into a slice that is not "
                                    f"loaded")
    if zlib.crc32(codes) != info.values_crc:
        raise EgdbFileError(f"{slice_path(directory, s)}: corrupt (checksum of the values does not match)")
    return codes, info


@dataclass
class LoadedDatabase:
    """A probe table and what went into it."""

    table: np.ndarray
    pieces: int                      # largest complete piece count loaded (0: nothing)
    slices: list[Slice]
    problems: list[str]              # one line per file that could not be used
    file_bytes: int = 0


def load_directory(directory: Path, max_pieces: int, cache_bytes: int = DEFAULT_CACHE_BYTES) -> LoadedDatabase:
    """Map every slice with up to ``max_pieces`` pieces found in ``directory`` into one probe table.

    Loading stops below the first piece count with a missing or bad slice (a
    partial piece count would leave holes the search cannot tell from "not
    stored"); the bad files are listed in ``problems``.  Files simply absent at
    the first piece count give no problem: nothing was built there.
    """
    directory = Path(directory)
    loaded: list[MappedSlice] = []
    problems: list[str] = []
    complete = 0
    total = 0
    if not directory.is_dir():
        return LoadedDatabase(empty_table(), 0, [], [f"{directory}: no such directory"] if max_pieces else [])
    for pieces in range(2, max_pieces + 1):
        wanted = [s for s in slices_up_to(pieces) if s.pieces == pieces]
        present = [s for s in wanted if slice_path(directory, s).exists()]
        if not present:
            break
        batch = []
        size = 0
        for s in wanted:
            try:
                mapped, info = open_slice(directory, s)
            except EgdbFileError as exc:
                problems.append(str(exc))
                continue
            batch.append(mapped)
            size += info.file_bytes
        if len(batch) != len(wanted):
            break
        loaded += batch
        total += size
        complete = pieces
    table = assemble_table(mapped=loaded, cache_bytes=cache_bytes) if loaded else empty_table()
    return LoadedDatabase(table, complete, [m.slice for m in loaded], problems, total)
