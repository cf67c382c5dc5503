"""Endgame databases: every position with few pieces solved by our own retrograde analysis.

Layers (each module one job, dependencies pointing down):

* :mod:`.index` -- material slices, their successors, and the perfect index of a slice
  (position <-> rank);
* :mod:`.codec` -- the block codec of the files (zlib streams, decoded by a numba kernel);
* :mod:`.probe` -- the probe table (one int64 array pointing at every loaded slice: raw
  values or memory-mapped files with a block cache) and the probe kernels the search calls;
* :mod:`.solve` -- the retrograde solver and the verification pass of one slice (numba);
* :mod:`.store` -- the slice file format (block-compressed, checksummed, written
  atomically) and opening a database directory into a probe table;
* :mod:`.plan` -- the build plan: order, memory, estimated time and size
  (``egdb build --dry-run``);
* :mod:`.build` -- the resumable, slice-by-slice generator (the command line is
  :mod:`uci_checkers.tools.egdb_command`).

Values
------
Every stored value is a *distance to the end of the game* in plies under best play
(the side to move loses when it has no legal move), one byte per position::

    0          draw
    D + 1      the game ends after D more plies; D even: the side to move loses,
               D odd: the side to move wins

    253 / 254  lost / won, distance not stored (large slices where both sides have
               men: see :func:`uci_checkers.egdb.build.stores_distances`)

So the database is "depth to mate" (captures and promotions included: they lead
into smaller, already solved slices), and a database score is exactly the
search's mate score ``MATE - ply - D``.  Repetitions and the no-progress rule
are not part of a position and are ignored, as in every established database.
"""
