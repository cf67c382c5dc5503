"""Transposition table: a preallocated int64 array, probe/store kernels, depth-preferred with aging.

Layout
------
One flat int64 array.  Entries are 3 words, grouped in buckets of ``WAYS``
entries (``3 * WAYS`` words, 96 bytes)::

    word 0  check     key ^ move ^ data (0 = empty slot): a torn entry written by two
                      search threads at once fails the check and reads as a miss
    word 1  move      the best/refutation move word (0 = none)
    word 2  data      score + 32768 in bits 0-15, depth (0-255) in bits 16-23,
                      bound in bits 24-25, generation (0-63) in bits 26-31

The bucket of a key is ``((key & 0xFFFFFFFF) * nbuckets) >> 32`` so any table
size (not only powers of two) is usable.  Replacement: the same key is always
overwritten (keeping the old move when the new one has none); otherwise the
entry with the lowest ``depth - 4 * age`` goes, where ``age`` counts searches
since the entry was written: deep entries survive, stale ones are reused.

Everything is deterministic: no clocks, no randomness.
"""
from __future__ import annotations

import mmap

import numpy as np

from ..util.jit import kernel

WAYS = 4
ENTRY_WORDS = 3
BUCKET_WORDS = WAYS * ENTRY_WORDS

BOUND_NONE = 0
BOUND_UPPER = 1       # score <= true value is not known; true value <= score (fail low)
BOUND_LOWER = 2       # true value >= score (fail high)
BOUND_EXACT = 3

MIN_MB = 1
MAX_MB = 4096
HUGE_PAGE_BYTES = 2 * 1024 * 1024


def new_table(mb: int) -> np.ndarray:
    """A zeroed table using at most ``mb`` MiB (at least one bucket).

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
            return np.frombuffer(area, dtype=np.int64)   # the array keeps the mapping alive
        except (OSError, ValueError, AttributeError):
            pass  # no anonymous mappings or no madvise here: ordinary (still lazily mapped) memory
    return np.zeros(words, dtype=np.int64)


@kernel
def bucket_of(tt, key):
    nb = tt.shape[0] // BUCKET_WORDS
    return (((key & 0xFFFFFFFF) * nb) >> 32) * BUCKET_WORDS


@kernel
def probe(tt, key):
    """(found, move, score, depth, bound) for ``key``; found is 0 or 1."""
    base = bucket_of(tt, key)
    for w in range(WAYS):
        e = base + w * ENTRY_WORDS
        d = tt[e + 2]
        mv = tt[e + 1]
        if (tt[e] ^ mv ^ d) == key and tt[e] != 0:
            return 1, mv, (d & 0xFFFF) - 32768, (d >> 16) & 0xFF, (d >> 24) & 3
    return 0, np.int64(0), np.int64(0), np.int64(0), np.int64(0)


@kernel
def store(tt, key, move, score, depth, bound, gen):
    """Write an entry (see the module docstring for the replacement rule)."""
    base = bucket_of(tt, key)
    if depth < 0:
        depth = 0
    elif depth > 255:
        depth = 255
    victim = -1
    worst = np.int64(1) << 40
    for w in range(WAYS):
        e = base + w * ENTRY_WORDS
        k = tt[e]
        if k != 0:
            k ^= tt[e + 1] ^ tt[e + 2]
        if k == key:
            victim = e
            if move == 0:
                move = tt[e + 1]
            break
        if k == 0:
            value = np.int64(-1000)
        else:
            d = tt[e + 2]
            age = (gen - ((d >> 26) & 63)) & 63
            value = ((d >> 16) & 0xFF) - 4 * age
        if value < worst:
            worst = value
            victim = e
    data = (score + 32768) | (depth << 16) | (bound << 24) | ((gen & 63) << 26)
    tt[victim] = key ^ move ^ data
    tt[victim + 1] = move
    tt[victim + 2] = data


@kernel
def hashfull(tt, gen):
    """Permille of the first (up to) 1000 entries written in generation ``gen``."""
    n = tt.shape[0] // ENTRY_WORDS
    sample = 1000 if n >= 1000 else n
    used = 0
    for i in range(sample):
        e = i * ENTRY_WORDS
        if tt[e] != 0 and ((tt[e + 2] >> 26) & 63) == (gen & 63):
            used += 1
    return used * 1000 // sample


PAGE_WORDS = 4096 // 8


def prefault(tt: np.ndarray) -> None:
    """Touch one word per memory page so the OS maps a new (lazily zeroed) table now.

    Only for a table that was never used (it overwrites a word per page).  A table is
    never cleared by zeroing it (slow for a large hash): a new one is allocated instead.
    """
    tt[::PAGE_WORDS] = 0
