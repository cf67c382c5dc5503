"""The search: alpha-beta driver and kernels (``alphabeta``), the learned evaluations (``evaluate``: pattern
tables, ``nnue``: a network; their files: ``weights``) and the transposition table (``tt``).  Imports ``rules``, ``egdb`` (probing) and ``util``; never prints.
"""
