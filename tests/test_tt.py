"""The transposition table: entries round-trip, keys are checked, torn entries miss, replacement keeps depth."""
from __future__ import annotations

import numpy as np
import pytest

from uci_checkers.search import tt as ttm


def _s64(value: int) -> int:
    """A Python int as the signed 64-bit key the kernels see."""
    value &= (1 << 64) - 1
    return value - (1 << 64) if value >= 1 << 63 else value


def _keys_in_one_bucket(table: np.ndarray, count: int, seed: int = 1) -> list[int]:
    """Distinct random 64-bit keys that share the first random key's bucket."""
    rng = np.random.default_rng(seed)
    keys: list[int] = []
    base = None
    while len(keys) < count:
        key = int(rng.integers(-(1 << 63), (1 << 63) - 1, dtype=np.int64))
        bucket = ttm.bucket_of(table, key)
        if base is None:
            base = bucket
        if bucket == base and key not in keys:
            keys.append(key)
    return keys


@pytest.mark.parametrize("mb", [1, 4])
def test_a_table_starts_on_a_cache_line(mb):
    table = ttm.new_table(mb)
    assert table.ctypes.data % 64 == 0
    assert table.shape[0] % ttm.BUCKET_WORDS == 0
    assert table.shape[0] * 8 <= mb * 1024 * 1024
    assert not table.any()


@pytest.mark.parametrize("misalign_words", [1, 3, 7])
def test_a_small_table_is_aligned_whatever_numpy_returns(monkeypatch, misalign_words):
    """A table below the huge-page size comes from numpy, which promises no cache-line alignment: give
    new_table memory that starts ``misalign_words`` words past a line and it must skip to the next line."""
    zeros = np.zeros
    handed = []

    def misaligned_zeros(n, dtype=float):
        base = zeros(n + 16, dtype=dtype)
        k = (-(base.ctypes.data // 8) + misalign_words) % 8
        handed.append(base[k:k + n])
        return handed[-1]
    monkeypatch.setattr(ttm.np, "zeros", misaligned_zeros)
    table = ttm.new_table(1)
    monkeypatch.undo()
    assert handed[0].ctypes.data % 64 == 8 * misalign_words       # the memory really was misaligned
    assert table.ctypes.data % 64 == 0 and table.shape[0] % ttm.BUCKET_WORDS == 0
    assert handed[0].ctypes.data <= table.ctypes.data < handed[0].ctypes.data + 64
    assert table.ctypes.data + table.nbytes <= handed[0].ctypes.data + handed[0].nbytes


@pytest.mark.parametrize("score", [0, 17, -17, 29990, -29990, 32000, -32000])
def test_an_entry_round_trips(score):
    table = ttm.new_table(1)
    key = 0x1234_5678_9ABC_DEF0
    move = (1 << 47) | (5 << 6) | 9           # 48 move bits, the highest one set
    ttm.store(table, key, move, score, 5000, ttm.BOUND_LOWER, 7)
    assert ttm.probe(table, key) == (1, move, score, ttm.MAX_DEPTH, ttm.BOUND_LOWER)   # depth clipped
    for bit in (18, 40, 47, 48, 63):                      # bits 18-63 of the key are checked
        assert ttm.probe(table, _s64(key ^ (1 << bit)))[0] == 0


def test_a_torn_entry_reads_as_a_miss():
    """Two threads writing one slot at once may leave one's move word with the other's data word."""
    table = ttm.new_table(1)
    first, second = _keys_in_one_bucket(table, 2)
    ttm.store(table, first, 11, 5, 3, ttm.BOUND_EXACT, 1)
    ttm.store(table, second, 22, 6, 4, ttm.BOUND_EXACT, 1)
    base = ttm.bucket_of(table, first)
    slots = [base + w * ttm.ENTRY_WORDS for w in range(ttm.WAYS)]
    a, b = [e for e in slots if table[e + 1] != 0]
    table[a], table[b] = table[b], table[a]             # swap the move words: both entries torn
    assert ttm.probe(table, first)[0] == 0
    assert ttm.probe(table, second)[0] == 0


def test_the_same_key_is_overwritten_and_keeps_its_move():
    table = ttm.new_table(1)
    key = 987654321987654321
    ttm.store(table, key, 42, 10, 5, ttm.BOUND_LOWER, 1)
    ttm.store(table, key, 0, -3, 2, ttm.BOUND_UPPER, 1)       # no move this time: the old one stays
    assert ttm.probe(table, key) == (1, 42, -3, 2, ttm.BOUND_UPPER)
    used = [w for w in range(ttm.WAYS) if table[ttm.bucket_of(table, key) + w * ttm.ENTRY_WORDS + 1] != 0]
    assert len(used) == 1


def test_replacement_keeps_the_deep_and_the_new_entries():
    table = ttm.new_table(1)
    keys = _keys_in_one_bucket(table, ttm.WAYS + 2)
    for depth, key in enumerate(keys[:ttm.WAYS], start=40):   # a full bucket, depths 40..43
        ttm.store(table, key, 1, 0, depth, ttm.BOUND_EXACT, 1)
    ttm.store(table, keys[ttm.WAYS], 1, 0, 1, ttm.BOUND_EXACT, 1)   # replaces the shallowest (depth 40)
    assert ttm.probe(table, keys[0])[0] == 0
    assert all(ttm.probe(table, k)[0] == 1 for k in keys[1:ttm.WAYS + 1])


def test_an_old_deep_entry_gives_way_to_new_shallow_ones():
    table = ttm.new_table(1)
    old, *new = _keys_in_one_bucket(table, ttm.WAYS + 1)
    ttm.store(table, old, 1, 0, 120, ttm.BOUND_EXACT, 1)
    for key in new[:ttm.WAYS - 1]:                 # ten searches later: 120 - 16 * 9 < 8
        ttm.store(table, key, 1, 0, 8, ttm.BOUND_EXACT, 10)
    ttm.store(table, new[-1], 1, 0, 8, ttm.BOUND_EXACT, 10)
    assert ttm.probe(table, old)[0] == 0
    assert all(ttm.probe(table, k)[0] == 1 for k in new)


def test_hashfull_counts_this_generation():
    table = ttm.new_table(1)
    rng = np.random.default_rng(3)
    for key in rng.integers(-(1 << 63), (1 << 63) - 1, size=50_000, dtype=np.int64):
        ttm.store(table, int(key), 1, 0, 1, ttm.BOUND_EXACT, 2)
    full = ttm.hashfull(table, 2)
    assert 300 < full < 1000
    assert ttm.hashfull(table, 3) == 0
