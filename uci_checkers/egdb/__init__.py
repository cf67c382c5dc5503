"""Endgame databases: every position with few pieces solved by our own retrograde analysis.

Layers (each module one job, dependencies pointing down):

* :mod:`.index` -- material slices and the perfect index of a slice (position <-> rank);
* :mod:`.probe` -- the probe table (one int64 array holding every loaded slice) and the
  probe kernel the search calls;
* :mod:`.solve` -- the retrograde solver and the verification pass of one slice (numba);
* :mod:`.store` -- the slice file format (compressed, checksummed, written atomically)
  and loading a database directory into a probe table;
* :mod:`.build` -- the resumable, slice-by-slice generator and the
  ``uci-checkers egdb`` command line.

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
