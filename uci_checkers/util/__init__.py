"""Utilities every layer may use: the numba policy and compile cache (``jit``), atomic files, the versioned,
checksummed file framing (``framedfile``), interrupts, the stamped line reader, the Ray connection, the
command-line helpers, the progress display (``progress``) and the shipped data files' paths (``packagedata``).
Imports nothing else of the package.
"""
