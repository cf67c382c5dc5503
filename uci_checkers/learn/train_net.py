"""``uci-checkers train-net``: fit the network evaluation (:mod:`uci_checkers.search.nnue`) to
self-play positions with PyTorch on the CPU, quantise it and write a weights file of kind network.

Needs the ``train`` extra (``pip install -e '.[train]'``: PyTorch); the engine itself never imports
torch.  The data, split and targets are those of ``uci-checkers train``: the shards' positions,
whole games held out for validation, the target a blend of the game result and the search score's
win probability (``--score-weight``), each data source's scores read by its own logistic scale,
and the first source's scale (centi-men per logit unit) fixing the output's centi-men.

The float model is the network of ``nnue`` exactly: a shared first layer applied to Black's and
White's view (``N_IN`` binary inputs each), the side to move's accumulator first, clipped ReLU
(0..1), the small layers of the position's piece-count bucket; the output is a logit, trained
with cross-entropy against the soft target (Adam, minibatches).  The best validation epoch is
kept, then quantised (:func:`quantise`).  Exit status 1 (nothing written) if the quantised network
would leave the kernels' integer ranges (``nnue.check_ranges``).

``--phases 4`` fits a network with one first layer per game phase (``nnue.PHASE_LAYOUT``: at most 6
pieces, 7-8, more with a king, more without, GuiNN's four nets): a shared first layer plus each phase's
own difference, which starts at zero, so a phase with few positions stays near the shared layer; the
quantised layer of a phase is the sum.

``--oversample K`` repeats every training position with at least ``--oversample-from`` pieces K
times (:func:`oversampled_rows`; the validation set stays as it is), to weight the early middle game,
where games are decided, against the endgames that most self-play positions are.

Reproducible: one thread, a seeded generator for initialisation and order; the same data (their
digests are recorded), seed and flags give the same weights file.
"""
from __future__ import annotations

import json
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Optional

import numpy as np

from ..rules.bitboard import SQUARE_TO_BIT
from ..search import nnue as N
from ..search.layouts import DEFAULT_NAME
from ..util.exitcodes import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE
from ..util.commandline import ToolParser
from .dataset import DataError, PositionSet, load_pdn_positions, load_shards, piece_counts
from .metrics import log_loss
from .train import source_scales, split_by_game, targets


class TrainError(RuntimeError):
    """The trainer cannot run (PyTorch missing)."""


def _torch():
    try:
        import torch
    except ImportError:
        raise TrainError("PyTorch is not installed: pip install -e '.[train]'") from None
    return torch


# --- features -------------------------------------------------------------------------------------
def black_view(data: PositionSet) -> np.ndarray:
    """The N_IN binary inputs of Black's perspective, one uint8 row per position."""
    n = len(data)
    x = np.zeros((n, N.N_IN), dtype=np.uint8)
    men = data.black & ~data.kings, data.black & data.kings, data.white & ~data.kings, data.white & data.kings
    for piece, bb in enumerate(men):
        for s in range(32):
            x[:, N.FEAT[0, piece, SQUARE_TO_BIT[s]]] = (bb >> SQUARE_TO_BIT[s]) & 1
    return x


def white_permutation() -> np.ndarray:
    """Columns of Black's view that make White's: ``white = black[:, PERM]`` (own and opp swap,
    the board turns round)."""
    perm = np.zeros(N.N_IN, dtype=np.int64)
    for piece in range(4):
        for s in range(32):
            bit = SQUARE_TO_BIT[s]
            perm[N.FEAT[1, piece, bit]] = N.FEAT[0, piece, bit]
    return perm


def buckets(data: PositionSet) -> np.ndarray:
    """``nnue.bucket_of`` of every position."""
    return np.clip((piece_counts(data.black, data.white) - 1) // 6, 0, N.N_BUCKETS - 1)


def phases(data: PositionSet) -> np.ndarray:
    """``nnue.phase_of`` of every position: the first layer a phase network uses for it."""
    table = np.array([[N.phase_of(n, bool(k)) for k in (0, 1)] for n in range(N.MAX_PIECES + 1)], dtype=np.int64)
    return table[piece_counts(data.black, data.white), (data.kings != 0).astype(np.int64)]


def oversampled_rows(data: PositionSet, from_pieces: int, copies: int) -> np.ndarray:
    """The rows to append to a training set so that every position with at least ``from_pieces``
    pieces appears ``copies`` times: those rows in order, ``copies - 1`` times over.

    Games are decided in the early middle game, but most self-play positions are endgames (n15's
    data: 16.6% have 13 pieces or more), so an even weighting spends the shared first layer mostly
    on endings (docs/measurements.md)."""
    if copies <= 1:
        return np.zeros(0, dtype=np.int64)
    rows = np.flatnonzero(piece_counts(data.black, data.white) >= from_pieces).astype(np.int64)
    return np.tile(rows, copies - 1)


# --- the model ------------------------------------------------------------------------------------
def make_model(seed: int, layers: int = 1):
    """The float network with one first layer, or (``layers`` ``N_PHASES``) one per game phase."""
    torch = _torch()
    nn = torch.nn

    class Net(nn.Module):
        """The float network of :mod:`uci_checkers.search.nnue` (same layers, same order)."""

        def __init__(self) -> None:
            super().__init__()
            self.layers = layers
            self.ft = nn.Linear(N.N_IN, N.H)
            self.l2 = nn.Linear(2 * N.H, N.L2 * N.N_BUCKETS)
            self.l3 = nn.Linear(N.L2, N.L3 * N.N_BUCKETS)
            self.out = nn.Linear(N.L3, N.N_BUCKETS)
            if layers > 1:            # each phase's difference from the shared first layer, from zero
                self.ft_phase = nn.Linear(N.N_IN * layers, N.H, bias=False)
                self.ft_phase_bias = nn.Parameter(torch.zeros(layers, N.H))
                nn.init.zeros_(self.ft_phase.weight)

        def first_layer(self, x, phase):
            y = self.ft(x)
            if self.layers == 1:
                return y
            # the inputs in the phase's block of N_IN columns (zeros elsewhere): one matrix product
            hot = torch.nn.functional.one_hot(phase, self.layers).to(x.dtype)
            spread = (hot[:, :, None] * x[:, None, :]).reshape(x.shape[0], self.layers * N.N_IN)
            return y + self.ft_phase(spread) + self.ft_phase_bias[phase]

        def forward(self, xs, xo, bucket, phase):
            a = torch.clamp(torch.cat([self.first_layer(xs, phase), self.first_layer(xo, phase)], dim=1), 0.0, 1.0)
            rows = torch.arange(a.shape[0])
            h2 = self.l2(a).view(-1, N.N_BUCKETS, N.L2)[rows, bucket]
            h2 = torch.clamp(h2, 0.0, 1.0)
            h3 = torch.clamp(self.l3(h2).view(-1, N.N_BUCKETS, N.L3)[rows, bucket], 0.0, 1.0)
            return self.out(h3)[rows, bucket]

    torch.manual_seed(seed)
    return Net()


def quantise(model, scale: float) -> np.ndarray:
    """The float model as the integer net array of ``nnue`` (output in centi-men: ``scale`` per logit)."""
    sd = {k: v.detach().double().numpy() for k, v in model.state_dict().items()}
    layers = model.layers
    net = np.zeros(N.net_size(layers), dtype=np.int64)
    for layer in range(layers):
        w1, b1 = sd["ft.weight"].T, sd["ft.bias"]
        if layers > 1:            # the shared layer plus the phase's difference
            w1 = w1 + sd["ft_phase.weight"].T[layer * N.N_IN:(layer + 1) * N.N_IN]
            b1 = b1 + sd["ft_phase_bias"][layer]
        ft = layer * N.FT_SIZE
        net[ft + N.O_W1:ft + N.O_B1] = np.rint(w1 * N.QA).ravel()          # feature-major
        net[ft + N.O_B1:ft + N.FT_SIZE] = np.rint(b1 * N.QA)
    w2 = sd["l2.weight"].reshape(N.N_BUCKETS, N.L2, 2 * N.H)
    b2 = sd["l2.bias"].reshape(N.N_BUCKETS, N.L2)
    w3 = sd["l3.weight"].reshape(N.N_BUCKETS, N.L3, N.L2)
    b3 = sd["l3.bias"].reshape(N.N_BUCKETS, N.L3)
    wo, bo = sd["out.weight"], sd["out.bias"]
    for b in range(N.N_BUCKETS):
        base = N.buckets_at(layers) + b * N.BUCKET_SIZE
        # the small hidden layers run as byte dot products: their weights are clipped to bytes
        # (|w| < 2 at QB 64; trained networks stay far inside: n12's largest is 53, n14's 83, n15's 85)
        net[base + N.B_W2:base + N.B_B2] = np.clip(np.rint(w2[b] * N.QB), -128, 127).ravel()
        net[base + N.B_B2:base + N.B_W3] = np.rint(b2[b] * N.QA * N.QB)
        net[base + N.B_W3:base + N.B_B3] = np.clip(np.rint(w3[b] * N.QB), -128, 127).ravel()
        net[base + N.B_B3:base + N.B_WO] = np.rint(b3[b] * N.QA * N.QB)
        net[base + N.B_WO:base + N.B_BO] = np.rint(wo[b] * N.QB * scale)
        net[base + N.B_BO] = np.rint(bo[b] * N.QA * N.QB * scale)
    try:
        N.check_ranges(net)
    except ValueError as exc:     # the float model is fine; the kernels' integer ranges are not
        raise TrainError(f"the trained network does not fit the kernels' integer ranges ({exc})") from None
    return net.astype(np.int32)


# --- training -------------------------------------------------------------------------------------
@dataclass
class NetConfig:
    epochs: int = 12
    batch: int = 4096
    lr: float = 2e-3
    lr_decay: float = 0.75          # the learning rate is multiplied by this after each epoch
    weight_decay: float = 0.0
    val_share: float = 0.1
    score_weight: float = 0.5
    seed: int = 1
    scale: Optional[float] = None
    oversample_from: int = 13       # with oversample > 1: positions with at least this many pieces ...
    oversample: int = 1             # ... appear this many times in the training set (not in validation)
    phases: int = 1                 # first layers: 1, or nnue.N_PHASES (one per game phase)


class _Tensors:
    """One data set as tensors: both views (side to move first), bucket, target."""

    def __init__(self, torch, data: PositionSet, t: np.ndarray) -> None:
        xb = black_view(data)
        xw = xb[:, white_permutation()]
        stm = data.stm.astype(bool)[:, None]
        self.xs = torch.from_numpy(np.where(stm, xw, xb))
        self.xo = torch.from_numpy(np.where(stm, xb, xw))
        self.bucket = torch.from_numpy(buckets(data))
        self.phase = torch.from_numpy(phases(data))
        self.t = torch.from_numpy(t.astype(np.float32))

    def __len__(self) -> int:
        return int(self.t.shape[0])

    def append_rows(self, torch, rows: np.ndarray) -> None:
        """Append copies of the given rows (a training set's oversampled positions)."""
        if len(rows) == 0:            # torch.cat would copy every tensor for nothing
            return
        r = torch.from_numpy(rows)
        self.xs = torch.cat([self.xs, self.xs[r]])
        self.xo = torch.cat([self.xo, self.xo[r]])
        self.bucket = torch.cat([self.bucket, self.bucket[r]])
        self.phase = torch.cat([self.phase, self.phase[r]])
        self.t = torch.cat([self.t, self.t[r]])

    def logits(self, torch, model, rows=None, chunk: int = 65536) -> np.ndarray:
        out = []
        n = len(self) if rows is None else len(rows)
        with torch.no_grad():
            for i in range(0, n, chunk):
                r = torch.arange(i, min(n, i + chunk)) if rows is None else rows[i:i + chunk]
                out.append(model(self.xs[r].float(), self.xo[r].float(), self.bucket[r],
                                 self.phase[r]).double().numpy())
        return np.concatenate(out) if out else np.zeros(0)


def train(data: PositionSet, config: NetConfig, progress=sys.stderr,
          pdn: Optional[PositionSet] = None) -> tuple[np.ndarray, dict[str, Any]]:
    """Fit, keep the best validation epoch, quantise; returns (net array, report).

    Interrupted (KeyboardInterrupt) after at least one finished epoch, it stops there and returns the
    best finished epoch, with ``report["interrupted"]`` True; before that the interrupt propagates."""
    torch = _torch()
    torch.set_num_threads(1)                 # deterministic, and one core of a shared machine
    t0 = time.monotonic()
    train_mask, val_mask = split_by_game(data, config.val_share, config.seed)
    scales = source_scales(data, train_mask)
    scale = config.scale or scales[min(scales)]
    t_all = targets(data, config.score_weight, scales)
    train_data = data.subset(train_mask)
    tr = _Tensors(torch, train_data, t_all[train_mask])
    tr.append_rows(torch, oversampled_rows(train_data, config.oversample_from, config.oversample))
    va = _Tensors(torch, data.subset(val_mask), (data.result / 2.0)[val_mask])   # validation: results
    model = make_model(config.seed, config.phases)
    opt = torch.optim.Adam(model.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    sched = torch.optim.lr_scheduler.ExponentialLR(opt, config.lr_decay)
    gen = torch.Generator().manual_seed(config.seed)
    lossf = torch.nn.BCEWithLogitsLoss()
    best_box: list[tuple[float, Optional[dict], int]] = [(float("inf"), None, 0)]
    history: list[dict] = []
    try:
        _epochs(torch, model, opt, sched, gen, lossf, tr, va, config, progress, t0, history, best_box)
    except KeyboardInterrupt:
        if best_box[0][1] is None:
            raise
        if progress is not None:
            progress.write("\ninterrupted: keeping the best finished epoch\n")
    best = best_box[0]
    model.load_state_dict(best[1])
    net = quantise(model, scale)
    report: dict[str, Any] = {
        "positions": len(data), "train_positions": len(tr), "val_positions": len(va),   # train: oversampled
        "scale": round(float(scale), 4), "source_scales": {str(k): round(v, 2) for k, v in scales.items()},
        "best_epoch": best[2], "val_loss": round(best[0], 6), "history": history,
        "interrupted": len(history) < config.epochs,
        "seconds": round(time.monotonic() - t0, 1), "torch": torch.__version__}
    if pdn is not None:
        pt = _Tensors(torch, pdn, pdn.result / 2.0)
        report["pdn_validation"] = {"positions": len(pdn),
                                    "log_loss": round(log_loss(pt.logits(torch, model), pdn.result / 2.0), 6)}
    return net, report


def _epochs(torch, model, opt, sched, gen, lossf, tr: _Tensors, va: _Tensors, config: NetConfig, progress,
            t0: float, history: list, best_box: list) -> None:
    """The training epochs; ``best_box[0]`` is (validation loss, state, epoch) of the best so far."""
    for epoch in range(1, config.epochs + 1):
        model.train()
        order = torch.randperm(len(tr), generator=gen)
        nb = (len(order) + config.batch - 1) // config.batch
        total = 0.0
        for bi in range(nb):
            r = order[bi * config.batch:(bi + 1) * config.batch]
            z = model(tr.xs[r].float(), tr.xo[r].float(), tr.bucket[r], tr.phase[r])
            loss = lossf(z, tr.t[r])
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item() * len(r)
            if progress is not None and (bi % 100 == 0 or bi == nb - 1):
                progress.write(f"\repoch {epoch}/{config.epochs}: {bi + 1}/{nb} batches")
                progress.flush()
        sched.step()
        model.eval()
        tl = total / len(tr)
        vl = log_loss(va.logits(torch, model), va.t.double().numpy()) if len(va) else float("nan")
        history.append({"epoch": epoch, "train_loss": round(tl, 6), "val_loss": round(vl, 6),
                        "seconds": round(time.monotonic() - t0, 1)})
        if progress is not None:
            progress.write(f"\repoch {epoch}/{config.epochs}: train loss {tl:.5f}  validation log-loss {vl:.5f}"
                           f"  ({time.monotonic() - t0:.0f} s)\n")
            progress.flush()
        if len(va) == 0 or vl < best_box[0][0]:
            best_box[0] = (vl, {k: v.clone() for k, v in model.state_dict().items()}, epoch)


def main(argv: Optional[list[str]] = None) -> int:
    from ..search import weights as wmod
    ap = ToolParser(prog="uci-checkers train-net", description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", action="append", required=True,
                    help="a shard directory or file from `uci-checkers selfplay` (repeatable; oldest first)")
    ap.add_argument("--out", required=True, help="network weights file to write, a new one (copy it over "
                                                 f"uci_checkers/data/{DEFAULT_NAME} to ship it)")
    ap.add_argument("--overwrite", action="store_true", help="replace --out if it exists")
    d = NetConfig()
    ap.add_argument("--epochs", type=int, default=d.epochs)
    ap.add_argument("--batch", type=int, default=d.batch)
    ap.add_argument("--lr", type=float, default=d.lr)
    ap.add_argument("--lr-decay", type=float, default=d.lr_decay)
    ap.add_argument("--weight-decay", type=float, default=d.weight_decay)
    ap.add_argument("--val-share", type=float, default=d.val_share)
    ap.add_argument("--score-weight", type=float, default=d.score_weight,
                    help="share of the target taken from the search score (0 = game results only)")
    ap.add_argument("--scale", type=float, default=None, help="centi-men per logit unit (default: fitted)")
    ap.add_argument("--oversample", type=int, default=d.oversample, metavar="K",
                    help="train on every position with at least --oversample-from pieces K times "
                         "(default 1: no oversampling; the validation set is never oversampled)")
    ap.add_argument("--oversample-from", type=int, default=d.oversample_from, metavar="PIECES",
                    help=f"the piece count from which --oversample applies (default {d.oversample_from})")
    ap.add_argument("--phases", type=int, choices=(1, N.N_PHASES), default=d.phases,
                    help=f"first layers: 1 (default), or {N.N_PHASES}, one per game phase (at most 6 pieces, 7-8, "
                         "more with a king, more without)")
    ap.add_argument("--seed", type=int, default=d.seed)
    ap.add_argument("--limit", type=int, default=None, help="use at most this many positions")
    ap.add_argument("--validate-pdn", default=None,
                    help="also report log-loss on the finished games of this PDN file (e.g. strong games)")
    args = ap.parse_args(argv)
    if not (1 <= args.epochs <= 10000 and 1 <= args.batch <= 10**7 and 0 < args.lr < 10
            and 0 < args.lr_decay <= 1 and args.weight_decay >= 0
            and 0 <= args.score_weight <= 1 and 0 <= args.val_share < 1
            and 1 <= args.oversample <= 100 and 2 <= args.oversample_from <= 24):
        ap.error("a numeric flag is out of range")
    out = Path(args.out)
    if out.is_dir():
        ap.error(f"--out {out} is a directory")
    if not args.overwrite and wmod.existing_output(out):     # checked before the work: never replaced by default
        ap.error(wmod.existing_output(out))
    try:
        _torch()
        data = load_shards([Path(p) for p in args.data], args.limit)
        pdn = load_pdn_positions(Path(args.validate_pdn)) if args.validate_pdn else None
    except (DataError, OSError, TrainError) as exc:
        print(f"uci-checkers train-net: {exc}", file=sys.stderr)
        return EXIT_USAGE
    config = NetConfig(args.epochs, args.batch, args.lr, args.lr_decay, args.weight_decay, args.val_share,
                       args.score_weight, args.seed, args.scale, args.oversample_from, args.oversample,
                       args.phases)
    try:
        net, report = train(data, config, pdn=pdn)
    except TrainError as exc:
        print(f"uci-checkers train-net: {exc}; no weights written", file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:
        print("\nuci-checkers train-net: interrupted before the first epoch ended; no weights written",
              file=sys.stderr)
        return EXIT_INTERRUPTED
    if pdn is not None:
        report["pdn_validation"]["file"] = Path(args.validate_pdn).name
    from .selfplay import engine_identity
    provenance = {"data": [str(p) for p in args.data], "data_files": len(data.sources),
                  "data_digest": data.identity(), "config": asdict(config), "report": report,
                  "trainer": "uci_checkers.learn.train_net",
                  "code": {k: v for k, v in engine_identity().items() if k != "weights"}}
    try:
        saved = wmod.save_network(out, net, provenance)
    except OSError as exc:
        print(f"uci-checkers train-net: cannot write {out}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_USAGE
    print(json.dumps({"out": str(out), "checksum": saved.checksum, **{k: report[k] for k in (
        "positions", "val_loss", "best_epoch", "scale", "seconds")},
        **({"pdn_log_loss": report["pdn_validation"]["log_loss"]} if pdn is not None else {})}))
    return EXIT_INTERRUPTED if report["interrupted"] else EXIT_OK
