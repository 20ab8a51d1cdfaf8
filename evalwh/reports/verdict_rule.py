"""How sql/compare.sql decides a row's verdict, in words, for the tables that show it.

The p beside each delta is the two-sided p-value of the paired t-test on the case
differences (sql/macros/stats.sql: ``paired_p``); the verdict reads the pass rate's and the
score's p and the sign of their deltas, in this order (the ``CASE ... AS verdict`` of
sql/compare.sql)."""

from __future__ import annotations

P_TEST = (
    "p: the two-sided paired t-test of B minus A over the paired cases (t = Δ / its standard "
    "error, on cases − 1 degrees of freedom, or clusters − 1 when clustered); the 95% interval "
    "excludes 0 exactly when p < 0.05"
)
VERDICT_RULE = (
    "Verdict: worse when the pass rate's or the score's p < 0.05 with a drop; else better when "
    "either's p < 0.05 with a rise; else same when neither moved (Δ pass = 0 and Δ score = 0); "
    "else within noise. A row with no paired case says only in A, only in B or no pairs."
)
