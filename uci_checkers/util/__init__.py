"""Utilities every layer may use: the numba policy and compile cache (``jit``), atomic files, the versioned,
checksummed file framing (``framedfile``), interrupts, the stamped line reader, the Ray connection, the
command-line helpers and the progress display (``progress``).  Imports nothing else of the package.
"""
