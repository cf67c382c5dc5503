"""Learning the evaluation: self-play data, features, fitting, weights files.

The one job of this subpackage is to turn the engine's own games into the
evaluation weights the engine loads at start (in ``uci_checkers/data``: the network named by
:data:`uci_checkers.search.layouts.DEFAULT_NAME`, and ``eval-w5.weights``, the pattern tables):

* :mod:`.selfplay` plays fast fixed-node games from diverse openings and writes
  shards of labelled quiet positions (resumable, parallel over processes or Ray);
* :mod:`.dataset` reads shards (and PDN games, for validation) into arrays;
* :mod:`.train` fits the pattern weights by logistic regression (Adam over
  sparse features, validation split, per-epoch log-loss) and writes a versioned
  weights file through :mod:`uci_checkers.search.weights`;
* :mod:`.train_net` fits the network evaluation (:mod:`uci_checkers.search.nnue`) to
  the same data with PyTorch (the ``train`` extra), quantises it and writes a weights
  file of kind network.

It depends downward only (search, evaluate, position); nothing in the engine
imports it.
"""
