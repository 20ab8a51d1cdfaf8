"""Self-contained HTML pages of a stored run and of a comparison of two runs.

``evalwh.reports.html`` gathers every number from the same named queries and analysis
functions the CLI prints (``sql/summary.sql``, ``sql/pairwise.sql``, ``analysis.compare`` ...)
and renders them with the Jinja2 templates in ``templates/`` (autoescape on). One file per
page: inline CSS, a small hand-written script, the data as ``<script type="application/json">``
and a Content-Security-Policy that forbids every network request::

    from evalwh import open_warehouse
    open_warehouse().report("latest", "report.html")          # the run page
    open_warehouse().compare_report("baseline", "latest", "compare.html")
"""
