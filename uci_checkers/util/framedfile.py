"""Versioned, checksummed files: the framing the opening book and the evaluation weights files share.

File layout (little-endian)::

    magic                 bytes that name the kind of file (``b"UCKBOOK\\n"``, ``b"UCKWEIGHTS\\n"``)
    uint32                length of the header
    header                UTF-8 JSON (sorted keys, indent 1) holding at least ``format``, the version
    payload               the kind's own bytes
    32 bytes              SHA-256 of everything before it

A :class:`Framing` names one kind of file: :meth:`Framing.encode` makes its bytes, :meth:`Framing.read`
reads a file and checks its magic, size, checksum, header and format version.  Every refusal is the
kind's own error class with one sentence that names the file and what is wrong.  Needs neither numpy
nor numba: the engine checks its files before its kernels are ready.
"""
from __future__ import annotations

import hashlib
import json
import os
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

DIGEST_BYTES = 32


class Framed(NamedTuple):
    """A verified file: its header, its payload (the bytes between the header and the checksum) and its
    SHA-256 in hex."""

    header: dict[str, Any]
    payload: bytes
    checksum: str


@dataclass(frozen=True)
class Framing:
    """One kind of framed file: its ``magic``, the ``version`` this program writes and reads, the ``noun``
    that messages call it by (``opening book``) and the ``error`` class they are raised as."""

    magic: bytes
    version: int
    noun: str
    error: type[ValueError]

    def encode(self, header: dict[str, Any], payload: bytes) -> bytes:
        """The file bytes: ``header`` (``format`` set to this version) and ``payload``, framed and checksummed."""
        hbytes = json.dumps({**header, "format": self.version}, sort_keys=True, indent=1).encode("utf-8")
        body = self.magic + struct.pack("<I", len(hbytes)) + hbytes + payload
        return body + hashlib.sha256(body).digest()

    def read(self, path: str | os.PathLike) -> Framed:
        """Read and verify a file of this kind; raises ``error`` saying in one sentence what is wrong."""
        p = Path(path)
        try:
            data = p.read_bytes()
        except FileNotFoundError:
            raise self.error(f"{self.noun} {p} is missing") from None
        except OSError as exc:
            # Linux says IsADirectoryError, Windows PermissionError: ask the file system which it is.
            if p.is_dir():
                raise self.error(f"{self.noun} {p} is a directory") from None
            raise self.error(f"{self.noun} {p} cannot be read: {exc.strerror}") from None
        if not data.startswith(self.magic):
            article = "an" if self.noun[:1] in "aeiou" else "a"
            raise self.error(f"{p} is not {article} {self.noun} (bad magic)")
        if len(data) < len(self.magic) + 4 + DIGEST_BYTES:
            raise self.error(f"{self.noun} {p} is truncated")
        body, stored = data[:-DIGEST_BYTES], data[-DIGEST_BYTES:]
        digest = hashlib.sha256(body).digest()
        if digest != stored:
            raise self.error(f"{self.noun} {p} is corrupt (checksum mismatch)")
        (hlen,) = struct.unpack_from("<I", data, len(self.magic))
        hstart = len(self.magic) + 4
        try:
            header = json.loads(body[hstart:hstart + hlen].decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            raise self.error(f"{self.noun} {p} has an unreadable header") from None
        found = header.get("format") if isinstance(header, dict) else None
        if found != self.version:
            raise self.error(f"{self.noun} {p} has format {found!r}, this version reads {self.version}")
        return Framed(header, body[hstart + hlen:], digest.hex())
