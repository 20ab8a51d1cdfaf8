"""The one float tolerance of every threshold comparison.

A value meets a lower limit when ``value >= limit - TOLERANCE`` and an upper limit when
``value <= limit + TOLERANCE``: three answers scoring exactly 0.7 average to
0.6999999999999998 in binary floating point and must still pass ``min_score: 0.7``. The
scorecard (a criterion's ``threshold``), the absolute gate (sql/gate.sql, parameter
``$tolerance``) and the regression gate (sql/gate_regression.sql, ``$tolerance``) all use
this constant, so no two places disagree on a tie.
"""

from __future__ import annotations

TOLERANCE = 1e-9
