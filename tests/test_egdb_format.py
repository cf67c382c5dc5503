"""The probing format of the endgame databases: block codec, mapped files, block cache, capture positions
computed from their captures, build plan.

The values a file holds are checked against the format-1 files this project wrote before (one zlib
stream a slice, every value stored): ``tests/data/egdb_v1_values.tsv`` keeps the CRC-32 of every slice's
values and its counts as those files' headers had them, up to five pieces.  Every slice up to four pieces
is built here and every one of its values read back through the probe the search uses.
"""
from __future__ import annotations

import random
import zlib
from pathlib import Path

import numpy as np
import pytest

from uci_checkers.egdb import build as egbuild
from uci_checkers.egdb import codec, plan, store
from uci_checkers.egdb.index import Slice, canonical, king_set_counts, men_offsets, slice_size, slices_up_to, \
    successors, unrank_position
from uci_checkers.egdb.probe import NOT_FOUND, assemble_table, block_error, cache_counters, fork_table, \
    probe_indices
from uci_checkers.rules.position import Position
from uci_checkers.tools import egdb_command

DATA = Path(__file__).parent / "data" / "egdb_v1_values.tsv"
PIECES = 4


def _v1_values() -> dict[Slice, tuple]:
    out = {}
    for line in DATA.read_text().splitlines():
        if line.startswith("#") or not line.strip():
            continue
        name, positions, crc, wins, losses, draws, longest, distances = line.split("\t")
        men_kings = name.replace("m", " ").replace("k", " ").replace("-", " ").split()
        out[Slice(*(int(x) for x in men_kings))] = (int(positions), int(crc, 16), int(wins), int(losses),
                                                    int(draws), int(longest), distances == "1")
    return out


@pytest.fixture(scope="module")
def db4(tmp_path_factory) -> Path:
    directory = tmp_path_factory.mktemp("egdb4")
    assert egbuild.build(directory, PIECES, quiet=True) == len(slices_up_to(PIECES))
    return directory


def _probe_all(eg: np.ndarray, s: Slice, order: np.ndarray) -> np.ndarray:
    out = np.empty(order.shape[0], dtype=np.int64)
    nbk, nwk = king_set_counts(s)
    probe_indices(eg, s.bm, s.bk, s.wm, s.wk, men_offsets(s), nbk, nwk, order, out)
    return out


# --------------------------------------------------------------------------------------------------
# The block codec
# --------------------------------------------------------------------------------------------------
def _inflate(stream: bytes, size: int) -> tuple[int, np.ndarray]:
    src = np.frombuffer(stream, dtype=np.uint8)
    dst = np.zeros(size, dtype=np.uint8)
    return codec.inflate(src, 0, src.shape[0], dst, 0, size), dst


@pytest.mark.parametrize("strategy", [zlib.Z_DEFAULT_STRATEGY, zlib.Z_FILTERED, zlib.Z_HUFFMAN_ONLY, zlib.Z_RLE,
                                      zlib.Z_FIXED])
@pytest.mark.parametrize("level", [0, 1, 9])
def test_inflate_decodes_what_zlib_writes(strategy, level):
    rng = np.random.default_rng(level * 10 + strategy)
    cases = [np.zeros(16384, np.uint8), rng.integers(0, 256, 3000).astype(np.uint8),
             rng.integers(0, 3, 16384).astype(np.uint8),
             np.repeat(rng.integers(0, 60, 400), rng.integers(1, 300, 400)).astype(np.uint8)[:20000]]
    for raw in cases:
        packer = zlib.compressobj(level, zlib.DEFLATED, 15, 9, strategy)
        stream = packer.compress(raw.tobytes()) + packer.flush()
        n, out = _inflate(stream, raw.shape[0])
        assert n == raw.shape[0] and np.array_equal(out, raw)


def _mixed(rng, size: int) -> np.ndarray:
    """Runs of literals from alphabets of every size, and copies of earlier stretches (matches)."""
    parts: list[np.ndarray] = []
    while sum(len(p) for p in parts) < size:
        if parts and rng.random() < 0.4:
            flat = np.concatenate(parts)
            start = int(rng.integers(0, len(flat)))
            parts.append(flat[start:start + int(rng.integers(3, 300))])
        else:
            parts.append(rng.integers(0, int(rng.integers(2, 120)), int(rng.integers(1, 80))).astype(np.uint8))
    return np.concatenate(parts)[:size].astype(np.uint8)


def test_inflate_decodes_literals_and_matches_in_every_mix():
    """A long run of literals leaves the bit buffer low; the length code that follows must still find its
    extra bits loaded (a decoder that did not refill there failed on 3 of these 300 streams)."""
    for seed in range(300):
        raw = _mixed(np.random.default_rng(seed), 4096)
        n, out = _inflate(codec.encode_block(raw), raw.shape[0])
        assert n == raw.shape[0] and np.array_equal(out, raw), seed


def test_every_block_of_the_files_decodes_as_zlib_does(db4):
    for s in slices_up_to(PIECES):
        mapped, info = store.open_slice(db4, s)
        index = mapped.data[mapped.index_at:mapped.index_at + 8 * (mapped.blocks + 1)].view("<i8")
        blocks = mapped.data[mapped.blocks_at:]
        for b in range(mapped.blocks):
            stream = bytes(blocks[index[b]:index[b + 1]])
            want = np.frombuffer(zlib.decompress(stream), dtype=np.uint8)
            n, out = _inflate(stream, want.shape[0])
            assert n == want.shape[0] and np.array_equal(out, want), (s, b)


def test_inflate_refuses_every_damaged_block_without_reading_out_of_bounds():
    rng = np.random.default_rng(7)
    raw = np.repeat(rng.integers(0, 40, 300), rng.integers(1, 120, 300)).astype(np.uint8)[:16384]
    stream = codec.encode_block(raw)
    assert _inflate(stream, raw.shape[0])[0] == raw.shape[0]
    for trial in range(2000):
        damaged = bytearray(stream)
        damaged[rng.integers(0, len(damaged))] ^= 1 << int(rng.integers(0, 8))
        n, out = _inflate(bytes(damaged), raw.shape[0])
        assert n < 0 or np.array_equal(out, raw), trial          # a change the Adler-32 misses must be harmless
        cut = int(rng.integers(0, len(stream)))
        assert _inflate(stream[:cut], raw.shape[0])[0] < 0
    assert _inflate(stream, raw.shape[0] - 1)[0] == codec.OVERFLOW
    assert _inflate(stream, raw.shape[0] + 1)[0] == codec.BAD_LENGTH


def test_block_order_puts_black_to_move_first():
    values = np.arange(9, dtype=np.uint8)
    assert list(codec.interleave(values)) == [0, 2, 4, 6, 8, 1, 3, 5, 7]
    assert np.array_equal(codec.deinterleave(codec.interleave(values)), values)


# --------------------------------------------------------------------------------------------------
# Values: the format-1 checksums, read in full and through the probe
# --------------------------------------------------------------------------------------------------
def test_the_v1_checksums_cover_every_slice_up_to_five_pieces():
    assert set(_v1_values()) == set(slices_up_to(5))


def test_every_value_up_to_four_pieces_equals_the_v1_files(db4):
    """Each slice read back in full and through the mapped probe, in index order and in a random order,
    gives the values the format-1 files held (same CRC-32, same counts)."""
    old = _v1_values()
    db = store.load_directory(db4, PIECES)
    assert db.pieces == PIECES and not db.problems
    full: dict[Slice, np.ndarray] = {}
    rng = np.random.default_rng(1)
    for s in slices_up_to(PIECES):
        positions, crc, wins, losses, draws, longest, distances = old[s]
        table = assemble_table({d: (full[d], men_offsets(d)) for d in full if d.pieces < s.pieces})
        codes, info = store.read_slice(db4, s, table)
        assert (info.positions, zlib.crc32(codes), info.wins, info.losses, info.draws, info.max_distance,
                info.distances) == (positions, crc, wins, losses, draws, longest, distances), s
        full[s] = codes
        order = np.arange(positions, dtype=np.int64)
        assert zlib.crc32(_probe_all(db.table, s, order).astype(np.uint8)) == crc, s
        order = rng.permutation(positions).astype(np.int64)
        assert np.array_equal(_probe_all(db.table, s, order), codes[order]), s
    hits, decoded, computed = cache_counters(db.table)
    assert decoded > 0 and hits > decoded and computed > 0


def test_capture_positions_are_left_out_of_the_files(db4):
    """A file stores a filler where the side to move has a capture; the probe computes the real value."""
    s = Slice(1, 1, 1, 1)
    stored, _ = store.read_stored(db4, s)
    captures = np.zeros(slice_size(s), dtype=np.uint8)
    nbk, nwk = king_set_counts(s)
    store.capture_positions(s.bm, s.bk, s.wm, s.wk, men_offsets(s), nbk, nwk, captures)
    db = store.load_directory(db4, PIECES)
    probed = _probe_all(db.table, s, np.arange(slice_size(s), dtype=np.int64))
    assert 0.05 < captures.mean() < 0.5
    quiet = captures == 0
    assert np.array_equal(stored[quiet], probed[quiet])
    assert not np.array_equal(stored[~quiet], probed[~quiet])


def test_a_tiny_block_cache_and_forked_tables_give_the_same_values(db4):
    s = Slice(1, 1, 1, 1)
    big = store.load_directory(db4, PIECES).table
    tiny = store.load_directory(db4, PIECES, cache_bytes=1).table       # one set of eight blocks
    order = np.random.default_rng(3).permutation(slice_size(s)).astype(np.int64)[:200_000]
    expect = _probe_all(big, s, order)
    assert np.array_equal(_probe_all(tiny, s, order), expect)
    hits, decoded, _ = cache_counters(tiny)
    assert decoded > 50_000                                             # evictions all the way
    twin = fork_table(tiny)
    assert cache_counters(twin) == (0, 0, 0)
    assert np.array_equal(_probe_all(twin, s, order[::-1]), expect[::-1])
    assert cache_counters(tiny) == (hits, decoded, cache_counters(tiny)[2])   # the fork has its own cache


def test_opening_reads_headers_only_and_a_bad_block_is_found_when_probed(db4, tmp_path):
    for path in db4.glob("*.egdb"):
        (tmp_path / path.name).write_bytes(path.read_bytes())
    s = Slice(1, 1, 1, 1)
    path = store.slice_path(tmp_path, s)
    info = store.read_info(path)
    data = bytearray(path.read_bytes())
    mapped, _ = store.open_slice(tmp_path, s)
    block = info.blocks // 2
    index = np.frombuffer(bytes(data[store.INDEX_AT:store.INDEX_AT + 8 * (info.blocks + 1)]), dtype="<i8")
    at = store.INDEX_AT + 8 * (info.blocks + 1) + int(index[block]) + 3
    del mapped
    data[at] ^= 0xFF
    path.write_bytes(bytes(data))
    db = store.load_directory(tmp_path, PIECES)
    assert db.pieces == PIECES and not db.problems                     # nothing decoded at opening
    assert cache_counters(db.table) == (0, 0, 0)
    lo = block << info.block_shift
    got = _probe_all(db.table, s, np.arange(lo, lo + 64, dtype=np.int64))
    assert NOT_FOUND in got
    assert block_error(db.table) == (s.key, block)
    with pytest.raises(store.EgdbFileError, match="corrupt"):
        store.check_file(tmp_path, s)
    assert egdb_command.main(["verify", "--pieces", str(PIECES), "--dir", str(tmp_path)]) == 1


def test_the_engine_says_once_that_a_block_does_not_decode(db4, tmp_path):
    from uci_checkers.engine.facade import Engine
    from uci_checkers.protocols.uci import Protocol

    for path in db4.glob("*.egdb"):
        (tmp_path / path.name).write_bytes(path.read_bytes())
    s = Slice(0, 2, 0, 2)           # every block of a small slice damaged: any probe into it fails
    path = store.slice_path(tmp_path, s)
    info = store.read_info(path)
    data = bytearray(path.read_bytes())
    index = np.frombuffer(bytes(data[store.INDEX_AT:store.INDEX_AT + 8 * (info.blocks + 1)]), dtype="<i8")
    for b in range(info.blocks):
        data[store.INDEX_AT + 8 * (info.blocks + 1) + int(index[b]) + 2] ^= 0xFF
    path.write_bytes(bytes(data))
    lines: list[str] = []
    proto = Protocol(write=lines.append, engine=Engine())
    proto.handle(f"setoption name EGDB Path value {tmp_path}")
    proto.handle("position fen W:WK29,K30:BK1,K2")
    for _ in range(3):
        proto.handle("go depth 4")
        assert proto.engine.wait(60)
    said = [line for line in lines if "does not decode" in line]
    assert len(said) == 1 and s.name in said[0] and said[0].startswith("info string egdb:"), said
    assert sum(1 for line in lines if line.startswith("bestmove")) == 3
    proto.engine.quit()


# --------------------------------------------------------------------------------------------------
# The plan
# --------------------------------------------------------------------------------------------------
def test_successors_hold_every_slice_a_move_leads_into():
    rng = random.Random(5)
    for s in slices_up_to(6):
        offsets = men_offsets(s)
        nbk, nwk = king_set_counts(s)
        n = slice_size(s, offsets)
        allowed = successors(s) | {s}
        for _ in range(300):
            b, w, k, stm = (int(x) for x in unrank_position(rng.randrange(n), s.bm, s.bk, s.wm, s.wk, offsets, nbk,
                                                            nwk))
            pos = Position(b, w, k, stm)
            for move in pos.legal_moves():
                after = pos.play(move)
                bk = bin(after.black & after.kings).count("1")
                wk = bin(after.white & after.kings).count("1")
                bm = bin(after.black).count("1") - bk
                wm = bin(after.white).count("1") - wk
                if bm + bk and wm + wk:
                    assert canonical(Slice(bm, bk, wm, wk)) in allowed, (s, pos.fen(), str(move))


def test_the_plan_orders_by_dependency_and_states_memory():
    p = plan.make_plan(6)
    done: set[Slice] = set()
    for st in p.steps:
        assert set(st.uses) <= done, st.slice
        done.add(st.slice)
    big = max(p.solved, key=lambda st: st.positions)
    assert (big.slice, big.positions) == (Slice(1, 2, 1, 2), 249_933_600)
    assert big.memory >= plan.SOLVER_BYTES * big.positions
    assert p.peak_memory < 12e9                              # fits 24 GB with an engine beside it
    levels = plan.dependency_levels(slices_up_to(6))
    assert all(levels[d] < levels[s] for s in slices_up_to(6) for d in successors(s))
    wall1, _ = plan.schedule(p.steps, 1)
    wall16, timeline = plan.schedule(p.steps, 16)
    assert wall16 < wall1 and len(timeline) == len(p.solved)
    for start, end, st in timeline:
        for d in st.uses:
            assert next(e for _, e, x in timeline if x.slice == d) <= start


def test_dry_run_prints_the_plan(tmp_path, capsys):
    assert egdb_command.main(["build", "--pieces", "7", "--dir", str(tmp_path), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "plan for 7 pieces" in out and "largest slice 1m2k-2m2k: 2,831,879,232 positions" in out
    assert "workers" in out and not list(tmp_path.iterdir())


def test_a_build_states_its_plan_and_reports_progress_off_a_terminal(tmp_path):
    import io

    stream = io.StringIO()
    assert egbuild.build(tmp_path, 3, stream=stream, progress_every=0.0) == len(slices_up_to(3))
    text = stream.getvalue()
    n = len(slices_up_to(3))
    assert text.startswith(f"plan: {n} of {n} slices to solve") and "GB of work arrays" in text
    assert "egdb build:  " in text and "%  0m1k-0m1k" in text    # plain progress lines inside a slice (util.progress)
    stream = io.StringIO()
    assert egbuild.build(tmp_path, 3, stream=stream) == 0
    assert "(already built)" in stream.getvalue() and "plan:" not in stream.getvalue()


def test_search_threads_probe_their_own_forks(db4):
    """Lazy SMP helpers would share the block cache of one table (a data race): each gets a fork."""
    from uci_checkers.rules.position import Game
    from uci_checkers.search.alphabeta import Searcher, SearchLimits

    db = store.load_directory(db4, PIECES)
    searcher = Searcher(4)
    searcher.set_threads(2)
    searcher.set_egdb(db.table)
    main, helper = searcher.egdb_tables()
    assert main is db.table and helper is not main and helper[0] == main[0]
    # six pieces, depth 12: long enough for the helper to probe five-piece positions too
    result = searcher.search(Game(Position.from_fen("W:W27,28,K30:B6,K1,K2")), SearchLimits(depth=12),
                             lambda i: None, np.zeros(1, dtype=np.int64))
    assert result.best is not None
    assert sum(cache_counters(main)[:2]) > 0 and sum(cache_counters(helper)[:2]) > 0
    searcher.set_threads(1)
    assert searcher.egdb_tables() == [db.table]


def test_the_parts_by_most_advanced_men_add_up_to_the_slice():
    for s in [Slice(1, 1, 1, 1), Slice(2, 0, 2, 1), Slice(0, 2, 1, 2), Slice(3, 0, 0, 1), Slice(1, 2, 2, 2)]:
        parts = plan.split_sizes(s)
        assert sum(parts.values()) == slice_size(s), s
        assert all(-1 <= rb <= 6 and -1 <= rw <= 6 for rb, rw in parts)
