"""The web viewer over the warehouse (`evalwh serve`, the ``viewer`` extra): a shell like the
CLI and MCP. It renders the HTML report's sections and templates from the same named queries,
adds pages for the whole history (runs, compare, slices, a case across runs, calibration,
baselines), a live tail of running evals by server-sent events, and stored labelling.

Modules: ``pages.py`` (each page's data, from the named queries), ``app.py`` (the routes and
their ``.json`` twins), ``security.py`` (token, Host and same-origin checks), ``live.py``
(the server-sent events of a running run), ``server.py`` (start uvicorn, print the URL).
"""
