"""The engine facade (``facade.Engine``): one game, options (``options``), time management (``timeman``)
and the kernel warm-up (``warmup``).  Imports the search and below; never prints.
"""
