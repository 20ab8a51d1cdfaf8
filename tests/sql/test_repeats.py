"""sql/repeats.sql: pass@k and pass^k per k with the fewest and most repeats, against hand-computed
fixtures: each warehouse is built by hand, row by row, and the expected numbers are worked out in
the comments.
"""

from __future__ import annotations

import math
from pathlib import Path

from evalwh.warehouse import queries
from tests.sql.conftest import _answer, _warehouse


def test_repeats_give_the_fewest_and_most_repeats_per_k_up_to_the_most_sampled_case(
    tmp_path: Path,
) -> None:
    # Cell v x m: c1 answered 3 times (pass, pass, fail), c2 twice (pass, pass). k runs 1..3
    # (the most repeats of a case); k 1 and 2 average both cases (2 and 3 repeats), k 3 only c1.
    # pass@1 = mean(1 - C(1,1)/C(3,1), 1) = (2/3 + 1) / 2; pass^3 of c1 = C(2,3) = 0.
    con = _warehouse(tmp_path)
    for case, repeat, ok in (
        ("c1", 0, True),
        ("c1", 1, True),
        ("c1", 2, False),
        ("c2", 0, True),
        ("c2", 1, True),
    ):
        _answer(con, "r", case, repeat, ok)
    got = queries.run_query(con, "repeats", run_id="r").to_pylist()
    keys = ("variant", "model", "k", "n_cases", "n_samples", "min_repeats", "max_repeats")
    assert [tuple(r[k] for k in keys) for r in got] == [
        (None, None, 1, 2, 5, 2, 3),
        (None, None, 2, 2, 5, 2, 3),
        (None, None, 3, 1, 3, 3, 3),
        ("v", "m", 1, 2, 5, 2, 3),
        ("v", "m", 2, 2, 5, 2, 3),
        ("v", "m", 3, 1, 3, 3, 3),
    ]
    assert math.isclose(got[0]["pass_at_k"], (2 / 3 + 1) / 2)
    assert (got[2]["pass_hat_k"], got[2]["n_flaky"]) == (0.0, 1)
