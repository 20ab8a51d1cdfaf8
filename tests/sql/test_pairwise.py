"""sql/pairwise.sql: win rates, majority verdicts, Cohen's kappa and its Landis-Koch band, flip rates
and the calibration/headline flags of each comparison (also against scikit-learn's kappa and
confusion matrix and statsmodels' Wilson interval, with repeats: a label counts once, the case is
the unit), against hand-computed fixtures: each warehouse is built by hand, row by row, and the
expected numbers are worked out in the comments.
"""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import duckdb
import pytest

from evalwh.warehouse import connect, queries
from evalwh.warehouse.connect import write_connection
from evalwh.warehouse.store import Warehouse
from tests.builders import NOW, rows_of, warehouse_with
from tests.sql.conftest import _judged, _pair_votes, _pairwise_label, _warehouse, statsmodels_wilson


def test_pairwise_counts_wins_and_labels_once_per_case_by_hand(tmp_path: Path) -> None:
    # bugs: the side names listed once per pair (DISTINCT dropped), cases counted per pair, a
    # pair too many, ineligible pairs counted as baseline wins or ties, a judge cost of 1 with
    # no cost, the majority verdict or the base rate taken with min(), a tie at three top
    # verdicts, another run's labels read. Comparison c, eligible pairs: k1 candidate x2,
    # baseline x1 -> candidate; k2 candidate, baseline -> tie; k3 candidate x2, baseline, tie
    # -> candidate; k4 candidate (labelled in run s only). Ineligible: k5 baseline, k5 tie.
    # Labels candidate, tie, candidate: n_labels 3, agreement 1, base rate 2/3. A chance
    # agreement of 1 / n^2 when the two sides share no class, or no row at all.
    con = _warehouse(tmp_path)
    _pair_votes(con, "k1", ["candidate", "candidate", "baseline"], "en")
    _pair_votes(con, "k2", ["candidate", "baseline"], "en")
    _pair_votes(con, "k3", ["candidate", "baseline", "candidate", "tie"], "en")
    _pair_votes(con, "k4", ["candidate"], "en")
    _pair_votes(con, "k5", ["baseline", "tie"], "en", eligible=False)
    for case, prefer in (("k1", "candidate"), ("k2", "tie"), ("k3", "candidate")):
        _pairwise_label(con, case, prefer)
    con.execute(
        "INSERT INTO labels (run_id, kind, comparison, case_id, prefer) "
        "VALUES ('s', 'pairwise', 'c', 'k4', 'baseline')"
    )
    # comparison d: the judge says candidate where the human says baseline (m1, m2): no class
    # in common, so no chance agreement at all: 0, and kappa (0 - 0) / (1 - 0) = 0
    for case in ("m1", "m2"):
        _pair_votes(con, case, ["candidate"], "en", comparison="d")
        _pairwise_label(con, case, "baseline", comparison="d")
    row, other = queries.run_query(
        con, "pairwise", run_id="r", min_kappa=0.4, min_labels=1, max_flip_rate=0.5
    ).to_pylist()
    assert (other["comparison"], other["n_labels"], other["agreement"]) == ("d", 2, 0.0)
    assert (other["chance_agreement"], other["kappa"]) == (0.0, 0.0)
    assert (row["baseline"], row["candidate"]) == ("v × a", "v × b")
    assert (row["n_pairs"], row["n"], row["n_cases"], row["n_excluded"]) == (12, 10, 4, 2)
    assert (row["candidate_wins"], row["baseline_wins"], row["ties"]) == (6, 3, 1)
    assert row["judge_cost_usd"] == 0
    assert (row["baseline_pass_rate"], row["candidate_pass_rate"]) == (1.0, 1.0)
    assert (row["n_labels"], row["agreement"]) == (3, 1.0)
    assert row["base_rate"] == pytest.approx(2 / 3)


# comparison -> (kappa band, confusion counts human x judge: (cand, cand), (cand, base),
# (base, cand), (base, base)), found by search so that kappa = (agreement - chance) /
# (1 - chance), computed in doubles as the query does, lands exactly on each band's edge or
# inside the next tenth
KAPPA_BANDS = {
    "at-0": ("slight", (0, 0, 1, 1)),  # kappa exactly 0
    "at-0.2": ("slight", (1, 0, 2, 1)),
    "at-0.25": ("fair", (1, 0, 3, 4)),
    "at-0.4": ("fair", (1, 0, 2, 6)),
    "at-0.46": ("moderate", (2, 0, 2, 3)),
    "at-0.6": ("moderate", (1, 0, 1, 6)),
    "at-0.67": ("substantial", (2, 0, 1, 3)),
    "at-0.8": ("substantial", (4, 0, 1, 5)),
    "at-0.82": ("almost perfect", (4, 0, 1, 7)),
    "below-0": ("poor", (0, 1, 1, 0)),
}


def test_pairwise_kappa_bands_on_their_edges_and_comparisons_without_labels(
    tmp_path: Path,
) -> None:
    # bugs: a Landis-Koch band edge moved ('<=' as '<', 0.20 as 0.30, ...; '< 0' as '<= 0');
    # a comparison without labels (n_labels 0, not 1) or without eligible pairs (no win-rate
    # interval) dropped by an inner join or given bounds; the win-rate interval of one case
    # missing, or its upper bound not clamped to 1; calibration and the flip flag with their
    # limits moved ('>=' as '>', '>' as '>=').
    con = _warehouse(tmp_path)
    for comparison, (_, cells) in KAPPA_BANDS.items():
        pairs = [("candidate", "candidate"), ("candidate", "baseline")]
        pairs += [("baseline", "candidate"), ("baseline", "baseline")]
        i = 0
        for (human, judge), count in zip(pairs, cells, strict=True):
            for _ in range(count):
                i += 1
                _pair_votes(con, f"x{i}", [judge], "en", comparison=comparison)
                _pairwise_label(con, f"x{i}", human, comparison=comparison)
    for i in range(11):  # won 11 of 11: the unclamped upper bound is 1 + 2^-52
        _pair_votes(con, f"y{i}", ["candidate"], "en", comparison="unlabelled")
    _pair_votes(con, "y1", ["candidate"], "en", comparison="one-case")
    _pair_votes(con, "y2", ["candidate"], "en", comparison="ineligible", eligible=False)
    # 5 of at-0.8's 10 pairs flipped: a flip rate exactly at the limit of 0.5
    con.execute(
        "UPDATE pairs SET flipped = true WHERE comparison = 'at-0.8' "
        "AND case_id IN ('x1', 'x2', 'x3', 'x4', 'x5')"
    )
    rows = {
        r["comparison"]: r
        for r in queries.run_query(
            con, "pairwise", run_id="r", min_kappa=0.4, min_labels=9, max_flip_rate=0.5
        ).to_pylist()
    }
    # calibrated: kappa and the label count each at least their minimum (at-0.4: exactly
    # 0.4 on exactly 9 labels); at-0.8 flips at exactly the limit: not flagged
    assert {c for c, r in rows.items() if r["calibrated"]} == {"at-0.4", "at-0.8", "at-0.82"}
    assert {c for c, r in rows.items() if r["headline_eligible"]} == {"at-0.4", "at-0.8", "at-0.82"}
    assert (rows["at-0.8"]["flip_rate"], rows["at-0.8"]["flip_flagged"]) == (0.5, False)
    assert rows["ineligible"]["flip_flagged"] is False  # no eligible pair: no flip rate
    assert {c: r["kappa_band"] for c, r in rows.items() if c in KAPPA_BANDS} == {
        c: band for c, (band, _) in KAPPA_BANDS.items()
    }
    for edge in ("0", "0.2", "0.4", "0.6", "0.8"):
        assert rows[f"at-{edge}"]["kappa"] == float(edge), edge
    unlabelled, ineligible = rows["unlabelled"], rows["ineligible"]
    assert (unlabelled["n_labels"], unlabelled["kappa_band"], unlabelled["win_rate"]) == (
        0,
        "undefined",
        1.0,
    )
    assert (unlabelled["n_cases"], unlabelled["win_rate_hi"]) == (11, 1.0)
    z2 = 1.959963984540054**2
    assert unlabelled["win_rate_lo"] == pytest.approx(11 / (11 + z2))  # Wilson at p = 1
    one = rows["one-case"]
    assert (one["n_cases"], one["win_rate_lo"], one["win_rate_hi"]) == (
        1,
        pytest.approx(1 / (1 + z2)),
        1.0,
    )
    assert (ineligible["n_cases"], ineligible["win_rate_lo"], ineligible["win_rate_hi"]) == (
        0,
        None,
        None,
    )


def _prefer(
    con: duckdb.DuckDBPyConnection, comparison: str, case: str, prefer: str, run: str = "r"
) -> None:
    con.execute(
        "INSERT INTO labels (run_id, kind, comparison, case_id, prefer) "
        "VALUES (?, 'pairwise', ?, ?, ?)",
        [run, comparison, case, prefer],
    )


def _confusion(
    con: duckdb.DuckDBPyConnection, comparison: str, cells: tuple[int, int, int, int], flips: int
) -> None:
    """Labelled cases by (human, judge): (candidate, candidate), (candidate, baseline),
    (baseline, candidate), (baseline, baseline) in these numbers; the first ``flips`` flipped."""
    pairs = [("candidate", "candidate"), ("candidate", "baseline")]
    pairs += [("baseline", "candidate"), ("baseline", "baseline")]
    i = 0
    for (human, judge), count in zip(pairs, cells, strict=True):
        for _ in range(count):
            _judged(con, comparison, f"k{i}", judge, flipped=i < flips)
            _prefer(con, comparison, f"k{i}", human)
            i += 1


def test_pairwise_counts_majority_verdicts_kappa_bands_and_headline_boundaries(
    tmp_path: Path,
) -> None:
    con = _warehouse(tmp_path)
    # 'a': k1 repeats candidate, candidate, baseline -> judge candidate (2 of 3), case win 2/3;
    # k2 candidate, baseline -> a tie between the top counts: judge 'tie', win 1/2; k3 baseline
    # (candidate not ok) -> 0; k4 tie, flipped -> 0; k5 two ineligible pairs (baseline, tie),
    # baseline not ok. Cost 0.25 a pair.
    for repeat, verdict in enumerate(["candidate", "candidate", "baseline"]):
        _judged(con, "a", "k1", verdict, repeat=repeat, cost=0.25)
    for repeat, verdict in enumerate(["candidate", "baseline"]):
        _judged(con, "a", "k2", verdict, repeat=repeat, cost=0.25)
    _judged(con, "a", "k3", "baseline", candidate_ok=False, cost=0.25)
    _judged(con, "a", "k4", "tie", flipped=True, cost=0.25)
    for repeat, verdict in enumerate(["baseline", "tie"]):
        _judged(
            con, "a", "k5", verdict, repeat=repeat, eligible=False, baseline_ok=False, cost=0.25
        )
    # Labels (human, judge): k1 (candidate, candidate), k2 (tie, tie), k3 (candidate,
    # baseline), k4 (candidate, tie): n 4, agree 2 -> 0.5; human candidate 3, tie 1 -> base
    # rate 3/4; judge candidate 1, tie 2, baseline 1 -> chance (3*1 + 1*2) / 16 = 5/16;
    # kappa (1/2 - 5/16) / (11/16) = 3/11 ~ 0.27: 'fair'.
    for case, prefer in (("k1", "candidate"), ("k2", "tie"), ("k3", "candidate")):
        _prefer(con, "a", case, prefer)
    _prefer(con, "a", "k4", "candidate")
    # 'b': no labels of run r (run s labels b/k1), no costs.
    _judged(con, "b", "k1", "candidate")
    _judged(con, "b", "k2", "baseline")
    _prefer(con, "b", "k1", "baseline", run="s")
    # 'c': only an ineligible pair: no cases, no win rate, no flip rate.
    _judged(con, "c", "k1", "candidate", eligible=False)
    # 'd': one case, judge candidate, human tie: no category in common, so no chance term
    # (0): kappa (0 - 0) / 1 = 0 exactly, 'slight'. One case: win rate 1, interval on n 1.
    _judged(con, "d", "k1", "candidate")
    _prefer(con, "d", "k1", "tie")
    # 'e': 11 cases all won: the interval's upper end rounds to 1.0000000000000002, kept at 1.
    for i in range(11):
        _judged(con, "e", f"k{i}", "candidate")
    # Kappa exactly on each band's upper bound (in binary floating point too), and just
    # above the next bound down:
    #   k20 (1, 0, 2, 1): agree 2/4, chance 6/16 -> 0.2 'slight'
    #   k40 (1, 0, 2, 6): agree 7/9, chance 51/81 -> 0.4 'fair'
    #   k50 (1, 1, 0, 2): agree 3/4, chance 8/16 -> 0.5 'moderate', 1 flip of 4 = 0.25
    #   k60 (1, 0, 1, 6): agree 7/8, chance 38/64 -> 0.6 'moderate'
    #   k62 (2, 0, 1, 2): agree 4/5, chance 13/25 -> 8/13 ~ 0.615 'substantial'
    #   k80 (4, 0, 1, 5): agree 9/10, chance 50/100 -> 0.8 'substantial'
    #   k81 (4, 0, 1, 6): agree 10/11, chance 65/121 -> 48/59 ~ 0.814 'almost perfect'
    bands = {
        "k20": (1, 0, 2, 1),
        "k40": (1, 0, 2, 6),
        "k50": (1, 1, 0, 2),
        "k60": (1, 0, 1, 6),
        "k62": (2, 0, 1, 2),
        "k80": (4, 0, 1, 5),
        "k81": (4, 0, 1, 6),
    }
    for name, cells in bands.items():
        _confusion(con, name, cells, flips=1 if name == "k50" else 0)
    # Calibrated: n_labels >= 4 and kappa >= 0.5, both met exactly by k50; flagged: flip rate
    # over 0.25, k50's is exactly 0.25 (not flagged, so its headline stands).
    got = {
        r["comparison"]: r
        for r in queries.run_query(
            con, "pairwise", run_id="r", min_kappa=0.5, min_labels=4, max_flip_rate=0.25
        ).to_pylist()
    }
    assert list(got) == ["a", "b", "c", "d", "e", *bands]
    a = got["a"]
    assert (a["baseline"], a["candidate"], a["judge"], a["judge_model"]) == (
        "v × a",
        "v × b",
        "j",
        "jm",
    )
    counts = ("n_pairs", "n", "n_cases", "n_excluded", "candidate_wins", "baseline_wins", "ties")
    assert [a[k] for k in counts] == [9, 7, 4, 2, 3, 3, 1]
    assert (a["n_labels"], a["agreement"], a["base_rate"]) == (4, 0.5, 0.75)
    assert a["chance_agreement"] == 5 / 16
    assert math.isclose(a["kappa"], 3 / 11)
    assert a["kappa_band"] == "fair"
    assert math.isclose(a["win_rate"], (2 / 3 + 1 / 2) / 4)
    assert (a["n_flipped"], a["flip_rate"]) == (1, 1 / 7)
    assert (a["baseline_pass_rate"], a["candidate_pass_rate"]) == (7 / 9, 8 / 9)
    assert a["judge_cost_usd"] == 9 * 0.25
    b = got["b"]
    assert (b["n_labels"], b["kappa"], b["kappa_band"], b["judge_cost_usd"]) == (
        0,
        None,
        "undefined",
        0,
    )
    assert (b["n_pairs"], b["n_cases"], b["win_rate"]) == (2, 2, 0.5)
    c = got["c"]
    assert (c["n_pairs"], c["n"], c["n_cases"], c["n_excluded"]) == (1, 0, 0, 1)
    assert (c["win_rate"], c["win_rate_lo"], c["win_rate_hi"], c["flip_rate"]) == (None,) * 4
    assert (c["flip_flagged"], c["calibrated"], c["headline_eligible"]) == (False,) * 3
    d = got["d"]
    assert (d["n_labels"], d["agreement"], d["chance_agreement"], d["kappa"]) == (1, 0, 0, 0)
    assert d["kappa_band"] == "slight"
    # Wilson on 1 of 1: lo = (1 + z^2/2 - z * sqrt(z^2/4)) / (1 + z^2) = 1 / (1 + z^2)
    z = 1.959963984540054
    assert math.isclose(d["win_rate_lo"], 1 / (1 + z * z))
    assert d["win_rate_hi"] == 1.0
    assert (got["e"]["n_cases"], got["e"]["win_rate"], got["e"]["win_rate_hi"]) == (11, 1.0, 1.0)
    assert [
        (got[k]["kappa"], got[k]["kappa_band"]) for k in ("k20", "k40", "k50", "k60", "k80")
    ] == [
        (0.2, "slight"),
        (0.4, "fair"),
        (0.5, "moderate"),
        (0.6, "moderate"),
        (0.8, "substantial"),
    ]
    assert math.isclose(got["k62"]["kappa"], 8 / 13)
    assert math.isclose(got["k81"]["kappa"], 48 / 59)
    assert (got["k62"]["kappa_band"], got["k81"]["kappa_band"]) == ("substantial", "almost perfect")
    flags = ("n_labels", "flip_rate", "calibrated", "flip_flagged", "headline_eligible")
    assert {k: tuple(r[f] for f in flags) for k, r in got.items()} == {
        "a": (4, 1 / 7, False, False, False),
        "b": (0, 0.0, False, False, False),
        "c": (0, None, False, False, False),
        "d": (1, 0.0, False, False, False),
        "e": (0, 0.0, False, False, False),
        "k20": (4, 0.0, False, False, False),
        "k40": (9, 0.0, False, False, False),
        "k50": (4, 0.25, True, False, True),
        "k60": (8, 0.0, True, False, True),
        "k62": (5, 0.0, True, False, True),
        "k80": (10, 0.0, True, False, True),
        "k81": (11, 0.0, True, False, True),
    }


def _fixture_warehouse(
    tmp_path: Path, pairs: list[tuple[str, str, bool, bool]]
) -> duckdb.DuckDBPyConnection:
    """pairs: (human label, judge verdict, eligible, flipped) per case."""
    path = tmp_path / "w.duckdb"
    with connect.write_connection(path):
        pass
    con = duckdb.connect(str(path))
    for i, (human, verdict, eligible, flipped) in enumerate(pairs):
        con.execute(
            "INSERT INTO pairs (run_id, comparison, case_id, repeat, baseline_variant, baseline_model, "
            "candidate_variant, candidate_model, judge, judge_model, verdict, flipped, eligible, "
            "baseline_ok, candidate_ok, created_at) VALUES ('r', 'c', ?, 0, 'v', 'a', 'v', 'b', 'j', 'jm', ?, ?, ?, "
            "true, ?, now())",
            [f"k{i}", verdict, flipped, eligible, eligible],
        )
        if human:
            con.execute(
                "INSERT INTO labels (run_id, kind, comparison, case_id, prefer, label, note) "
                "VALUES ('r', 'pairwise', 'c', ?, ?, NULL, NULL)",
                [f"k{i}", human],
            )
    return con


def test_kappa_matches_the_textbook_example(tmp_path: Path) -> None:
    # 50 items: human/judge candidate-candidate 20, candidate-baseline 5, baseline-candidate 10,
    # baseline-baseline 15 -> po = 0.70, pe = 0.5*0.6 + 0.5*0.4 = 0.50, kappa = 0.40.
    rows = (
        [("candidate", "candidate", True, False)] * 20
        + [("candidate", "baseline", True, False)] * 5
        + [("baseline", "candidate", True, False)] * 10
        + [("baseline", "baseline", True, False)] * 15
    )
    con = _fixture_warehouse(tmp_path, rows)
    row = queries.run_query(
        con, "pairwise", run_id="r", min_kappa=0.6, min_labels=20, max_flip_rate=0.3
    ).to_pylist()[0]
    assert row["n_labels"] == 50
    assert row["agreement"] == pytest.approx(0.70)
    assert row["chance_agreement"] == pytest.approx(0.50)
    assert row["kappa"] == pytest.approx(0.40)
    assert row["kappa_band"] == "fair"
    assert row["base_rate"] == pytest.approx(0.5)
    assert row["calibrated"] is False and row["headline_eligible"] is False
    confusion = {
        (r["human"], r["judge"]): r["n"]
        for r in queries.run_query(con, "calibration", run_id="r").to_pylist()
    }
    assert len(confusion) == 9
    assert (
        confusion[("candidate", "candidate")] == 20 and confusion[("baseline", "candidate")] == 10
    )
    assert confusion[("tie", "tie")] == 0


def _cohen_kappa(pairs: list[tuple[str, str]]) -> float:
    """An independent implementation (for checking the SQL): Cohen (1960)."""
    n = len(pairs)
    labels = sorted({x for p in pairs for x in p})
    po = sum(a == b for a, b in pairs) / n
    pe = sum(
        (sum(a == k for a, _ in pairs) / n) * (sum(b == k for _, b in pairs) / n) for k in labels
    )
    return (po - pe) / (1 - pe)


def test_win_rate_interval_flip_rate_and_three_class_kappa(tmp_path: Path) -> None:
    import itertools
    import random

    rng = random.Random(3)
    classes = ["baseline", "candidate", "tie"]
    rows = []
    for _ in range(60):
        human = rng.choice(classes)
        judge = human if rng.random() < 0.6 else rng.choice(classes)
        rows.append((human, judge, True, rng.random() < 0.2))
    rows += [(None, "candidate", False, False)] * 4  # excluded, unlabelled
    con = _fixture_warehouse(tmp_path, rows)
    row = queries.run_query(
        con, "pairwise", run_id="r", min_kappa=0.2, min_labels=20, max_flip_rate=0.3
    ).to_pylist()[0]
    labelled = [(h, j) for h, j, e, _ in rows if h]
    assert row["kappa"] == pytest.approx(_cohen_kappa(labelled))
    wins = sum(1 for _, j, e, _ in rows if e and j == "candidate")
    n = 60
    assert (row["n"], row["n_excluded"], row["candidate_wins"]) == (n, 4, wins)
    p, z = wins / n, 1.959963984540054
    centre, half = (
        (p + z * z / (2 * n)) / (1 + z * z / n),
        z * (p * (1 - p) / n + z * z / (4 * n * n)) ** 0.5 / (1 + z * z / n),
    )
    assert row["win_rate_lo"] == pytest.approx(centre - half) and row[
        "win_rate_hi"
    ] == pytest.approx(centre + half)
    assert row["flip_rate"] == pytest.approx(sum(1 for *_, f in rows[:60] if f) / 60)
    del itertools


def test_undefined_kappa_is_not_a_headline(tmp_path: Path) -> None:
    con = _fixture_warehouse(tmp_path, [("tie", "tie", True, False)] * 25)  # chance agreement 1
    row = queries.run_query(
        con, "pairwise", run_id="r", min_kappa=0.6, min_labels=20, max_flip_rate=0.3
    ).to_pylist()[0]
    assert (
        row["kappa"] is None
        and row["kappa_band"] == "undefined"
        and row["headline_eligible"] is False
    )


CLASSES = ["baseline", "candidate", "tie"]


def add_pairs(store: Warehouse, verdicts: dict[str, list[str]], labels: dict[str, str]) -> None:
    with write_connection(store.path) as con:
        for case, vs in verdicts.items():
            for r, v in enumerate(vs):
                con.execute(
                    "INSERT INTO pairs (run_id, comparison, case_id, repeat, baseline_variant, "
                    "baseline_model, candidate_variant, candidate_model, judge, judge_model, "
                    "verdict, flipped, eligible, baseline_ok, candidate_ok, metadata, created_at) "
                    "VALUES ('P', 'cmp', ?, ?, 'v', 'small', 'v', 'large', 'j', 'jm', ?, false, "
                    "true, true, true, ?, ?)",
                    [case, r, v, json.dumps({"topic": case[-1]}), NOW],
                )
        for case, prefer in labels.items():
            con.execute(
                "INSERT INTO labels (run_id, kind, comparison, case_id, prefer) "
                "VALUES ('P', 'pairwise', 'cmp', ?, ?)",
                [case, prefer],
            )


def majority(vs: list[str]) -> str:
    counts = {v: vs.count(v) for v in set(vs)}
    top = max(counts.values())
    winners = [v for v, c in counts.items() if c == top]
    return winners[0] if len(winners) == 1 else "tie"


def test_kappa_and_confusion_count_each_label_once(tmp_path):
    from sklearn.metrics import cohen_kappa_score, confusion_matrix

    rng = random.Random(5)
    store = warehouse_with(tmp_path, {"P": rows_of({"x": [1]})})
    verdicts = {f"q{i}": [rng.choice(CLASSES) for _ in range(3)] for i in range(30)}
    labels = {c: rng.choice(CLASSES) for c in list(verdicts)[:17]}
    add_pairs(store, verdicts, labels)
    (row,) = store.query(
        "pairwise", run_id="P", min_kappa=0.0, min_labels=20, max_flip_rate=1.0
    ).to_pylist()
    human = [labels[c] for c in labels]
    judged = [majority(verdicts[c]) for c in labels]
    assert row["n_labels"] == 17  # not 51 (17 labels x 3 repeats)
    assert row["calibrated"] is False  # 17 < min_labels 20, whatever the repeats
    assert row["kappa"] == pytest.approx(cohen_kappa_score(human, judged), abs=1e-12)
    matrix = confusion_matrix(human, judged, labels=CLASSES)
    cells = {
        (r["human"], r["judge"]): r["n"] for r in store.query("calibration", run_id="P").to_pylist()
    }
    assert [[cells[(h, j)] for j in CLASSES] for h in CLASSES] == matrix.tolist()
    slices = store.query("calibration_slices", run_id="P", key="topic").to_pylist()
    assert sum(s["n"] for s in slices) == 17


def test_win_rate_takes_the_case_as_the_unit(tmp_path):
    # 14 wins of 36 cases: [24.8%, 55.1%] once, and the same when every pair is repeated 3x
    store = warehouse_with(tmp_path, {"P": rows_of({"x": [1]})})
    verdicts = {f"q{i}": ["candidate" if i < 14 else "baseline"] * 3 for i in range(36)}
    add_pairs(store, verdicts, {})
    (row,) = store.query(
        "pairwise", run_id="P", min_kappa=0.6, min_labels=20, max_flip_rate=0.3
    ).to_pylist()
    assert (row["n"], row["n_cases"]) == (108, 36)
    lo, hi = statsmodels_wilson(14, 36)
    assert (row["win_rate_lo"], row["win_rate_hi"]) == pytest.approx((lo, hi), abs=1e-12)
    assert row["win_rate_lo"] == pytest.approx(0.248, abs=5e-4)
