"""Opening book files: the versioned, checksummed format, its writer and its reader.

A book maps positions to moves, each with a value (centi-men from the side to move's
view, as the search scores them) and the depth behind that value.  The package ships
one, ``uci_checkers/data/opening.book``, grown by ``uci-checkers book build``.  Reading
needs neither numpy nor numba: the engine opens the book before its kernels are ready.

File layout (little-endian; the framing of :mod:`uci_checkers.util.framedfile`)::

    b"UCKBOOK\\n"          magic (8 bytes)
    uint32                length of the header
    header                UTF-8 JSON: format, positions, moves, payload bytes, provenance
    zlib(payload)         the positions, sorted by key:
                            uint32 N
                            N keys of 13 bytes (sorted)
                            N + 1 uint32 offsets of each position's moves in the move records
                            move records: int16 value, uint8 depth, uint8 n, n squares (the landing path)
    32 bytes              SHA-256 of everything before it

A position's key is its placement and side to move, exactly: the 32 squares of the
black pieces, of the white pieces and of the kings (a uint32 each) and the side to
move (one byte).  It does not depend on the Zobrist tables, so a book stays valid when
they change, and two positions never share a key.  A missing, truncated, corrupt or
other-format file raises :class:`BookError` with one sentence.
"""
from __future__ import annotations

import os
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Protocol

from ..rules.bitboard import SQUARE_TO_BIT
from ..rules.notation import format_fen
from ..util.atomicfile import write_bytes_atomic
from ..util.framedfile import Framing
from ..util.packagedata import data_path

MAGIC = b"UCKBOOK\n"
FORMAT_VERSION = 1
DEFAULT_NAME = "opening.book"
KEY_BYTES = 13
VALUE_LIMIT = 32000            # values are stored as int16: mate scores (30000 - plies) fit


class BookError(ValueError):
    """An opening book file that cannot be used (missing, truncated, corrupt, another format)."""


# The magic, header, checksum and format-version checks of the file (util.framedfile); the payload is the book's.
_FRAMING = Framing(MAGIC, FORMAT_VERSION, "opening book", BookError)


class _Placement(Protocol):
    black: int
    white: int
    kings: int
    turn: int


@dataclass(frozen=True)
class BookMove:
    """One move of a book position: its landing path, value (centi-men, side to move) and depth."""

    squares: tuple[int, ...]
    value: int
    depth: int

    def text(self) -> str:
        """Move text (``11-15``, ``15x24x31``): a move of more than one landing, or of two squares that
        are not neighbours, is a capture."""
        capture = len(self.squares) > 2 or abs(self.squares[0] - self.squares[1]) > 5
        return ("x" if capture else "-").join(str(s) for s in self.squares)


def default_path() -> Path:
    return data_path(DEFAULT_NAME)


# --------------------------------------------------------------------------------------------------
# Keys
# --------------------------------------------------------------------------------------------------
def _squares32(bb: int) -> int:
    """A padded bitboard (ghost bits after every 8 squares) as 32 bits, square s at bit s - 1."""
    return (bb & 0xFF) | ((bb >> 1) & 0xFF00) | ((bb >> 2) & 0xFF0000) | ((bb >> 3) & 0xFF000000)


def _padded(squares: int) -> int:
    out = 0
    for s in range(32):
        if squares >> s & 1:
            out |= 1 << SQUARE_TO_BIT[s]
    return out


def position_key(pos: _Placement) -> bytes:
    """The book key of a position (anything with ``black``, ``white``, ``kings`` bitboards and ``turn``)."""
    return struct.pack("<IIIB", _squares32(pos.black), _squares32(pos.white), _squares32(pos.kings), pos.turn)


def key_fen(key: bytes) -> str:
    """The FEN of a book key."""
    black, white, kings, turn = struct.unpack("<IIIB", key)
    return format_fen(_padded(black), _padded(white), _padded(kings), turn)


# --------------------------------------------------------------------------------------------------
# Writing
# --------------------------------------------------------------------------------------------------
def encode_book(entries: dict[bytes, list[BookMove]], provenance: dict[str, Any]) -> bytes:
    """The file bytes of a book (positions sorted by key; moves kept in the given order)."""
    keys = sorted(entries)
    records = bytearray()
    offsets = [0]
    moves = 0
    for key in keys:
        if len(key) != KEY_BYTES:
            raise ValueError(f"book keys have {KEY_BYTES} bytes, not {len(key)}")
        for m in entries[key]:
            if not 2 <= len(m.squares) <= 255 or not all(1 <= s <= 32 for s in m.squares):
                raise ValueError(f"bad book move path {m.squares!r}")
            value = max(-VALUE_LIMIT, min(VALUE_LIMIT, int(m.value)))
            records += struct.pack("<hBB", value, max(0, min(255, int(m.depth))), len(m.squares))
            records += bytes(m.squares)
            moves += 1
        offsets.append(len(records))
    payload = (struct.pack("<I", len(keys)) + b"".join(keys) + struct.pack(f"<{len(offsets)}I", *offsets)
               + bytes(records))
    header = {"positions": len(keys), "moves": moves, "payload_bytes": len(payload), "provenance": provenance}
    return _FRAMING.encode(header, zlib.compress(payload, 9))


def write_book(path: str | os.PathLike, entries: dict[bytes, list[BookMove]], provenance: dict[str, Any]) -> None:
    """Write a book atomically (a crash leaves the old file or the new one)."""
    write_bytes_atomic(Path(path), encode_book(entries, provenance))


# --------------------------------------------------------------------------------------------------
# Reading
# --------------------------------------------------------------------------------------------------
class Book:
    """A loaded, verified book: :meth:`probe` answers in a binary search over the sorted keys."""

    def __init__(self, path: str, header: dict[str, Any], checksum: str, payload: bytes) -> None:
        self.path = path
        self.header = header
        self.checksum = checksum
        (n,) = struct.unpack_from("<I", payload, 0)
        self.size = n
        self._keys = memoryview(payload)[4:4 + KEY_BYTES * n]
        start = 4 + KEY_BYTES * n
        self._offsets = struct.unpack_from(f"<{n + 1}I", payload, start)
        self._records = memoryview(payload)[start + 4 * (n + 1):]

    def __len__(self) -> int:
        return self.size

    def _key_at(self, i: int) -> bytes:
        return bytes(self._keys[KEY_BYTES * i:KEY_BYTES * (i + 1)])

    def _index(self, key: bytes) -> int:
        lo, hi = 0, self.size
        while lo < hi:
            mid = (lo + hi) // 2
            if self._key_at(mid) < key:
                lo = mid + 1
            else:
                hi = mid
        return lo if lo < self.size and self._key_at(lo) == key else -1

    def _moves_at(self, i: int) -> list[BookMove]:
        out = []
        at, end = self._offsets[i], self._offsets[i + 1]
        records = self._records
        while at < end:
            value, depth, n = struct.unpack_from("<hBB", records, at)
            out.append(BookMove(tuple(records[at + 4:at + 4 + n]), value, depth))
            at += 4 + n
        return out

    def probe_key(self, key: bytes) -> list[BookMove]:
        i = self._index(key)
        return self._moves_at(i) if i >= 0 else []

    def probe(self, pos: _Placement) -> list[BookMove]:
        """The book's moves for ``pos`` (best first), or ``[]`` when the book does not hold it."""
        return self.probe_key(position_key(pos))

    def items(self) -> Iterator[tuple[bytes, list[BookMove]]]:
        for i in range(self.size):
            yield self._key_at(i), self._moves_at(i)

    @property
    def moves(self) -> int:
        return int(self.header.get("moves", 0))


def load_book(path: str | os.PathLike) -> Book:
    """Read and verify a book file; :class:`BookError` says what is wrong in one sentence."""
    p = Path(path)
    header, packed, checksum = _FRAMING.read(p)
    try:
        payload = zlib.decompress(packed)
    except zlib.error:
        raise BookError(f"opening book {p} has an unreadable payload") from None
    n = struct.unpack_from("<I", payload, 0)[0] if len(payload) >= 4 else -1
    if (len(payload) != header.get("payload_bytes") or n != header.get("positions")
            or len(payload) < 4 + KEY_BYTES * n + 4 * (n + 1)):
        raise BookError(f"opening book {p} does not match its header")
    book = Book(str(p), header, checksum, payload)
    if book._offsets[n] != len(book._records):
        raise BookError(f"opening book {p} does not match its header")
    return book
