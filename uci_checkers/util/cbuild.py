"""The C programs under ``bridge/``: where their sources are, compiling them, reading a Windows DLL's header.

Two tools build C code of this repository: ``uci-checkers checkerboard`` (the bridge DLL,
``bridge/checkerboard/``) and ``uci-checkers cbengine`` (the wine host ``bridge/cbhost/``,
built on demand).  Both compile through :func:`compile_c`: the compiler is looked up first
(one line naming the package to install when it is missing), runs under a deadline, and writes
a temporary file beside the output that replaces it only when complete, so a half-written
program is never left where a tool would run it.  :func:`pe_header` reads what the tools need
to know about a Windows DLL before loading it: its machine (x64 or 32-bit x86) and its exports.
"""
from __future__ import annotations

import os
import shutil
import struct
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

__all__ = ["CBuildError", "WINDOWS_CC", "COMMON_FLAGS", "bridge_root", "default_compiler", "compile_c",
           "native_link_flags", "PeHeader", "pe_header"]

WINDOWS_CC = "x86_64-w64-mingw32-gcc"
COMMON_FLAGS = ["-std=c99", "-O2", "-Wall", "-Wextra", "-Wno-format-truncation"]
COMPILE_TIMEOUT_S = 300

PE_MACHINE_AMD64 = 0x8664
PE_MACHINE_I386 = 0x14C
PE_MACHINE_ARM64 = 0xAA64
_MACHINE_NAMES = {PE_MACHINE_AMD64: "x64", PE_MACHINE_I386: "32-bit x86", PE_MACHINE_ARM64: "ARM64"}


class CBuildError(Exception):
    """A C program could not be built, or a binary could not be read (the message says why, in one line)."""


class DllReadError(CBuildError):
    """A file given as a Windows DLL cannot be read or is none (an input error, not a failed build)."""


def bridge_root() -> Path:
    """``bridge/`` of the checkout this package is imported from (the C sources are not installed)."""
    here = Path(__file__).resolve().parents[2] / "bridge"
    if not (here / "checkerboard" / "board.c").is_file():
        raise CBuildError(f"the C sources are not at {here}: run this from a checkout of the repository "
                          "(pip install -e .)")
    return here


def default_compiler(target: str) -> str:
    """The C compiler for ``windows`` (mingw-w64, x64) or ``native`` (``$CC``, else ``cc``)."""
    if target == "windows":
        if shutil.which(WINDOWS_CC):
            return WINDOWS_CC
        if os.name == "nt" and shutil.which("gcc"):
            return "gcc"        # MSYS2's mingw-w64 gcc on Windows itself
        return WINDOWS_CC
    return os.environ.get("CC", "cc")


def compile_c(command: list[str], output: Path) -> None:
    """Run a compiler command whose output argument is ``@OUT@``; ``output`` is replaced only on success."""
    output = Path(output)
    tmp = output.with_name(f".{output.name}.{os.getpid()}.tmp")
    command = [tmp.as_posix() if part == "@OUT@" else part for part in command]
    if shutil.which(command[0]) is None:
        raise CBuildError(f"compiler {command[0]!r} not found"
                          + (" (Debian/Ubuntu: apt-get install gcc-mingw-w64-x86-64)"
                             if command[0] == WINDOWS_CC else ""))
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=COMPILE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        tmp.unlink(missing_ok=True)
        raise CBuildError(f"{command[0]} did not finish within {COMPILE_TIMEOUT_S} s") from None
    if done.returncode != 0:
        tmp.unlink(missing_ok=True)
        first = (done.stderr.strip().splitlines() or ["(no message)"])
        raise CBuildError(f"{command[0]} failed: " + " | ".join(first[:6]))
    with open(tmp, "rb") as f:
        os.fsync(f.fileno())
    os.replace(tmp, output)


def native_link_flags() -> list[str]:
    """What a native program or library of the bridge links besides its objects (threads, dlopen)."""
    return ["-pthread"] + (["-ldl"] if sys.platform.startswith("linux") else [])


@dataclass(frozen=True)
class PeHeader:
    """What a Windows DLL says about itself: its machine type and exported names."""

    machine: int
    exports: tuple[str, ...]

    @property
    def machine_name(self) -> str:
        return _MACHINE_NAMES.get(self.machine, f"machine {self.machine:#06x}")

    @property
    def is_x64(self) -> bool:
        return self.machine == PE_MACHINE_AMD64


def pe_header(path: Path) -> PeHeader:
    """The machine and export names of a Windows DLL, read from its PE header and export directory.

    Raises :class:`DllReadError` when the file cannot be read or is no Windows DLL (the user's input)."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise DllReadError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        if data[:2] != b"MZ":
            raise ValueError("no MZ header")
        pe = struct.unpack_from("<I", data, 0x3C)[0]
        if data[pe:pe + 4] != b"PE\0\0":
            raise ValueError("no PE signature")
        machine, n_sections = struct.unpack_from("<HH", data, pe + 4)
        optional_size, = struct.unpack_from("<H", data, pe + 20)
        optional = pe + 24
        magic, = struct.unpack_from("<H", data, optional)
        directories = optional + (112 if magic == 0x20B else 96)
        export_rva, export_size = struct.unpack_from("<II", data, directories)
        if export_rva == 0:
            return PeHeader(machine, ())
        sections = []
        table = optional + optional_size
        for i in range(n_sections):
            vsize, vaddr, raw_size, raw_ptr = struct.unpack_from("<IIII", data, table + 40 * i + 8)
            sections.append((vaddr, max(vsize, raw_size), raw_ptr))

        def offset(rva: int) -> int:
            for vaddr, size, raw_ptr in sections:
                if vaddr <= rva < vaddr + size:
                    return rva - vaddr + raw_ptr
            raise ValueError(f"RVA {rva:#x} outside every section")

        exp = offset(export_rva)
        n_names, = struct.unpack_from("<I", data, exp + 24)
        names_rva, = struct.unpack_from("<I", data, exp + 32)
        names = []
        for i in range(n_names):
            name_rva, = struct.unpack_from("<I", data, offset(names_rva) + 4 * i)
            start = offset(name_rva)
            names.append(data[start:data.index(b"\0", start)].decode("ascii"))
        return PeHeader(machine, tuple(names))
    except struct.error:
        raise DllReadError(f"{path} is not a readable Windows DLL: it is cut short") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise DllReadError(f"{path} is not a readable Windows DLL: {exc}") from None
