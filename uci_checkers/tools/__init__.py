"""Command-line tools over the layers below: ``analyse``, ``bench``, ``checkerboard`` (the bridge DLL) and
``egdb_command``.  The larger tools have packages of their own (``arena``, ``gui``, ``learn``).
"""
