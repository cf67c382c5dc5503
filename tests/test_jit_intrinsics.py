"""The bit and memory intrinsics of ``util.jit`` against plain Python."""
from __future__ import annotations

import random

import numpy as np

from uci_checkers.util.jit import ctz, kernel, popcount, prefetch


@kernel
def _bits(x):
    return popcount(x), ctz(x)


@kernel
def _sum_with_prefetch(a, ahead):
    """Sum of ``a``, prefetching ``ahead`` words beyond each read (past the end near the end)."""
    s = 0
    for i in range(a.shape[0]):
        prefetch(a, i + ahead)
        s += a[i]
    return s


def test_popcount_and_ctz_match_python():
    rng = random.Random(7)
    for _ in range(500):
        x = rng.getrandbits(63) | 1 << rng.randrange(63)
        assert _bits(x) == (bin(x).count("1"), (x & -x).bit_length() - 1)


def test_prefetch_changes_nothing_even_beyond_the_array():
    a = np.arange(1000, dtype=np.int64)
    for ahead in (0, 8, 999, 1 << 20):
        assert _sum_with_prefetch(a, ahead) == a.sum()
        assert _sum_with_prefetch(a, np.int32(ahead)) == a.sum()      # any integer type of index
