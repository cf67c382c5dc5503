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
the sources that can affect compiled code (every module that uses ``_jit`` and
everything those import from the package, transitively, and every module of a
subpackage with kernels: see :func:`kernel_sources`), plus the numba and Python versions.  Any such edit or
an upgrade gives a fresh directory; editing the protocol or the arena does not.

Where the cache lives (first writable wins):

1. ``$UCI_CHECKERS_CACHE_DIR/<hash>``
2. ``<package>/__pycache__/numba-<hash>`` (a normal editable or user install)
3. ``$XDG_CACHE_HOME/uci_checkers/numba-<hash>`` (or ``~/.cache/...``): read-only installs
4. ``<tempdir>/uci_checkers-<uid>/numba-<hash>``

Every edit leaves the previous directory behind, so on import the stale siblings
are pruned (see :func:`prune_stale_caches`; ``UCI_CHECKERS_CACHE_PRUNE=0`` turns
it off).

Bit and memory intrinsics
-------------------------
``popcount`` and ``ctz`` lower to LLVM's ``ctpop``/``cttz`` (one instruction each
on x86-64) instead of a Python-level loop.  ``prefetch(array, index)`` lowers to
``llvm.prefetch``: the search starts loading a child's table bucket before the child
needs it (a prefetch never faults and changes no result).

Byte dot products
-----------------
``clipped_dot(half, n_out)`` makes the intrinsic of the network's small layers: inputs
clipped to 0..127 as unsigned bytes, weights signed bytes, exact int32 sums.  It is
written as whole-vector LLVM IR (zero-extend, sign-extend, multiply, add-reduce)
because numba types every integer product as int64, which hides the byte pattern; from
the IR, LLVM picks the machine's best instruction (``vpdpbusd`` with AVX-512 VNNI, 64
products at once; ``pmaddubsw``/``pmaddwd`` with AVX2; plain code elsewhere).

Raw memory
----------
``bytes_at(address, n)`` and ``words_at(address, n)`` are uint8 / int64 arrays over
memory a kernel knows only by its address (the endgame databases' memory-mapped
files: a kernel takes one int64 table that holds every file's address).  They
own nothing; whoever hands the address to a kernel keeps the memory mapped.

A kernel with a C entry point (``c_kernel``) is compiled once and called from other
kernels through its address (``call_address``), an int the caller reads at run time
(never a constant in cached code).  numba links a callee's code into every kernel
that calls it and optimises it again there; for a large kernel deep under the
search (the endgame databases' block decoder) that multiplied the cold compile.
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Optional

import numba
from numba import njit as _njit
from numba import types
from numba.core import caching, cgutils
from numba.extending import intrinsic

from .cachedir import user_cache_dir
from .imports import imports_of, package_modules

__all__ = ["kernel", "c_kernel", "call_address", "popcount", "ctz", "prefetch", "clipped_dot", "borrow", "bytes_at", "words_at", "CACHE_DIR",
           "SOURCE_HASH", "types", "has_cached_kernels"]

PACKAGE_DIR = Path(__file__).resolve().parent.parent      # uci_checkers/ (this module is util/jit.py)
_PACKAGE = "uci_checkers"


_NAMES_JIT = re.compile(r"^[ \t]*from[ \t]+[.\w]*[ \t]+import[^\n]*\bjit\b|^[ \t]*from[ \t]+[.\w]*jit[ \t]+import", re.M)


def kernel_sources(package_dir: Path = PACKAGE_DIR) -> list[Path]:
    """The modules whose text can change compiled code: every module that uses this one
    (``util.jit``) and everything those import from the package, transitively.

    Only these key the cache, so editing a pure-Python layer (the protocols, the engine
    facade, the arena, the client) does not force every kernel to recompile.
    """
    modules = package_modules(package_dir)
    me = f"{_PACKAGE}.util.jit"
    # Runs at every import of this module (every start): parse only what can matter.  Only files with an
    # import line naming jit are parsed to find its users, and then only what those reach.
    texts = {name: path.read_text(encoding="utf-8") for name, path in modules.items()}
    deps: dict[str, set[str]] = {}

    def imports(name: str) -> set[str]:
        if name not in deps:
            deps[name] = imports_of(name, modules[name], modules, texts[name])
        return deps[name]

    todo = [name for name, text in texts.items() if _NAMES_JIT.search(text) and me in imports(name)] + [me]
    seen: set[str] = set()
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo.extend(imports(name))
    # a package's __init__ runs whenever one of its modules is imported
    for name in list(seen):
        parts = name.split(".")
        for k in range(1, len(parts)):
            parent = ".".join(parts[:k])
            if parent in modules:
                seen.add(parent)
    return sorted(modules[n] for n in seen)


def _source_hash() -> str:
    digest = hashlib.sha256()
    for path in kernel_sources():
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


def cache_dir_candidates(package_dir: Path = PACKAGE_DIR, source_hash: str = SOURCE_HASH,
                         environ=None) -> list[Path]:
    """The cache locations in order of preference (see the module docstring)."""
    environ = os.environ if environ is None else environ
    candidates = []
    env = environ.get("UCI_CHECKERS_CACHE_DIR")
    if env:
        candidates.append(Path(env) / source_hash)
    candidates.append(package_dir / "__pycache__" / f"numba-{source_hash}")
    candidates.append(user_cache_dir(f"numba-{source_hash}", environ=environ))
    uid = os.getuid() if hasattr(os, "getuid") else 0
    candidates.append(Path(tempfile.gettempdir()) / f"uci_checkers-{uid}" / f"numba-{source_hash}")
    return candidates


def _choose_cache_dir(package_dir: Path = PACKAGE_DIR, source_hash: str = SOURCE_HASH, environ=None) -> Path:
    """The first candidate that exists or can be created, and accepts a new file."""
    candidates = cache_dir_candidates(package_dir, source_hash, environ)
    for candidate in candidates:
        if _writable(candidate):
            return candidate
    return candidates[-1]


# Every source edit makes a new cache directory beside the old ones; prune the old
# ones.  A directory's mtime is its last use (it is touched at every import and
# changes whenever numba writes into it).  Keep the newest few whatever their age,
# never touch one used within the last hour (a process of an older version may
# still be running and may compile into it), and drop any unused for a week.
PRUNE_KEEP_NEWEST = 6
PRUNE_MIN_AGE = 3600.0
PRUNE_MAX_AGE = 7 * 86400.0
_HASH_NAME = re.compile(r"^(numba-)?[0-9a-f]{16}$")


def prune_stale_caches(chosen: Path, keep_newest: int = PRUNE_KEEP_NEWEST, min_age: float = PRUNE_MIN_AGE,
                       max_age: float = PRUNE_MAX_AGE, now: Optional[float] = None) -> list[Path]:
    """Delete stale sibling cache directories of ``chosen`` (same naming scheme only); return those deleted.

    Only directories named like ``chosen`` (``numba-<16 hex>`` or, under
    ``$UCI_CHECKERS_CACHE_DIR``, ``<16 hex>``) are considered, so nothing else in a
    shared cache folder is ever touched.  Errors are ignored: pruning is a courtesy.
    """
    now = time.time() if now is None else now
    prefix = "numba-" if chosen.name.startswith("numba-") else ""
    aged = []
    try:
        for entry in os.scandir(chosen.parent):
            name = entry.name
            if name == chosen.name or not _HASH_NAME.match(name) or not name.startswith(prefix):
                continue
            if prefix == "" and name.startswith("numba-"):
                continue
            if not entry.is_dir(follow_symlinks=False):
                continue
            aged.append((entry.stat(follow_symlinks=False).st_mtime, Path(entry.path)))
    except OSError:
        return []
    aged.sort(reverse=True)  # newest first
    deleted = []
    for rank, (mtime, path) in enumerate(aged):
        age = now - mtime
        if age > max_age or (rank >= keep_newest - 1 and age > min_age):  # keep_newest counts ``chosen``
            shutil.rmtree(path, ignore_errors=True)
            if not path.exists():
                deleted.append(path)
    return deleted


def _mark_used(path: Path) -> None:
    try:
        os.utime(path)
    except OSError:
        pass


CACHE_DIR = _choose_cache_dir()
_mark_used(CACHE_DIR)
if os.environ.get("UCI_CHECKERS_CACHE_PRUNE", "1") != "0":
    prune_stale_caches(CACHE_DIR)


def has_cached_kernels(module: str, cache_dir: Optional[Path] = None) -> bool:
    """True when ``cache_dir`` (default: this source version's) holds compiled kernels of ``module``
    (``"search"``): a start then loads them instead of compiling for seconds."""
    try:
        names = os.listdir(CACHE_DIR if cache_dir is None else cache_dir)
    except OSError:
        return False
    return any(name.startswith(module + ".") and name.endswith(".nbi") for name in names)


class _PackageCacheLocator(caching._CacheLocator):
    """Caches this package's kernels under CACHE_DIR, stamped with SOURCE_HASH."""

    def __init__(self, py_func, py_file):
        self._py_file = py_file
        self._lineno = py_func.__code__.co_firstlineno
        # numba names cache files after the module's file name; a subpackage module's
        # kernels also carry the subpackage name (egdb/probe.py never meets a probe.py)
        folder = Path(py_file).resolve().parent.relative_to(PACKAGE_DIR).parts
        self._prefix = "".join(f"{part}-" for part in folder)

    def get_cache_path(self) -> str:
        return str(CACHE_DIR)

    def get_source_stamp(self):
        return SOURCE_HASH

    def get_disambiguator(self) -> str:
        return f"{self._prefix}{self._lineno}"

    @classmethod
    def from_function(cls, py_func, py_file):
        try:
            if PACKAGE_DIR not in Path(py_file).resolve().parents:
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


def c_kernel(signature: str):
    """``cfunc(signature, cache=True)``: a kernel with a C entry point (``.address``), see the module docstring."""
    return numba.cfunc(signature, cache=True)


@intrinsic
def call_address(typingctx, address, a, b, c, d):
    """Call the C function ``int64 f(int64, int64, int64, int64)`` at ``address`` (a ``c_kernel``'s)."""
    if not all(isinstance(x, types.Integer) for x in (address, a, b, c, d)):
        return None

    def codegen(context, builder, sig, args):
        from llvmlite import ir

        word = ir.IntType(64)
        fnty = ir.FunctionType(word, [word] * 4)
        values = [context.cast(builder, v, t, types.int64) for v, t in zip(args[1:], sig.args[1:])]
        return builder.call(builder.inttoptr(args[0], fnty.as_pointer()), values)

    return types.int64(address, a, b, c, d), codegen


def kernel(*signature, **options):
    """``njit(cache=True, nogil=True)``.

    An explicit signature compiles (or loads) the kernel when its module is imported: for the
    search's kernels and the ones a cold start compiles in a chosen order (see
    ``engine.warm_up_kernels``).  Without one a kernel compiles at its first call, which keeps
    kernels the search never calls (the rules layer's chain counters, perft) off its import path.
    """
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
def prefetch(typingctx, arr, index):
    """Ask the CPU to bring ``arr[index]`` into its caches (no effect on results; an index
    outside the array is harmless: a prefetch never faults)."""
    if not isinstance(arr, types.Array) or not isinstance(index, types.Integer):
        return None

    def codegen(context, builder, sig, args):
        from llvmlite import ir

        ary = context.make_array(sig.args[0])(context, builder, value=args[0])
        index = context.cast(builder, args[1], sig.args[1], types.int64)
        ptr_t = ir.IntType(8).as_pointer()
        i32 = ir.IntType(32)
        fnty = ir.FunctionType(ir.VoidType(), [ptr_t, i32, i32, i32])
        # the intrinsic's name carries its pointer type: "p0i8" while llvmlite writes typed pointers
        # (newer LLVM reads that name as "p0"), "p0" once it writes opaque ones
        suffix = "p0" if str(ptr_t) == "ptr" else "p0i8"
        fn = cgutils.get_or_insert_function(builder.module, fnty, f"llvm.prefetch.{suffix}")
        builder.call(fn, [builder.bitcast(builder.gep(ary.data, [index]), ptr_t), i32(0), i32(3), i32(1)])
        return context.get_dummy_value()

    return types.void(arr, index), codegen


def clipped_dot(half: int, n_out: int):
    """The intrinsic ``dot(src, a_off, b_off, w, w_byte, dst, d_off)`` (``src``, ``w``, ``dst``: float32
    arrays): the inputs are ``src[a_off:a_off + half]`` then ``src[b_off:b_off + half]``, each clipped to
    0..127 (they must hold integers); the weights are ``n_out`` rows of ``2 * half`` signed bytes from
    byte ``w_byte`` of ``w``'s memory (row-major); ``dst[d_off + i]`` receives row ``i``'s sum, exact
    (an int32, held in float32: exact while below 2^24 in magnitude, which 2 * half * 127 * 128 is for
    the sizes used)."""
    n_in = 2 * half
    if n_in * 127 * 128 >= 2**24:
        raise ValueError("sums of that many inputs would not be exact in float32")

    @intrinsic
    def dot(typingctx, src, a_off, b_off, w, w_byte, dst, d_off):
        if not all(isinstance(t, types.Array) and t.dtype == types.float32 for t in (src, w, dst)):
            return None

        def codegen(context, builder, sig, args):
            from llvmlite import ir

            f32, i8, i32, i64 = ir.FloatType(), ir.IntType(8), ir.IntType(32), ir.IntType(64)
            src_a, w_a, dst_a = (context.make_array(sig.args[k])(context, builder, value=args[k]) for k in (0, 3, 5))
            offsets = [context.cast(builder, args[k], sig.args[k], types.int64) for k in (1, 2, 4, 6)]

            def load(ptr, elem, index, n):
                at = builder.gep(builder.bitcast(ptr, elem.as_pointer()), [index])
                return builder.load(builder.bitcast(at, ir.VectorType(elem, n).as_pointer()), align=1)

            low = ir.Constant(ir.VectorType(f32, half), [0.0] * half)
            high = ir.Constant(ir.VectorType(f32, half), [127.0] * half)
            parts = []
            for off in offsets[:2]:
                v = load(src_a.data, f32, off, half)
                v = builder.select(builder.fcmp_ordered("<", v, low), low, v)
                v = builder.select(builder.fcmp_ordered(">", v, high), high, v)
                parts.append(builder.fptoui(v, ir.VectorType(i8, half)))
            x = builder.shuffle_vector(parts[0], parts[1], ir.Constant(ir.VectorType(i32, n_in), list(range(n_in))))
            x = builder.zext(x, ir.VectorType(i32, n_in))
            reduce_add = cgutils.get_or_insert_function(
                builder.module, ir.FunctionType(i32, [ir.VectorType(i32, n_in)]), f"llvm.vector.reduce.add.v{n_in}i32")
            for i in range(n_out):
                row = builder.add(offsets[2], ir.Constant(i64, i * n_in))
                wv = builder.sext(load(w_a.data, i8, row, n_in), ir.VectorType(i32, n_in))
                total = builder.call(reduce_add, [builder.mul(x, wv)])
                at = builder.gep(dst_a.data, [builder.add(offsets[3], ir.Constant(i64, i))])
                builder.store(builder.sitofp(total, f32), at)
            return context.get_dummy_value()

        return types.void(src, a_off, b_off, w, w_byte, dst, d_off), codegen

    return dot


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


def _address_view(dtype):
    """An intrinsic ``(address, n) -> dtype[::1]`` over ``n`` items at ``address``, owning nothing."""
    def view(typingctx, address, n):
        if not isinstance(address, types.Integer) or not isinstance(n, types.Integer):
            return None
        array_type = types.Array(dtype, 1, "C")

        def codegen(context, builder, sig, args):
            ary = context.make_array(array_type)(context, builder)
            item = context.get_data_type(dtype)
            size = context.get_constant(types.intp, context.get_abi_sizeof(item))
            data = builder.inttoptr(args[0], item.as_pointer())
            count = context.cast(builder, args[1], sig.args[1], types.intp)
            context.populate_array(ary, data=data, shape=[count], strides=[size], itemsize=size, meminfo=None)
            return ary._getvalue()

        return array_type(address, n), codegen

    return view


bytes_at = intrinsic(_address_view(types.uint8))
bytes_at.__doc__ = "A uint8 array over ``n`` bytes at the integer ``address`` (see Raw memory above)."
words_at = intrinsic(_address_view(types.int64))
words_at.__doc__ = "An int64 array over ``n`` words at the integer ``address`` (8-byte aligned)."
