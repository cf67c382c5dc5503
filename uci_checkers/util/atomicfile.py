"""Atomic file replacement: the one way the package rewrites a file.

A temporary file is written beside the target, flushed and fsynced, given the
target's permissions (or the umask's default for a new file, not mkstemp's
0600), renamed over the target with ``os.replace`` and the directory fsynced,
so a crash or a kill at any moment leaves either the old file or the new one,
never a part.  On an error the temporary file is removed and the target is
untouched.
"""
from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path
from typing import IO, Iterator, Union

PathLike = Union[str, "os.PathLike[str]"]


@contextlib.contextmanager
def atomic_output(path: PathLike, text: bool = False) -> Iterator[IO]:
    """``with atomic_output(path) as f: f.write(...)``: the target is replaced when the block ends
    without an exception (binary unless ``text``: then UTF-8 with newlines written as given)."""
    target = Path(path)
    folder = target.parent if str(target.parent) else Path(".")
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=str(folder))
    try:
        with (os.fdopen(fd, "w", encoding="utf-8", newline="") if text else os.fdopen(fd, "wb")) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        if target.exists():
            os.chmod(tmp, target.stat().st_mode & 0o7777)
        else:
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _sync_directory(folder)


def write_bytes_atomic(path: PathLike, data: bytes) -> None:
    with atomic_output(path) as f:
        f.write(data)


def write_text_atomic(path: PathLike, text: str) -> None:
    """Replace ``path`` with ``text`` (UTF-8)."""
    with atomic_output(path, text=True) as f:
        f.write(text)


def _sync_directory(folder: Path) -> None:
    """Make the rename itself durable (where the platform allows opening a directory)."""
    try:
        dir_fd = os.open(str(folder), os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dir_fd)
    except OSError:
        pass
    finally:
        os.close(dir_fd)
