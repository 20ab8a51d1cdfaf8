"""sql/slice.sql: a run cut by metadata keys (errors, uncached cost, repeats averaged per case and
cell, Wilson bounds), against hand-computed fixtures: each warehouse is built by hand, row by row,
and the expected numbers are worked out in the comments.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalwh.warehouse import queries
from tests.sql.conftest import _costed_answer, _row, _warehouse, case_rate_interval


def test_slices_count_errors_and_only_the_uncached_cost(tmp_path: Path) -> None:
    # bugs: errors counted as the answers without one, the cached cost counted instead of the
    # rest, a slice with no uncached cost given 1, a pass-rate upper bound not clamped to 1.
    # Slice k=a: c1 pass 0.25, c2 errored 0.5 cached, c4 pass 0.125; slice k=b: c3 pass 0.125
    # cached (no uncached cost: 0); slice k=c: 11 passes (unclamped: 1 + 2^-52).
    con = _warehouse(tmp_path)
    for case, k, ok, cost, cached, error in (
        ("c1", "a", True, 0.25, False, None), ("c2", "a", False, 0.5, True, "boom"),
        ("c4", "a", True, 0.125, False, None), ("c3", "b", True, 0.125, True, None),
        *((f"d{i}", "c", True, 0.0, False, None) for i in range(11)),
    ):  # fmt: skip
        _costed_answer(con, "r", case, {"k": k}, ok, cost, cached, error)
    rows = queries.run_query(con, "slice", run_id="r", keys=["k"]).to_pylist()
    got = {(r["slice"], r["variant"]): (r["n"], r["n_errors"], r["cost_usd"]) for r in rows}
    assert got == {
        ("k=a", None): (3, 1, 0.375),
        ("k=a", "v"): (3, 1, 0.375),
        ("k=b", None): (1, 0, 0),
        ("k=b", "v"): (1, 0, 0),
        ("k=c", None): (11, 0, 0),
        ("k=c", "v"): (11, 0, 0),
    }
    assert [r["pass_rate_hi"] for r in rows if r["slice"] == "k=c"] == [1.0, 1.0]


def test_slices_by_two_keys_average_repeats_per_case_and_cell(tmp_path: Path) -> None:
    # Run r, by lang and tier:
    #   v x m c1 {en, 1}: r0 pass (score 1, cost 0.5), r1 fail from the cache (0.5, 2.0);
    #   v x m c2 {en, 1}: error (score 0, no cost); w x m c1 {en, 1}: pass (1, 0.25);
    #   w x m c3 {fr}: pass (0.75, 0.125). Run s: c1 {en, 1} fail (not counted).
    # 'lang=en, tier=1': n 4, cases v c1 1/2, v c2 0, w c1 1 -> 3 cases, rate 0.5; passes 2,
    #   errors 1, score 2.5 / 4, cost not from the cache 0.75. v x m: n 3, 2 cases, rate 0.25,
    #   score 0.5, cost 0.5. w x m: 1 case, rate 1, cost 0.25.
    # 'lang=fr, tier=(none)': w x m c3 alone. 'lang=de, tier=2': v x m c4, pass without a cost
    # (0); and 11 passing cases of x x m, whose interval's upper end rounds above 1: kept at 1.
    con = _warehouse(tmp_path)
    en, fr = json.dumps({"lang": "en", "tier": 1}), json.dumps({"lang": "fr"})
    _row(con, "r", metadata=en, cost_usd=0.5)
    _row(con, "r", metadata=en, repeat=1, passed=False, score=0.5, cost_usd=2.0, cached=True)
    _row(con, "r", metadata=en, case_id="c2", passed=False, score=0.0, error="boom")
    _row(con, "r", metadata=en, variant="w", cost_usd=0.25)
    _row(con, "r", metadata=fr, variant="w", case_id="c3", score=0.75, cost_usd=0.125)
    _row(con, "s", metadata=en, passed=False)
    de = json.dumps({"lang": "de", "tier": 2})
    _row(con, "r", metadata=de, case_id="c4")
    for i in range(11):
        _row(con, "r", metadata=json.dumps({"lang": "x"}), variant="x", case_id=f"x{i}")
    got = queries.run_query(con, "slice", run_id="r", keys=["lang", "tier"]).to_pylist()
    de_s, x_s = "lang=de, tier=2", "lang=x, tier=(none)"
    assert [(r["slice"], r["variant"], r["n_cases"], r["pass_rate_hi"]) for r in got[:2]] == [
        (de_s, None, 1, 1.0),
        (de_s, "v", 1, 1.0),
    ]
    assert [(r["cost_usd"], r["n_cases"], r["pass_rate_hi"]) for r in got[-2:]] == [
        (0, 11, 1.0)
    ] * 2
    assert [r["slice"] for r in got[-2:]] == [x_s, x_s]
    assert got[0]["cost_usd"] == 0
    got = got[2:-2]
    keys = ("slice", "slice_values", "variant", "model", "n", "n_cases", "n_passed", "n_errors")
    en_s, fr_s = "lang=en, tier=1", "lang=fr, tier=(none)"
    assert [tuple(r[k] for k in keys) for r in got] == [
        (en_s, ["en", "1"], None, None, 4, 3, 2, 1),
        (en_s, ["en", "1"], "v", "m", 3, 2, 1, 1),
        (en_s, ["en", "1"], "w", "m", 1, 1, 1, 0),
        (fr_s, ["fr", "(none)"], None, None, 1, 1, 1, 0),
        (fr_s, ["fr", "(none)"], "w", "m", 1, 1, 1, 0),
    ]
    assert [(r["pass_rate"], r["mean_score"], r["cost_usd"]) for r in got] == [
        (0.5, 0.625, 0.75),
        (0.25, 0.5, 0.5),
        (1.0, 1.0, 0.25),
        (1.0, 0.75, 0.125),
        (1.0, 0.75, 0.125),
    ]
    # Wilson where every case's pass fraction is 0 or 1, else the CLT interval (v c1: 1/2)
    means = [[0.5, 0, 1], [0.5, 0], [1], [1], [1]]
    for r, case_means in zip(got, means, strict=True):
        assert (r["pass_rate_lo"], r["pass_rate_hi"]) == pytest.approx(
            case_rate_interval(case_means)
        )
