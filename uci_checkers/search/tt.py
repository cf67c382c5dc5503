"""Transposition table: a preallocated int64 array, probe/store kernels, depth-preferred with aging.

Layout
------
One flat int64 array.  Entries are 2 words, grouped in buckets of ``WAYS`` = 4
entries: 64 bytes, one cache line (the table starts on a line boundary), so a
probe costs at most one memory access, which the parent starts early (a prefetch)::

    word 0  move      the best/refutation move word in bits 0-47 (0 = none), the key's
                      bits 48-63 in bits 48-63
    word 1  data      score + 32768 in bits 0-15, depth (0-1023, the search's fractions of
                      a ply) in bits 16-25, bound in bits 26-27, generation (0-63) in bits
                      28-33; in bits 34-63 a check: the key's bits 18-47 xor word 0 and
                      word 0 shifted by 30.  0 = empty slot (a stored score is never
                      -32768).  A torn entry, written by two search threads at once, fails
                      the check and reads as a miss.

The bucket of a key is ``((key & 0xFFFFFFFF) * nbuckets) >> 32`` so any table
size (not only powers of two) is usable; an entry checks the key's bits 18-63.
Replacement: the same key is always overwritten (keeping the old move when the
new one has none); otherwise the entry with the lowest ``depth - AGE_DEPTH * age``
goes, where ``age`` counts searches since the entry was written: deep entries
survive, stale ones are reused.

Everything is deterministic: no clocks, no randomness.
"""
from __future__ import annotations

import mmap

import numpy as np

from ..util.jit import kernel

WAYS = 4
ENTRY_WORDS = 2
BUCKET_WORDS = WAYS * ENTRY_WORDS
LINE_WORDS = 8        # a 64-byte cache line: buckets start on one
MOVE_BITS = (1 << 48) - 1
KEY_TOP = ~MOVE_BITS  # a move word keeps the key's top 16 bits above the move
MAX_DEPTH = 1023      # stored depths are clipped to 0..MAX_DEPTH
AGE_DEPTH = 16        # replacement: each search of age counts as this much depth (4 plies of the search)
CHECK_BITS = (1 << 30) - 1

BOUND_NONE = 0
BOUND_UPPER = 1       # score <= true value is not known; true value <= score (fail low)
BOUND_LOWER = 2       # true value >= score (fail high)
BOUND_EXACT = 3

MIN_MB = 1
MAX_MB = 4096
HUGE_PAGE_BYTES = 2 * 1024 * 1024


def new_table(mb: int) -> np.ndarray:
    """A zeroed table using at most ``mb`` MiB (at least one bucket), starting on a cache line.

    The memory is mapped lazily by the OS (allocation is instant; :func:`prefault` maps it),
    in transparent huge pages where the OS offers them: a 2 MiB page costs one fault instead
    of 512, and the search's random probes miss the TLB less.
    """
    mb = max(MIN_MB, min(MAX_MB, int(mb)))
    nbuckets = max(1, (mb * 1024 * 1024) // (BUCKET_WORDS * 8))
    nbuckets = min(nbuckets, (1 << 31) - 1)
    words = nbuckets * BUCKET_WORDS
    if words * 8 >= HUGE_PAGE_BYTES and hasattr(mmap, "MADV_HUGEPAGE"):
        try:
            area = mmap.mmap(-1, words * 8, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
            area.madvise(mmap.MADV_HUGEPAGE)
            return np.frombuffer(area, dtype=np.int64)   # page-aligned; the array keeps the mapping alive
        except (OSError, ValueError, AttributeError):
            pass  # no anonymous mappings or no madvise here: ordinary (still lazily mapped) memory
    raw = np.zeros(words + LINE_WORDS, dtype=np.int64)
    skip = (-(raw.ctypes.data // 8)) % LINE_WORDS
    return raw[skip:skip + words]


@kernel
def bucket_of(tt, key):
    nb = tt.shape[0] // BUCKET_WORDS
    return (((key & 0xFFFFFFFF) * nb) >> 32) * BUCKET_WORDS


@kernel
def _check(key, move_word):
    """The check bits of an entry's data word (see the module docstring)."""
    return ((key >> 18) ^ move_word ^ (move_word >> 30)) & CHECK_BITS


@kernel
def _holds(key, move_word, data):
    """Whether an occupied entry (``data`` != 0) is ``key``'s, written whole."""
    return ((move_word ^ key) & KEY_TOP) == 0 and ((data >> 34) & CHECK_BITS) == _check(key, move_word)


@kernel
def probe(tt, key):
    """(found, move, score, depth, bound) for ``key``; found is 0 or 1."""
    base = bucket_of(tt, key)
    for w in range(WAYS):
        e = base + w * ENTRY_WORDS
        d = tt[e + 1]
        mv = tt[e]
        if d != 0 and _holds(key, mv, d):
            return 1, mv & MOVE_BITS, (d & 0xFFFF) - 32768, (d >> 16) & MAX_DEPTH, (d >> 26) & 3
    return 0, np.int64(0), np.int64(0), np.int64(0), np.int64(0)


@kernel
def store(tt, key, move, score, depth, bound, gen):
    """Write an entry (see the module docstring for the replacement rule)."""
    base = bucket_of(tt, key)
    if depth < 0:
        depth = 0
    elif depth > MAX_DEPTH:
        depth = MAX_DEPTH
    victim = -1
    worst = np.int64(1) << 40
    for w in range(WAYS):
        e = base + w * ENTRY_WORDS
        d = tt[e + 1]
        if d == 0:
            value = np.int64(-1000)
        else:
            mv = tt[e]
            if _holds(key, mv, d):
                victim = e
                if move == 0:
                    move = mv & MOVE_BITS
                break
            age = (gen - ((d >> 28) & 63)) & 63
            value = ((d >> 16) & MAX_DEPTH) - AGE_DEPTH * age
        if value < worst:
            worst = value
            victim = e
    word = (move & MOVE_BITS) | (key & KEY_TOP)
    data = (score + 32768) | (depth << 16) | (bound << 26) | ((gen & 63) << 28)
    tt[victim] = word
    tt[victim + 1] = data | (_check(key, word) << 34)


@kernel
def hashfull(tt, gen):
    """Permille of the first (up to) 1000 entries written in generation ``gen``."""
    n = tt.shape[0] // ENTRY_WORDS
    sample = 1000 if n >= 1000 else n
    used = 0
    for i in range(sample):
        d = tt[i * ENTRY_WORDS + 1]
        if d != 0 and ((d >> 28) & 63) == (gen & 63):
            used += 1
    return used * 1000 // sample


PAGE_WORDS = 4096 // 8


def prefault(tt: np.ndarray) -> None:
    """Touch one word per memory page so the OS maps a new (lazily zeroed) table now.

    Only for a table that was never used (it overwrites a word per page).  A table is
    never cleared by zeroing it (slow for a large hash): a new one is allocated instead.
    """
    tt[::PAGE_WORDS] = 0
