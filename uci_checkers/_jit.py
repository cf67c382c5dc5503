"""The only module that imports numba: the kernel decorator policy and the compile cache.

Policy
------
Every kernel is compiled with ``njit(cache=True, nogil=True)``:

* ``nogil`` lets the protocol reader thread run (and raise the stop flag) while a
  search kernel is busy in another thread;
* ``cache`` keeps start-up fast after the first run.

numba keys each cached function on its *own* source file only, so an edit to a
callee in another module (or to a module-level constant table) would silently
reuse stale machine code.  We therefore install a cache locator that places the
cache of every function of this package in a directory named after a hash of
*all* package sources (plus the numba and Python versions).  Any edit or upgrade
gives a fresh directory.

Where the cache lives (first writable wins):

1. ``$UCI_CHECKERS_CACHE_DIR/<hash>``
2. ``<package>/__pycache__/numba-<hash>`` (a normal editable or user install)
3. ``$XDG_CACHE_HOME/uci_checkers/numba-<hash>`` (or ``~/.cache/...``): read-only installs
4. ``<tempdir>/uci_checkers-<uid>/numba-<hash>``

Bit intrinsics
--------------
``popcount`` and ``ctz`` lower to LLVM's ``ctpop``/``cttz`` (one instruction each
on x86-64) instead of a Python-level loop.
"""
from __future__ import annotations

import hashlib
import os
import sys
import tempfile
from pathlib import Path

import numba
from numba import njit as _njit
from numba import types
from numba.core import caching
from numba.extending import intrinsic

__all__ = ["kernel", "popcount", "ctz", "CACHE_DIR", "SOURCE_HASH", "types"]

PACKAGE_DIR = Path(__file__).resolve().parent


def _source_hash() -> str:
    digest = hashlib.sha256()
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        digest.update(path.relative_to(PACKAGE_DIR).as_posix().encode())
        digest.update(path.read_bytes())
    digest.update(numba.__version__.encode())
    digest.update(sys.version.encode())
    return digest.hexdigest()[:16]


SOURCE_HASH = _source_hash()


def _writable(path: Path) -> bool:
    try:
        path.mkdir(parents=True, exist_ok=True)
        tempfile.TemporaryFile(dir=path).close()
        return True
    except OSError:
        return False


def _choose_cache_dir() -> Path:
    candidates = []
    env = os.environ.get("UCI_CHECKERS_CACHE_DIR")
    if env:
        candidates.append(Path(env) / SOURCE_HASH)
    candidates.append(PACKAGE_DIR / "__pycache__" / f"numba-{SOURCE_HASH}")
    xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    candidates.append(Path(xdg) / "uci_checkers" / f"numba-{SOURCE_HASH}")
    uid = os.getuid() if hasattr(os, "getuid") else 0
    candidates.append(Path(tempfile.gettempdir()) / f"uci_checkers-{uid}" / f"numba-{SOURCE_HASH}")
    for candidate in candidates:
        if _writable(candidate):
            return candidate
    return candidates[-1]


CACHE_DIR = _choose_cache_dir()


class _PackageCacheLocator(caching._CacheLocator):
    """Caches this package's kernels under CACHE_DIR, stamped with SOURCE_HASH."""

    def __init__(self, py_func, py_file):
        self._py_file = py_file
        self._lineno = py_func.__code__.co_firstlineno

    def get_cache_path(self) -> str:
        return str(CACHE_DIR)

    def get_source_stamp(self):
        return SOURCE_HASH

    def get_disambiguator(self) -> str:
        return str(self._lineno)

    @classmethod
    def from_function(cls, py_func, py_file):
        try:
            if Path(py_file).resolve().parent != PACKAGE_DIR:
                return None
        except OSError:
            return None
        self = cls(py_func, py_file)
        try:
            self.ensure_cache_path()
        except OSError:
            return None
        return self


if _PackageCacheLocator not in caching.CacheImpl._locator_classes:
    caching.CacheImpl._locator_classes.insert(0, _PackageCacheLocator)


def kernel(*signature, **options):
    """``njit(cache=True, nogil=True)``; pass an explicit signature for entry or recursive kernels."""
    options.setdefault("cache", True)
    options.setdefault("nogil", True)
    if len(signature) == 1 and callable(signature[0]) and not isinstance(signature[0], (str, types.Type)):
        return _njit(**options)(signature[0])
    return _njit(*signature, **options)


@intrinsic
def popcount(typingctx, x):
    """Number of set bits of an int64."""
    if not isinstance(x, types.Integer):
        return None

    def codegen(context, builder, sig, args):
        return builder.ctpop(args[0])

    return x(x), codegen


@intrinsic
def ctz(typingctx, x):
    """Index of the lowest set bit of a non-zero int64 (count of trailing zeros)."""
    if not isinstance(x, types.Integer):
        return None

    def codegen(context, builder, sig, args):
        return builder.cttz(args[0], context.get_constant(types.boolean, False))

    return x(x), codegen


@intrinsic
def borrow(typingctx, arr):
    """A view of ``arr`` without a reference count (its meminfo set to NULL).

    numba increments and decrements (atomically) the reference count of every
    array passed into a function that it does not inline: about 6 ns per array
    per call, which dominates a recursive kernel such as perft or the search.
    Entry kernels pass ``borrow(buffer)`` down instead; the caller of the entry
    kernel keeps the real array alive for the whole call, so this is safe as long
    as a borrowed view never escapes the kernel (never returned, never stored).
    """
    if not isinstance(arr, types.Array):
        return None

    def codegen(context, builder, sig, args):
        from numba.core import cgutils

        src = context.make_array(sig.args[0])(context, builder, value=args[0])
        dst = context.make_array(sig.return_type)(context, builder)
        for name in ("parent", "nitems", "itemsize", "data", "shape", "strides"):
            setattr(dst, name, getattr(src, name))
        dst.meminfo = cgutils.get_null_value(dst.meminfo.type)
        return dst._getvalue()

    return arr(arr), codegen
