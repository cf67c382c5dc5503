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

import numpy as np

from ._jit import kernel

WAYS = 4
ENTRY_WORDS = 3
BUCKET_WORDS = WAYS * ENTRY_WORDS

BOUND_NONE = 0
BOUND_UPPER = 1       # score <= true value is not known; true value <= score (fail low)
BOUND_LOWER = 2       # true value >= score (fail high)
BOUND_EXACT = 3

MIN_MB = 1
MAX_MB = 4096


def new_table(mb: int) -> np.ndarray:
    """A zeroed table using at most ``mb`` MiB (at least one bucket)."""
    mb = max(MIN_MB, min(MAX_MB, int(mb)))
    nbuckets = max(1, (mb * 1024 * 1024) // (BUCKET_WORDS * 8))
    nbuckets = min(nbuckets, (1 << 31) - 1)
    return np.zeros(nbuckets * BUCKET_WORDS, dtype=np.int64)


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


def clear(tt: np.ndarray) -> None:
    """Forget every entry."""
    tt[:] = 0
