"""``uci-checkers train``: fit the evaluation weights to self-play positions.

The model is the evaluation itself (:mod:`uci_checkers.search.evaluate`): the score is a
sum of feature weights, mixed between an opening and an endgame set by the piece
count.  It is fitted as a logistic regression, ``P(win) = sigmoid(z)``, with
Adam over sparse minibatches and a little L2, to a target that mixes the game
result (win 1, draw 1/2, loss 0, side to move's view) and, with
``--score-weight``, the search score's win probability.  Positions of one game
stay on one side of the validation split.  Log-loss (train and validation) is
reported per epoch; the best validation epoch is kept.

Scales: ``z`` is in logit units.  Each ``--data`` source's search scores become
win probabilities by that source's own logistic scale (``P(win) = sigmoid(score
/ K)`` fitted on its games: each generation's engine has its own).  The weights
file holds ``z * K0`` centi-men, ``K0`` being the first source's scale (list the
oldest generation first) or ``--scale``, so the search's margins keep their
meaning from one generation to the next.

Reproducible: the same data (their digests are recorded), seed and flags give
the same weights file.

Output: a new file, ``--out`` (default ``trained.weights``); an existing file,
the shipped ``uci_checkers/data/eval-w5.weights`` included, is replaced only with
``--overwrite``.  The engine plays with it through ``setoption name EvalFile
value FILE`` (``match --engine ... option.EvalFile=FILE``), the tools through
``--weights FILE``.
"""
from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional, TextIO

import numpy as np

from ..util.exitcodes import EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE
from ..util.commandline import ToolParser, check_output_path
from ..util.progress import Progress
from ..search.evaluate import MAX_ACTIVE, NF, PHASE_PIECES, UNIT, feature_matrix
from .dataset import GAMES_PER_SOURCE, DataError, PositionSet, load_pdn_positions, load_shards
from .metrics import fit_scale, log_loss


DEFAULT_OUT = "trained.weights"     # train never writes over a file (the shipped weights included) unless told


@dataclass
class Features:
    """Sparse features of a position set: ``idx``/``cnt`` (N x MAX_ACTIVE), phase ``p`` (opening share)."""

    idx: np.ndarray
    cnt: np.ndarray
    p: np.ndarray

    def __len__(self) -> int:
        return int(self.idx.shape[0])

    def take(self, rows: np.ndarray) -> "Features":
        return Features(self.idx[rows], self.cnt[rows], self.p[rows])


def features_of(data: PositionSet) -> Features:
    n = len(data)
    idx = np.zeros((n, MAX_ACTIVE), dtype=np.int64)
    cnt = np.zeros((n, MAX_ACTIVE), dtype=np.int64)
    pieces = np.zeros(n, dtype=np.int64)
    feature_matrix(data.black, data.white, data.kings, data.stm, idx, cnt, pieces)
    width = int((cnt != 0).sum(axis=1).max(initial=1))
    return Features(idx[:, :width].copy(), cnt[:, :width].astype(np.float64), pieces / PHASE_PIECES)


def logits(w: np.ndarray, f: Features) -> np.ndarray:
    """z for every row: sum over active features of count * (w_open * p + w_end * (1 - p))."""
    wo = w[2 * f.idx]
    we = w[2 * f.idx + 1]
    return ((wo * f.p[:, None] + we * (1.0 - f.p[:, None])) * f.cnt).sum(axis=1)


def source_scales(data: PositionSet, mask: np.ndarray) -> dict[int, float]:
    """The logistic scale of the search scores of each data source (directory) on the masked rows:
    every generation's engine has its own scale, so its scores become win probabilities by their own."""
    results = data.result / 2.0
    source = data.game // GAMES_PER_SOURCE
    return {int(k): fit_scale(data.score[mask & (source == k)].astype(np.float64), results[mask & (source == k)])
            for k in np.unique(source[mask])}


def targets(data: PositionSet, score_weight: float, scales: dict[int, float]) -> np.ndarray:
    t = data.result / 2.0
    if score_weight > 0:
        source = data.game // GAMES_PER_SOURCE
        k = np.array([scales.get(int(s), 1e9) for s in source])
        t = (1 - score_weight) * t + score_weight / (1.0 + np.exp(-data.score / k))
    return t


def split_by_game(data: PositionSet, val_share: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Boolean masks (train, validation): whole games go to one side, chosen by a seeded hash."""
    games = np.unique(data.game)
    rng = np.random.default_rng(seed)
    val_games = games[rng.random(games.shape[0]) < val_share]
    val = np.isin(data.game, val_games)
    return ~val, val


@dataclass
class TrainConfig:
    epochs: int = 12
    batch: int = 2048
    lr: float = 0.01
    l2: float = 1e-6
    val_share: float = 0.1
    score_weight: float = 0.0
    seed: int = 1
    scale: Optional[float] = None


def train(data: PositionSet, config: TrainConfig,
          on_epoch: Optional[Callable[[int, float, float, float], None]] = None,
          progress: Optional[TextIO] = sys.stderr) -> tuple[np.ndarray, dict]:
    """Fit float weights (logit units, 2*NF) to ``data``; returns them and a report dict."""
    t0 = time.monotonic()
    train_mask, val_mask = split_by_game(data, config.val_share, config.seed)
    results_only = data.result / 2.0
    scales = source_scales(data, train_mask)
    # the output scale: the first source's (the oldest engine's), unless given, so that centi-men keep
    # their meaning for the search's margins from one generation to the next
    scale = config.scale or scales[min(scales)]
    t_all = targets(data, config.score_weight, scales)
    feats = features_of(data)
    tr = np.flatnonzero(train_mask)
    va = np.flatnonzero(val_mask)
    ftr, fva = feats.take(tr), feats.take(va)
    ttr, tva = t_all[tr], results_only[va]        # validation is always against the game results
    w = np.zeros(2 * NF)
    m1 = np.zeros(2 * NF)
    m2 = np.zeros(2 * NF)
    b1, b2, eps = 0.9, 0.999, 1e-8
    rng = np.random.default_rng(config.seed)
    step = 0
    best = (float("inf"), w.copy(), 0)
    history = []
    # one epoch's batches: a live bar on a terminal, a line every half minute in a log
    bar = Progress(progress, "train")
    for epoch in range(1, config.epochs + 1):
        order = rng.permutation(len(ftr))
        nb = max(1, (len(order) + config.batch - 1) // config.batch)
        for bi in range(nb):
            rows = order[bi * config.batch:(bi + 1) * config.batch]
            f = ftr.take(rows)
            z = logits(w, f)
            err = (1.0 / (1.0 + np.exp(-z)) - ttr[rows]) / len(rows)
            contrib = err[:, None] * f.cnt
            g = np.empty(2 * NF)
            g[0::2] = np.bincount(f.idx.ravel(), (contrib * f.p[:, None]).ravel(), minlength=NF)
            g[1::2] = np.bincount(f.idx.ravel(), (contrib * (1.0 - f.p[:, None])).ravel(), minlength=NF)
            g += config.l2 * w
            step += 1
            m1 = b1 * m1 + (1 - b1) * g
            m2 = b2 * m2 + (1 - b2) * g * g
            w -= config.lr * (m1 / (1 - b1 ** step)) / (np.sqrt(m2 / (1 - b2 ** step)) + eps)
            if bi % 50 == 0:                    # the epoch's last batch: its losses line says it
                bar.update(f"epoch {epoch}/{config.epochs} {bi + 1}/{nb} batches", (bi + 1) / nb)
        tl = log_loss(logits(w, ftr), ttr)
        vl = log_loss(logits(w, fva), tva) if len(fva) else float("nan")
        history.append({"epoch": epoch, "train_loss": round(tl, 6), "val_loss": round(vl, 6)})
        bar.note(f"epoch {epoch}/{config.epochs}: train log-loss {tl:.5f}  validation {vl:.5f}"
                 f"  ({time.monotonic() - t0:.0f} s)")
        if on_epoch is not None:
            on_epoch(epoch, tl, vl, time.monotonic() - t0)
        if len(fva) == 0 or vl < best[0]:
            best = (vl, w.copy(), epoch)
    bar.close()
    report = {"positions": len(data), "train_positions": int(len(tr)), "val_positions": int(len(va)),
              "scale": round(float(scale), 4), "source_scales": {str(k): round(v, 2) for k, v in scales.items()}, "best_epoch": best[2], "val_loss": round(best[0], 6),
              "history": history, "seconds": round(time.monotonic() - t0, 1)}
    return best[1], report


def to_table(w: np.ndarray, scale: float) -> np.ndarray:
    """Logit weights -> the integer table the kernels sum (1/UNIT centi-men)."""
    return np.rint(w * scale * UNIT).astype(np.int64)


def main(argv: Optional[list[str]] = None) -> int:
    from ..search import weights as wmod
    ap = ToolParser(prog="uci-checkers train", description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", action="append", required=True,
                    help="a shard directory or file from `uci-checkers selfplay` (repeatable)")
    ap.add_argument("--out", default=DEFAULT_OUT,
                    help=f"weights file to write, a new one (default {DEFAULT_OUT} in the current directory); "
                         "use it with EvalFile or --weights, and copy it over uci_checkers/data/eval-w5.weights "
                         "to ship it")
    ap.add_argument("--overwrite", action="store_true", help="replace --out if it exists")
    ap.add_argument("--epochs", type=int, default=12)
    ap.add_argument("--batch", type=int, default=2048)
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--l2", type=float, default=1e-6)
    ap.add_argument("--val-share", type=float, default=0.1)
    ap.add_argument("--score-weight", type=float, default=0.0,
                    help="share of the target taken from the search score (0 = game results only)")
    ap.add_argument("--scale", type=float, default=None, help="centi-men per logit unit (default: fitted)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--limit", type=int, default=None, help="use at most this many positions")
    ap.add_argument("--validate-pdn", default=None,
                    help="also report log-loss on the finished games of this PDN file (e.g. training-data/validation.pdn)")
    args = ap.parse_args(argv)
    if not (1 <= args.epochs <= 10000 and 1 <= args.batch <= 10**7 and 0 < args.lr < 10
            and 0 <= args.score_weight <= 1 and 0 <= args.val_share < 1):
        ap.error("a numeric flag is out of range")
    out = Path(args.out)
    try:
        check_output_path(str(out), "--out")
    except ValueError as exc:
        ap.error(str(exc))
    if not args.overwrite and wmod.existing_output(out):     # checked before the work: never replaced by default
        ap.error(wmod.existing_output(out))
    try:
        data = load_shards([Path(p) for p in args.data], args.limit)
        pdn = load_pdn_positions(Path(args.validate_pdn)) if args.validate_pdn else None
    except (DataError, OSError) as exc:
        print(f"uci-checkers train: {exc}", file=sys.stderr)
        return EXIT_USAGE
    config = TrainConfig(args.epochs, args.batch, args.lr, args.l2, args.val_share, args.score_weight,
                         args.seed, args.scale)
    try:
        w, report = train(data, config)
    except KeyboardInterrupt:
        print("\nuci-checkers train: interrupted; no weights written", file=sys.stderr)
        return EXIT_INTERRUPTED
    if pdn is not None:
        fp = features_of(pdn)
        report["pdn_validation"] = {"file": Path(args.validate_pdn).name, "positions": len(pdn),
                                    "log_loss": round(log_loss(logits(w, fp), pdn.result / 2.0), 6)}
    provenance = {"data": [str(p) for p in args.data],
                  "data_files": len(data.sources), "data_digest": data.identity(),
                  "config": config.__dict__, "report": report, "trainer": "uci_checkers.learn.train"}
    from .selfplay import engine_identity
    provenance["code"] = {k: v for k, v in engine_identity().items() if k != "weights"}
    saved = wmod.save_weights(out, to_table(w, report["scale"]), provenance)
    print(json.dumps({"out": str(out), "checksum": saved.checksum, **{k: report[k] for k in (
        "positions", "val_loss", "best_epoch", "scale", "seconds")},
        **({"pdn_log_loss": report["pdn_validation"]["log_loss"]} if pdn is not None else {})}))
    return EXIT_OK
