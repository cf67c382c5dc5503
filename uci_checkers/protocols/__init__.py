"""The text front ends over the engine facade: the protocol.md loop (``uci``), Hub (``hub``) and the
one-shot ``go`` (``oneshot``).  They alone write protocol lines to stdout.
"""
