"""The block codec of the slice files: zlib streams written by Python's zlib, read by a numba kernel.

A slice file stores its values in blocks of a fixed number of positions, each
block one zlib stream (RFC 1950: a two-byte header, DEFLATE data, the Adler-32
of the block's bytes).  Python's ``zlib`` writes them (:func:`encode_block`);
:func:`inflate` decodes one inside a kernel (numba cannot call zlib), so the
search probes a memory-mapped file directly.  Inside a block the positions are
ordered black-to-move first, then white-to-move (:func:`interleave`): the two
sides' values differ much more than neighbouring positions with the same side
to move do, so that order gives DEFLATE longer runs.

:func:`inflate_address` is the address of a C entry point to :func:`inflate`: the
probe calls the decoder through it (compiled once, at the first table with a
file; see ``util.jit.c_kernel``).

:func:`inflate` follows RFC 1951 (stored, fixed and dynamic Huffman blocks).
Codes of up to FAST_BITS bits decode with one table look-up (a table only as
large as the longest code needs: a block's set-up is most of the cost of a small
one), longer ones bit by bit (canonical codes, as in zlib's ``puff``).  Corrupt input never reads or
writes out of bounds: every failure is a negative return value, and a block
that decodes to the wrong length or fails its Adler-32 is refused too.
"""
from __future__ import annotations

import zlib

import numpy as np

from ..util.jit import bytes_at, c_kernel, kernel

ZLIB_LEVEL = 9
FAST_BITS = 11
MAX_BITS = 15

# inflate's return values below zero
BAD_HEADER = -1
BAD_BLOCK = -2           # reserved block type, bad stored length, bad code lengths
BAD_CODE = -3            # a bit sequence that is no code, a distance before the start
OVERFLOW = -4            # more output than the block holds, or input read past its end
BAD_LENGTH = -5          # the stream ended before the block was full
BAD_CHECKSUM = -6

_LEN_BASE = np.array([3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115,
                      131, 163, 195, 227, 258], dtype=np.int64)
_LEN_EXTRA = np.array([0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0],
                      dtype=np.int64)
_DIST_BASE = np.array([1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537,
                       2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577], dtype=np.int64)
_DIST_EXTRA = np.array([0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12,
                        13, 13], dtype=np.int64)
_CL_ORDER = np.array([16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15], dtype=np.int64)


def interleave(values: np.ndarray) -> np.ndarray:
    """Index order -> block order: even offsets (black to move) first, then odd ones."""
    return np.concatenate([values[0::2], values[1::2]])


def deinterleave(stored: np.ndarray) -> np.ndarray:
    """Block order -> index order (the inverse of :func:`interleave`)."""
    out = np.empty_like(stored)
    half = (stored.shape[0] + 1) // 2
    out[0::2] = stored[:half]
    out[1::2] = stored[half:]
    return out


def encode_block(stored: np.ndarray) -> bytes:
    """One block (already in block order) as a zlib stream."""
    return zlib.compress(np.ascontiguousarray(stored, dtype=np.uint8).tobytes(), ZLIB_LEVEL)


# =============================================================================
# Kernels
# =============================================================================
@kernel
def _build_code(lengths, n, count, symbol, fast):
    """Canonical Huffman code of ``lengths[0:n]``: ``count[l]`` codes of each length, ``symbol`` the
    symbols in code order, and a look-up table over the next ``count[0]`` input bits (the longest code,
    at most FAST_BITS; first bit lowest): ``fast[bits]`` = symbol << 4 | length, 0 for a longer code.
    Returns False for an over-subscribed code."""
    for i in range(MAX_BITS + 1):
        count[i] = 0
    longest = 0
    for s in range(n):
        count[lengths[s]] += 1
        if lengths[s] > longest:
            longest = lengths[s]
    count[0] = 0
    left = 1
    for ln in range(1, MAX_BITS + 1):
        left = (left << 1) - count[ln]
        if left < 0:
            return False
    offs = np.zeros(MAX_BITS + 2, dtype=np.int64)
    for ln in range(1, MAX_BITS + 1):
        offs[ln + 1] = offs[ln] + count[ln]
    for s in range(n):
        if lengths[s] != 0:
            symbol[offs[lengths[s]]] = s
            offs[lengths[s]] += 1
    bits = min(max(longest, 1), FAST_BITS)
    size = 1 << bits
    for i in range(size):
        fast[i] = 0
    code = 0
    k = 0
    for ln in range(1, MAX_BITS + 1):
        for _ in range(count[ln]):
            if ln <= bits:
                rev = 0
                c = code
                for _b in range(ln):
                    rev = (rev << 1) | (c & 1)
                    c >>= 1
                entry = (symbol[k] << 4) | ln
                j = rev
                while j < size:
                    fast[j] = entry
                    j += 1 << ln
            code += 1
            k += 1
        code <<= 1
    count[0] = bits
    return True


@kernel(inline="always")
def _decode_symbol(bitbuf, bitcnt, count, symbol, fast):
    """The next symbol of a code from the bit buffer (at least MAX_BITS bits in it, or the stream's
    end padded with zeros): ``(symbol or -1, bits used)``."""
    entry = fast[bitbuf & ((1 << count[0]) - 1)]
    if entry != 0:
        return entry >> 4, entry & 15
    code = 0
    first = 0
    index = 0
    for ln in range(1, MAX_BITS + 1):
        code |= (bitbuf >> (ln - 1)) & 1
        c = count[ln]
        if code - c < first:
            return symbol[index + code - first], ln
        index += c
        first += c
        first <<= 1
        code <<= 1
    return -1, 0


@kernel
def _adler_sums(view, n):
    """``(sum x[j], sum (n - j) * x[j])`` over ``view[:n]``: no chain from byte to byte, and indices
    numba knows are not negative, so the loop vectorises."""
    s1 = np.int64(0)
    s2 = np.int64(0)
    for j in range(n):
        x = np.int64(view[j])
        s1 += x
        s2 += (n - j) * x
    return s1, s2


@kernel
def adler32(data, lo, hi):
    """Adler-32 of ``data[lo:hi]`` (RFC 1950): ``a = 1 + sum x``, ``b = n + sum (n - j) * x[j]``, in
    chunks whose sums fit int64 before the modulo."""
    a = np.int64(1)
    b = np.int64(0)
    chunk = 1 << 24                      # n * n * 255 stays below 2**63
    for start in range(lo, hi, chunk):
        n = min(hi, start + chunk) - start
        s1, s2 = _adler_sums(data[start:start + n], n)
        b = (b + n * a + s2) % 65521
        a = (a + s1) % 65521
    return (b << 16) | a


@kernel
def inflate(src, lo, hi, dst, out_lo, out_len):
    """Decode the zlib stream ``src[lo:hi]`` into ``dst[out_lo : out_lo + out_len]``; returns ``out_len``
    or a negative error (BAD_HEADER ... BAD_CHECKSUM).  The stream must fill the block exactly."""
    if hi - lo < 6:
        return BAD_HEADER
    cmf = np.int64(src[lo])
    flg = np.int64(src[lo + 1])
    if (cmf & 15) != 8 or (cmf >> 4) > 7 or ((cmf << 8) | flg) % 31 != 0 or (flg & 0x20) != 0:
        return BAD_HEADER
    pos = lo + 2
    end = hi - 4                         # the Adler-32 trailer
    bitbuf = np.int64(0)
    bitcnt = np.int64(0)
    consumed = np.int64(0)               # bits taken from the buffer, checked against the input's size
    n = np.int64(0)
    work = np.empty(320 + 3 * (MAX_BITS + 1) + 288 + 32 + 19 + 3 * (1 << FAST_BITS), dtype=np.int64)
    lengths = work[0:320]                # one allocation, in views (the tables fill what they use)
    at = 320
    lcount = work[at:at + MAX_BITS + 1]
    at += MAX_BITS + 1
    dcount = work[at:at + MAX_BITS + 1]
    at += MAX_BITS + 1
    ccount = work[at:at + MAX_BITS + 1]
    at += MAX_BITS + 1
    lsym = work[at:at + 288]
    at += 288
    dsym = work[at:at + 32]
    at += 32
    csym = work[at:at + 19]
    at += 19
    lfast = work[at:at + (1 << FAST_BITS)]
    at += 1 << FAST_BITS
    dfast = work[at:at + (1 << FAST_BITS)]
    at += 1 << FAST_BITS
    cfast = work[at:at + (1 << FAST_BITS)]
    lmask = 0
    last = 0
    while last == 0:
        # every read below first tops the buffer up to more than 48 bits (zeros past the input's end)
        while bitcnt <= 48:
            if pos < end:
                bitbuf |= np.int64(src[pos]) << bitcnt
            pos += 1
            bitcnt += 8
        last = bitbuf & 1
        btype = (bitbuf >> 1) & 3
        bitbuf >>= 3
        bitcnt -= 3
        consumed += 3
        if btype == 0:
            drop = consumed & 7          # to the next byte boundary
            if drop:
                drop = 8 - drop
            bitbuf >>= drop
            bitcnt -= drop
            consumed += drop
            at = lo + 2 + (consumed >> 3)
            if at + 4 > end:
                return OVERFLOW
            size = np.int64(src[at]) | (np.int64(src[at + 1]) << 8)
            nsize = np.int64(src[at + 2]) | (np.int64(src[at + 3]) << 8)
            if size != (~nsize & 0xFFFF):
                return BAD_BLOCK
            at += 4
            if at + size > end:
                return OVERFLOW
            if n + size > out_len:
                return OVERFLOW
            for i in range(size):
                dst[out_lo + n + i] = src[at + i]
            n += size
            consumed = (at + size - lo - 2) << 3
            pos = at + size
            bitbuf = 0
            bitcnt = 0
            continue
        if btype == 3:
            return BAD_BLOCK
        if btype == 1:
            for s in range(288):
                lengths[s] = 8 if s < 144 else (9 if s < 256 else (7 if s < 280 else 8))
            _build_code(lengths, 288, lcount, lsym, lfast)
            lmask = (1 << lcount[0]) - 1
            for s in range(30):
                lengths[s] = 5
            _build_code(lengths, 30, dcount, dsym, dfast)
        else:
            nlen = (bitbuf & 31) + 257
            ndist = ((bitbuf >> 5) & 31) + 1
            ncode = ((bitbuf >> 10) & 15) + 4
            bitbuf >>= 14
            bitcnt -= 14
            consumed += 14
            if nlen > 286 or ndist > 30:
                return BAD_BLOCK
            for s in range(19):
                lengths[s] = 0
            for i in range(ncode):
                if bitcnt < 3:
                    while bitcnt <= 48:
                        if pos < end:
                            bitbuf |= np.int64(src[pos]) << bitcnt
                        pos += 1
                        bitcnt += 8
                lengths[_CL_ORDER[i]] = bitbuf & 7
                bitbuf >>= 3
                bitcnt -= 3
                consumed += 3
            if not _build_code(lengths, 19, ccount, csym, cfast):
                return BAD_BLOCK
            i = 0
            while i < nlen + ndist:
                while bitcnt <= 48:
                    if pos < end:
                        bitbuf |= np.int64(src[pos]) << bitcnt
                    pos += 1
                    bitcnt += 8
                sym, used = _decode_symbol(bitbuf, bitcnt, ccount, csym, cfast)
                if sym < 0:
                    return BAD_CODE
                bitbuf >>= used
                bitcnt -= used
                consumed += used
                if sym < 16:
                    lengths[i] = sym
                    i += 1
                    continue
                if sym == 16:
                    if i == 0:
                        return BAD_BLOCK
                    value = lengths[i - 1]
                    repeat = 3 + (bitbuf & 3)
                    take = 2
                elif sym == 17:
                    value = 0
                    repeat = 3 + (bitbuf & 7)
                    take = 3
                else:
                    value = 0
                    repeat = 11 + (bitbuf & 127)
                    take = 7
                bitbuf >>= take
                bitcnt -= take
                consumed += take
                if i + repeat > nlen + ndist:
                    return BAD_BLOCK
                for _ in range(repeat):
                    lengths[i] = value
                    i += 1
            if lengths[256] == 0:
                return BAD_BLOCK
            if not _build_code(lengths, nlen, lcount, lsym, lfast):
                return BAD_BLOCK
            lmask = (1 << lcount[0]) - 1
            for s in range(ndist):
                lengths[s] = lengths[nlen + s]
            if not _build_code(lengths, ndist, dcount, dsym, dfast):
                return BAD_BLOCK
        # the compressed data of a Huffman block
        while True:
            if pos + 8 <= end:                   # the input's end is far: no check per byte
                while bitcnt <= 48:
                    bitbuf |= np.int64(src[pos]) << bitcnt
                    pos += 1
                    bitcnt += 8
            else:
                while bitcnt <= 48:
                    if pos < end:
                        bitbuf |= np.int64(src[pos]) << bitcnt
                    pos += 1
                    bitcnt += 8
            entry = lfast[bitbuf & lmask]
            # literals with short codes, as many as the buffer holds, without a refill in between
            while entry != 0 and (entry >> 4) < 256 and bitcnt >= MAX_BITS + (entry & 15):
                if n >= out_len:
                    return OVERFLOW
                dst[out_lo + n] = entry >> 4
                n += 1
                used = entry & 15
                bitbuf >>= used
                bitcnt -= used
                consumed += used
                entry = lfast[bitbuf & lmask]
            if bitcnt < MAX_BITS + 5:           # a length code and its extra bits must be in the buffer
                continue
            if entry != 0:
                sym = entry >> 4
                used = entry & 15
            else:
                sym, used = _decode_symbol(bitbuf, bitcnt, lcount, lsym, lfast)
                if sym < 0:
                    return BAD_CODE
            bitbuf >>= used
            bitcnt -= used
            consumed += used
            if sym < 256:
                if n >= out_len:
                    return OVERFLOW
                dst[out_lo + n] = sym
                n += 1
                continue
            if sym == 256:
                break
            sym -= 257
            if sym >= 29:
                return BAD_CODE
            extra = _LEN_EXTRA[sym]
            length = _LEN_BASE[sym] + (bitbuf & ((1 << extra) - 1))
            bitbuf >>= extra
            bitcnt -= extra
            consumed += extra
            while bitcnt <= 48:
                if pos < end:
                    bitbuf |= np.int64(src[pos]) << bitcnt
                pos += 1
                bitcnt += 8
            dsymbol, used = _decode_symbol(bitbuf, bitcnt, dcount, dsym, dfast)
            if dsymbol < 0 or dsymbol >= 30:
                return BAD_CODE
            bitbuf >>= used
            bitcnt -= used
            consumed += used
            extra = _DIST_EXTRA[dsymbol]
            dist = _DIST_BASE[dsymbol] + (bitbuf & ((1 << extra) - 1))
            bitbuf >>= extra
            bitcnt -= extra
            consumed += extra
            if dist > n:
                return BAD_CODE
            if n + length > out_len:
                return OVERFLOW
            base = out_lo + n
            if dist == 1:                        # a run: the commonest match in these values
                value = dst[base - 1]
                for i in range(length):
                    dst[base + i] = value
            else:                                # byte by byte (most matches are short: a slice copy
                for i in range(length):          # costs more than the loop)
                    dst[base + i] = dst[base + i - dist]
            n += length
        if consumed > (end - lo - 2) << 3:
            return OVERFLOW
    if consumed > (end - lo - 2) << 3:
        return OVERFLOW
    if n != out_len:
        return BAD_LENGTH
    at = lo + 2 + ((consumed + 7) >> 3)
    if at != end:
        return BAD_LENGTH
    want = (np.int64(src[end]) << 24) | (np.int64(src[end + 1]) << 16) | (np.int64(src[end + 2]) << 8) \
        | np.int64(src[end + 3])
    if adler32(dst, out_lo, out_lo + n) != want:
        return BAD_CHECKSUM
    return n


def _inflate_from_addresses(src, size, dst, count):
    """inflate() over raw memory: ``size`` bytes of stream at ``src`` into ``count`` bytes at ``dst``."""
    return inflate(bytes_at(src, size), 0, size, bytes_at(dst, count), 0, count)


_ENTRY: list = []


def inflate_address() -> int:
    """The address of ``int64 inflate(src, size, dst, count)`` (compiled, or loaded from the cache, on first use)."""
    if not _ENTRY:
        _ENTRY.append(c_kernel("int64(int64, int64, int64, int64)")(_inflate_from_addresses))
    return int(_ENTRY[0].address)
