"""Utilities every layer may use: the numba policy and compile cache (``jit``), atomic files, interrupts,
the stamped line reader, the Ray connection and the command-line helpers.  Imports nothing else of the package.
"""
