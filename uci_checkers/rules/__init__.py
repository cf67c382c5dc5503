"""The rules of English checkers: bitboards and Zobrist keys, move generation kernels, PDN notation and
FEN, ``Position`` and ``Game``, perft, and PDN game files.  Imports only ``util``.
"""
