"""``uci-checkers rescore``: recorded shards with every search score made again by a newer evaluation.

A self-play shard keeps the score of the engine that played it: the early generations' scores
are the hand-written evaluation's or the first pattern tables', four thousand nodes deep.  A
network fitted to those scores half learns the weaker engine's opinion.  This tool searches
every position of the shards of ``--data`` again (``--nodes`` nodes, the evaluation of
``--weights`` or the shipped one, a cleared table of ``--hash`` MB, one thread) and writes each
shard under the same name in ``--out``: the same positions, results, plies and game numbers,
only ``score`` new.  ``train-net --data OUT`` reads them like the originals.

Unlike ``relabel`` (a chosen sample of unique positions, searched deeply, with database
results) it keeps every row, so repeated positions (openings) keep each game's result, and it
never changes a result.  A position's new score depends only on the position and the settings
(a cleared table and history before each search), so a shard is the same whichever process and
order made it, and a run stopped part way continues where it stopped: finished shards are kept
(Ctrl-C exits 130).  Each output shard's ``meta`` names its input (file and SHA-256), the
settings and the engine.
"""
from __future__ import annotations

import json
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Optional, TextIO

import numpy as np

from ..util.atomicfile import atomic_output
from ..util.exitcodes import EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE
from ..util.commandline import ToolParser
from ..util.interrupts import raise_if_interrupted
from ..util.progress import Progress
from ..util.workpool import check_parent, enter_worker, run_in_processes
from .dataset import DataError, read_shard
from .relabel import RelabelConfig, search_config, worker_labeller
from .selfplay import engine_identity

RESCORE_FORMAT = 1
COLUMNS = ("black", "white", "kings", "stm", "score", "ply", "result", "game")
DEFAULT_NODES = 6000
DEFAULT_HASH_MB = 1          # the table is cleared before every search: small is fast at a few thousand nodes


def rescore_shard(config: RelabelConfig, source: str, target: str, meta: dict,
                  parent: Optional[int] = None) -> tuple[str, int, int]:
    """Search every distinct position of shard ``source`` and write it as ``target``; returns
    (target, rows, searches)."""
    labeller = worker_labeller(config)
    enter_worker(parent)
    arrays, digest = read_shard(Path(source), COLUMNS + ("meta",))
    keys = np.stack([arrays[c] for c in ("black", "white", "kings", "stm")], axis=1)
    distinct, first, inverse = np.unique(keys, axis=0, return_index=True, return_inverse=True)
    scores = np.zeros(len(distinct), dtype=np.int64)
    for n, i in enumerate(first):
        if n % 64 == 0:
            check_parent(parent, "rescore")
        scores[n] = labeller.label(*(int(arrays[c][i]) for c in ("black", "white", "kings", "stm")))
    out = {k: arrays[k] for k in COLUMNS}
    out["score"] = scores[inverse.reshape(-1)]
    old_meta = bytes(arrays["meta"]).decode(errors="replace")
    meta = dict(meta, input={"file": f"{Path(source).parent.name}/{Path(source).name}",
                             "sha256": digest, "meta": old_meta},
                rows=int(keys.shape[0]), searches=int(len(distinct)))
    out["meta"] = np.frombuffer(json.dumps(meta, sort_keys=True).encode(), dtype=np.uint8)
    with atomic_output(Path(target)) as f:
        np.savez_compressed(f, **out)
    return target, int(keys.shape[0]), int(len(distinct))


def rescore(data_dir: Path, out_dir: Path, config: RelabelConfig, jobs: int = 1,
            progress: Optional[TextIO] = sys.stderr) -> dict:
    """Rescore every shard of ``data_dir`` into ``out_dir`` (finished ones are skipped); returns a summary."""
    shards = sorted(data_dir.glob("shard-*.npz"))
    if not shards:
        raise DataError(f"no shard-*.npz files under {data_dir}")
    if out_dir.resolve() == data_dir.resolve():
        raise DataError(f"--out {out_dir} is the input directory: the recorded scores would be lost")
    out_dir.mkdir(parents=True, exist_ok=True)
    meta = {"format": RESCORE_FORMAT, "config": asdict(config), "engine": engine_identity(config.weights)}
    todo = [p for p in shards if not (out_dir / p.name).exists()]
    done = len(shards) - len(todo)
    rows = searches = 0
    t0 = time.monotonic()
    bar = Progress(progress, "rescore")

    def report() -> None:
        rate = searches / max(1e-9, time.monotonic() - t0)
        bar.update(f"{done}/{len(shards)} shards {rate:.0f} positions/s", done / len(shards))

    def finished(outcome: tuple[str, int, int]) -> None:
        nonlocal done, rows, searches
        done, rows, searches = done + 1, rows + outcome[1], searches + outcome[2]
        report()

    report()
    items = [(config, str(p), str(out_dir / p.name), meta) for p in todo]
    if jobs <= 1:
        for item in items:
            finished(rescore_shard(*item))
            raise_if_interrupted()
    else:
        run_in_processes(rescore_shard, items, jobs, finished)
    bar.close()
    return {"shards": len(shards), "new_shards": len(todo), "new_rows": rows, "searches": searches,
            "seconds": round(time.monotonic() - t0, 1), "out": str(out_dir)}


def main(argv: Optional[list[str]] = None) -> int:
    ap = ToolParser(prog="uci-checkers rescore", description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", required=True, metavar="DIR", help="a directory of self-play shards")
    ap.add_argument("--out", required=True, metavar="DIR",
                    help="where the rescored shards go, under the same names (created; resumed)")
    ap.add_argument("--nodes", type=int, default=DEFAULT_NODES, help=f"nodes per search (default {DEFAULT_NODES})")
    ap.add_argument("--hash", type=int, default=DEFAULT_HASH_MB, metavar="MB",
                    help=f"transposition table per process, cleared before every position (default {DEFAULT_HASH_MB})")
    ap.add_argument("--jobs", type=int, default=1, help="processes searching at once (default 1)")
    ap.add_argument("--weights", metavar="FILE", default=None, help="evaluation weights the search uses")
    ap.add_argument("--egdb-dir", default="", help="endgame database directory (default: the engine's own)")
    ap.add_argument("--egdb-pieces", type=int, default=0,
                    help="let the search use database slices up to this many pieces (default 0: none)")
    args = ap.parse_args(argv)
    for name in ("nodes", "jobs"):
        if not 1 <= getattr(args, name) <= 10**9:
            ap.error(f"--{name} must be between 1 and 1000000000, not {getattr(args, name)}")
    data, out = Path(args.data), Path(args.out)
    if not data.is_dir():
        ap.error(f"--data {data}: no such directory")
    if out.exists() and not out.is_dir():
        ap.error(f"--out {out} exists and is not a directory")
    config = search_config(ap, args)
    try:
        summary = rescore(data, out, config, args.jobs)
    except DataError as exc:
        print(f"uci-checkers rescore: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("\nuci-checkers rescore: interrupted; finished shards are kept (run again to continue)",
              file=sys.stderr)
        return EXIT_INTERRUPTED
    print(json.dumps(summary))
    return EXIT_OK
