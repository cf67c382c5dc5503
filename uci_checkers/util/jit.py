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
``clipped_layers(half, n2, n3, shift)`` makes the intrinsic of the network's small layers:
inputs clipped to 0..127 as unsigned bytes, weights signed bytes, exact int32 sums, biases,
shifts and clipping, and the output's dot product, all as whole-vector LLVM IR (numba types
every integer product as int64, which hides the byte pattern).  With AVX-512 VNNI it calls
``vpdpbusd`` on weights grouped by four inputs (:func:`dot_weight_bytes`), 16 outputs' sums in
one register; elsewhere each output multiplies and add-reduces its row, and LLVM picks the
machine's best instructions (``pmaddubsw``/``pmaddwd`` with AVX2, plain code elsewhere).  The
choice follows the CPU numba compiles for, which also keys the compile cache.

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
import numpy as np
from numba import njit as _njit
from numba import types
from numba.core import caching, cgutils
from numba.extending import intrinsic

from .cachedir import user_cache_dir
from .imports import imports_of, package_modules

__all__ = ["kernel", "c_kernel", "call_address", "popcount", "ctz", "prefetch", "clipped_layers", "dot_weight_bytes", "VNNI_512", "borrow", "bytes_at", "words_at", "CACHE_DIR",
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


def _target_has(*features: str) -> bool:
    """Whether the CPU numba compiles for has every one of ``features`` (LLVM names, like
    ``avx512vnni``): numba's own choice, the host's features unless ``NUMBA_CPU_FEATURES`` says."""
    from numba.core import config
    from numba.core.codegen import get_host_cpu_features

    chosen = config.CPU_FEATURES if config.CPU_FEATURES is not None else get_host_cpu_features()
    present = {f[1:] for f in str(chosen).split(",") if f.startswith("+")}
    return all(f in present for f in features)


# vpdpbusd on 64 bytes: four products of an unsigned and a signed byte summed into each of 16 int32 lanes
VNNI_512 = _target_has("avx512f", "avx512bw", "avx512vnni")
_VNNI_LANES = 16


def _grouped(n_out: int) -> bool:
    """Whether a layer of ``n_out`` outputs in :func:`clipped_layers` reads its weights grouped by four inputs
    (the VNNI layout): 16, 32, 64, ... outputs (its registers of 16 sums are joined pairwise)."""
    chunks = n_out // _VNNI_LANES
    return VNNI_512 and n_out % _VNNI_LANES == 0 and chunks & (chunks - 1) == 0


def dot_weight_bytes(rows: np.ndarray) -> np.ndarray:
    """The signed bytes of the weight matrix ``rows`` (``n_out`` x ``n_in``, integers already within
    -128..127) in the order :func:`clipped_layers` reads a layer's weights on this CPU:
    row after row, or, where it uses ``vpdpbusd``, four inputs at a time (for inputs ``4g..4g+3``, each
    output's four weights, output after output), so that one instruction takes four inputs into all of
    16 outputs and no sum has to be reduced across a vector."""
    rows = np.asarray(rows)
    n_out, n_in = rows.shape
    if _grouped(n_out):
        rows = rows.reshape(n_out, n_in // 4, 4).transpose(1, 0, 2)
    return np.ascontiguousarray(rows, dtype=np.int8).ravel()


def clipped_layers(half: int, n2: int, n3: int, shift: int):
    """The intrinsic ``layers(src, a_off, b_off, net, w2_byte, w3_byte, b2, b3, wo, bo)`` -> int64: the small
    layers of a quantised network, in exact integers.

    The inputs are ``src[a_off:a_off + half]`` then ``src[b_off:b_off + half]`` (int16), clipped to
    0..127; a hidden layer of ``n2`` and one of ``n3`` each take the clipped
    activations of the one before as unsigned bytes, with signed-byte weights from byte ``w2_byte``
    (``w3_byte``) of ``net``'s memory laid out by :func:`dot_weight_bytes`, add their integer biases
    (float32 ``net[b2:b2 + n2]``, ``net[b3:b3 + n3]``), shift right by ``shift`` (a floor division by
    ``2**shift``) and clip to 0..127; the result is ``net[bo]`` plus the dot product of the last
    activations with ``net[wo:wo + n3]``.  Every sum is an int32 (``net``'s numbers are integers; the
    caller keeps the sums below 2^31).

    With AVX-512 VNNI (and ``n2``, ``n3`` multiples of 16) each group of four inputs is broadcast to
    every lane and one ``vpdpbusd`` adds its products into 16 outputs' sums, so no sum is reduced across
    a vector; elsewhere each output is a whole-vector multiply and add-reduce of its row, from which LLVM
    picks the machine's best instructions.  Both give the same integers."""
    n_in = 2 * half
    if n_in % 4 != 0 or n2 % 4 != 0:
        raise ValueError("each layer's inputs must come in groups of four")
    if n_in * 127 * 128 >= 2**31:
        raise ValueError("sums of that many inputs would overflow int32")

    @intrinsic
    def layers(typingctx, src, a_off, b_off, net, w2_byte, w3_byte, b2, b3, wo, bo):
        if not (isinstance(src, types.Array) and src.dtype == types.int16
                and isinstance(net, types.Array) and net.dtype == types.float32):
            return None
        if not all(isinstance(t, types.Integer) for t in (a_off, b_off, w2_byte, w3_byte, b2, b3, wo, bo)):
            return None

        def codegen(context, builder, sig, args):
            from llvmlite import ir

            f32, i8, i16, i32, i64 = ir.FloatType(), ir.IntType(8), ir.IntType(16), ir.IntType(32), ir.IntType(64)
            vec = ir.VectorType
            src_a, net_a = (context.make_array(sig.args[k])(context, builder, value=args[k]) for k in (0, 3))
            a_at, b_at, w2_at, w3_at, b2_at, b3_at, wo_at, bo_at = (
                context.cast(builder, args[k], sig.args[k], types.int64) for k in (1, 2, 4, 5, 6, 7, 8, 9))

            def load(ptr, elem, index, n):
                at = builder.gep(builder.bitcast(ptr, elem.as_pointer()), [index])
                return builder.load(builder.bitcast(at, vec(elem, n).as_pointer()), align=1)

            def splat(value, n):
                return ir.Constant(vec(i32, n), [value] * n)

            def clip(v):                         # integer lanes to 0..127
                low = ir.Constant(v.type, [0] * v.type.count)
                high = ir.Constant(v.type, [127] * v.type.count)
                v = builder.select(builder.icmp_signed("<", v, low), low, v)
                return builder.select(builder.icmp_signed(">", v, high), high, v)

            def ints(at, n):                     # n integers held in float32 in net, as int32 lanes
                return builder.fptosi(load(net_a.data, f32, at, n), vec(i32, n))

            def hsum(v):                         # the sum of an int32 vector's lanes
                n = v.type.count
                fn = cgutils.get_or_insert_function(
                    builder.module, ir.FunctionType(i32, [vec(i32, n)]), f"llvm.vector.reduce.add.v{n}i32")
                return builder.call(fn, [v])

            def dense(x, n, n_out, w_at):
                """The int32 sums of n_out outputs over the n unsigned bytes x (vec(i8, n))."""
                if _grouped(n_out):
                    lanes = vec(i32, _VNNI_LANES)
                    vnni = cgutils.get_or_insert_function(
                        builder.module, ir.FunctionType(lanes, [lanes, lanes, lanes]), "llvm.x86.avx512.vpdpbusd.512")
                    # the inputs go through memory: a broadcast load per group keeps the shuffle units free
                    spill = cgutils.alloca_once(builder, vec(i8, n))
                    builder.store(x, spill, align=1)
                    # an empty asm that may read the memory: LLVM must load the groups back from it
                    # instead of taking them out of the register (two shuffles a group)
                    builder.asm(ir.FunctionType(ir.VoidType(), [spill.type]), "", "r,~{memory}", [spill], True)
                    quads = builder.bitcast(spill, i32.as_pointer())
                    chunks = n_out // _VNNI_LANES
                    chains = 4 if n // 4 >= 8 else 1           # independent sums overlap vpdpbusd's latency
                    sums = [[splat(0, _VNNI_LANES)] * chunks for _ in range(chains)]
                    undef = ir.Constant(lanes, None)
                    for g in range(n // 4):
                        q = builder.load(builder.gep(quads, [ir.Constant(i64, g)]), align=1)
                        qv = builder.shuffle_vector(builder.insert_element(undef, q, ir.Constant(i32, 0)), undef,
                                                    splat(0, _VNNI_LANES))
                        for c in range(chunks):
                            at = builder.add(w_at, ir.Constant(i64, (g * chunks + c) * 4 * _VNNI_LANES))
                            wv = builder.bitcast(load(net_a.data, i8, at, 4 * _VNNI_LANES), lanes)
                            sums[g % chains][c] = builder.call(vnni, [sums[g % chains][c], qv, wv])
                    parts = []
                    for c in range(chunks):
                        total = sums[0][c]
                        for k in range(1, chains):
                            total = builder.add(total, sums[k][c])
                        parts.append(total)
                    while len(parts) > 1:                      # concatenate the chunks
                        m = parts[0].type.count
                        parts = [builder.shuffle_vector(parts[k], parts[k + 1],
                                                        ir.Constant(vec(i32, 2 * m), list(range(2 * m))))
                                 for k in range(0, len(parts), 2)]
                    return parts[0]
                xw = builder.zext(x, vec(i32, n))
                out = ir.Constant(vec(i32, n_out), None)
                for i in range(n_out):
                    row = builder.add(w_at, ir.Constant(i64, i * n))
                    wv = builder.sext(load(net_a.data, i8, row, n), vec(i32, n))
                    out = builder.insert_element(out, hsum(builder.mul(xw, wv)), ir.Constant(i32, i))
                return out

            halves = [builder.trunc(clip(load(src_a.data, i16, off, half)), vec(i8, half)) for off in (a_at, b_at)]
            x = builder.shuffle_vector(halves[0], halves[1], ir.Constant(vec(i32, n_in), list(range(n_in))))
            h2 = dense(x, n_in, n2, w2_at)
            h2 = clip(builder.ashr(builder.add(h2, ints(b2_at, n2)), splat(shift, n2)))
            h3 = dense(builder.trunc(h2, vec(i8, n2)), n2, n3, w3_at)
            h3 = clip(builder.ashr(builder.add(h3, ints(b3_at, n3)), splat(shift, n3)))
            out = hsum(builder.mul(h3, ints(wo_at, n3)))
            out = builder.add(out, builder.fptosi(builder.load(builder.gep(net_a.data, [bo_at])), i32))
            return builder.sext(out, i64)

        return types.int64(src, a_off, b_off, net, w2_byte, w3_byte, b2, b3, wo, bo), codegen

    return layers


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
