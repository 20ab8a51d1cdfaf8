"""Reports: plain-text, Markdown, JUnit, CSV/JSON/Parquet exports and self-contained HTML
pages of a stored run and of a comparison of two runs. Nothing here computes a number of its
own: every figure comes from the same named queries and analysis functions the CLI prints.

``evalwh.reports.html`` renders the Jinja2 templates in ``templates/`` (autoescape on). One file
per page: inline CSS, a small hand-written script, the data as ``<script type="application/json">``
and a Content-Security-Policy that forbids every network request::

    from evalwh import open_warehouse
    open_warehouse().report("latest", "report.html")          # the run page
    open_warehouse().compare_report("baseline", "latest", "compare.html")
"""
