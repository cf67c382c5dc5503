"""The local web app of ``uci-checkers gui``: play against a protocol engine, two players, analysis.

Layers, each depending only on those above it:

* ``match``   a match as the page sees it (setup, whole turns made jump by jump, undo, pause, result,
              the casual computer's seeded choices); the rules come only from :mod:`uci_checkers.rules.position`
* ``host``    an engine process driven through :mod:`uci_checkers.client` on a worker thread, so the
              server never waits on it; a crash becomes a message and a restart
* ``server``  the Starlette application (JSON API, server-sent events, the static page) and ``main``
* ``static/`` the page: plain HTML, CSS and JavaScript, no build step, nothing fetched from elsewhere;
              it draws what the server says and never decides a rule itself
"""
