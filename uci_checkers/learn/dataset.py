"""Training data as arrays: self-play shards, and PDN games for validation.

A :class:`PositionSet` holds quiet positions (side to move has no capture) with
their label: the game result from the side to move's view (0 loss, 1 draw, 2
win), the search score when known, and the game each came from (validation
splits by game, never by position: positions of one game are alike).
"""
from __future__ import annotations

import hashlib
import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import numpy as np


GAMES_PER_SOURCE = 10**9       # game numbers of the n-th --data source start at n * GAMES_PER_SOURCE


class DataError(ValueError):
    """Training data that cannot be read (no shards, a broken shard, an unreadable PDN)."""


@dataclass
class PositionSet:
    black: np.ndarray
    white: np.ndarray
    kings: np.ndarray
    stm: np.ndarray
    result: np.ndarray        # from the side to move's view: 0 loss, 1 draw, 2 win
    score: np.ndarray         # search score (side to move), 0 when unknown
    game: np.ndarray          # game number (for splits)
    sources: list[dict]       # what the data came from (files and digests)

    def __len__(self) -> int:
        return int(self.black.shape[0])

    def subset(self, mask: np.ndarray) -> "PositionSet":
        return PositionSet(self.black[mask], self.white[mask], self.kings[mask], self.stm[mask],
                           self.result[mask], self.score[mask], self.game[mask], self.sources)

    def identity(self) -> str:
        """A digest of the sources (file digests in order): the data set's name in a weights header."""
        h = hashlib.sha256()
        for src in self.sources:
            h.update(json.dumps(src, sort_keys=True).encode())
        return h.hexdigest()


def piece_counts(black: np.ndarray, white: np.ndarray) -> np.ndarray:
    """The number of pieces on the board in every position (bitboard arrays)."""
    return np.bitwise_count((black | white).astype(np.uint64)).astype(np.int64)


def read_shard(path: Path, columns: tuple[str, ...]) -> tuple[dict[str, np.ndarray], str]:
    """The named int64 columns of one shard file, and ``meta`` (bytes, empty when absent) if asked for, with
    the file's SHA-256 (recorded with what is made from it as the data's identity); ``DataError`` when it is
    not a readable shard. The file is read once for both."""
    try:
        data = path.read_bytes()
        with np.load(io.BytesIO(data)) as z:
            out = {k: np.asarray(z[k], dtype=np.int64) for k in columns if k != "meta"}
            if "meta" in columns:
                out["meta"] = np.asarray(z["meta"], dtype=np.uint8) if "meta" in z.files else np.zeros(0, np.uint8)
    except (OSError, KeyError, ValueError) as exc:
        raise DataError(f"{path}: not a readable self-play shard ({exc})") from None
    return out, hashlib.sha256(data).hexdigest()


def load_shards(paths: list[Path], limit: Optional[int] = None) -> PositionSet:
    """Every position of the shards under ``paths`` (files or directories), in a fixed order."""
    cols: dict[str, list[np.ndarray]] = {k: [] for k in ("black", "white", "kings", "stm", "result", "score",
                                                         "game")}
    for p in paths:
        if not p.exists():
            raise DataError(f"{p}: no such file or directory")
    sources = []
    total = 0
    files = [(d, f) for d, p in enumerate(paths) for f in (sorted(p.glob("shard-*.npz")) if p.is_dir() else [p])]
    for directory, path in files:
        arrays, digest = read_shard(path, ("black", "white", "kings", "stm", "result", "score", "game"))
        # results are stored from Black's view: turn them to the side to move's
        res = arrays["result"]
        arrays["result"] = np.where(arrays["stm"] == 0, res, 2 - res)
        # game numbers are unique within a directory: number the directories apart
        arrays["game"] = arrays["game"] + directory * GAMES_PER_SOURCE
        for k, v in arrays.items():
            cols[k].append(v)
        sources.append({"file": f"{path.parent.name}/{path.name}", "sha256": digest})
        total += len(arrays["black"])
        if limit is not None and total >= limit:
            break
    if not sources:
        raise DataError(f"no shard-*.npz files under {', '.join(str(p) for p in paths)}")
    out = {k: np.concatenate(v) for k, v in cols.items()}
    return PositionSet(out["black"], out["white"], out["kings"], out["stm"], out["result"], out["score"],
                       out["game"], sources)


def load_pdn_positions(path: Path) -> PositionSet:
    """Quiet positions of the finished games of a PDN file, labelled with each game's result."""
    from ..rules.pdn import normalize_result, read_pdn_file
    doc = read_pdn_file(str(path))
    cols: dict[str, list[int]] = {k: [] for k in ("black", "white", "kings", "stm", "result", "game")}
    for gi, pg in enumerate(doc.games):
        result = {"1-0": 2, "0-1": 0, "1/2-1/2": 1}.get(normalize_result(pg.result) or "")
        if result is None:
            continue
        for pos in pg.positions():
            if pos.is_capture_pending() or not pos.has_legal_move():
                continue
            cols["black"].append(pos.black)
            cols["white"].append(pos.white)
            cols["kings"].append(pos.kings)
            cols["stm"].append(pos.turn)
            cols["result"].append(result if pos.turn == 0 else 2 - result)
            cols["game"].append(gi)
    if not cols["black"]:
        raise DataError(f"{path}: no finished games with positions")
    arr = {k: np.asarray(v, dtype=np.int64) for k, v in cols.items()}
    return PositionSet(arr["black"], arr["white"], arr["kings"], arr["stm"], arr["result"],
                       np.zeros_like(arr["black"]), arr["game"], [{"file": path.name}])

