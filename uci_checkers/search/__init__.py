"""The search: alpha-beta driver and kernels (``alphabeta``), the learned evaluation (``evaluate``,
``weights``) and the transposition table (``tt``).  Imports ``rules``, ``egdb`` (probing) and ``util``; never prints.
"""
